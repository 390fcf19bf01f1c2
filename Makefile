# redis-bf: build, run and test the Bloom filter module.
#
#   make run    build the module and start redis-server with it on port 6379 (PORT=... to change)
#   make test   everything CI checks: formatting, clippy, unit and integration tests
#   make build  build target/release/libredis_bf.so
#   make dist   package the stripped module with its README, license and example config
#   make clean  remove build output

PORT ?= 6379
MODULE := target/release/libredis_bf.so
DEBIAN_PACKAGES := redis-server redis-tools libclang-dev build-essential python3-venv
# Client libraries the compatibility tests drive, pinned.
VENV := target/venv
PY_CLIENTS := redis==8.1.0
# node-redis, pinned with its whole tree in tests/clients/package-lock.json.
NODE_DIR := target/node
VALKEY_DIR := target/valkey

.PHONY: all deps build dist run test lint unit integration clients bench fuzz clean

all: build

# Installs the Debian packages that are missing when it can (as root), otherwise names them.
deps:
	@missing=""; \
	if command -v dpkg >/dev/null 2>&1; then \
	  for pkg in $(DEBIAN_PACKAGES); do \
	    dpkg -s $$pkg >/dev/null 2>&1 || missing="$$missing $$pkg"; \
	  done; \
	else \
	  command -v redis-server >/dev/null 2>&1 || missing="$$missing redis-server"; \
	fi; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "Installing:$$missing"; \
	    DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
	    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null || exit 1; \
	  else \
	    echo "Missing packages:$$missing"; \
	    echo "Install them with: sudo apt-get install -y$$missing"; \
	    exit 1; \
	  fi; \
	fi; \
	command -v cargo >/dev/null 2>&1 || { echo "cargo is missing: install Rust from https://rustup.rs"; exit 1; }
	@# Node.js (for the node-redis tests): any install will do, Debian's if there is none.
	@if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then \
	  if [ "$$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "Installing: nodejs npm"; \
	    DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
	    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null || exit 1; \
	  else \
	    echo "Node.js is missing: install it with: sudo apt-get install -y nodejs npm"; exit 1; \
	  fi; \
	fi

build: deps
	cargo build --release

$(MODULE): build

# target/dist/redis-bf-<version>-linux-<arch>.tar.gz (and its .sha256): see scripts/dist.sh.
dist: build
	scripts/dist.sh target/dist

# Starts redis-server in the foreground with the module (Ctrl-C stops it). Data goes to target/run.
run: build
	@mkdir -p target/run
	redis-server redis.conf.example --port $(PORT) --dir $(CURDIR)/target/run \
	  --loadmodule $(CURDIR)/$(MODULE)

lint: deps
	cargo fmt --all -- --check
	cargo clippy --workspace --all-targets -- -D warnings

unit: deps
	cargo test --workspace --lib

# A Python virtual environment with the pinned client libraries (for tests/clients.rs).
$(VENV)/.installed: Makefile
	python3 -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --disable-pip-version-check $(PY_CLIENTS)
	touch $@

# node-redis under target/node, exactly as locked (for tests/clients.rs).
$(NODE_DIR)/.installed: tests/clients/package.json tests/clients/package-lock.json
	mkdir -p $(NODE_DIR)
	cp tests/clients/package.json tests/clients/package-lock.json $(NODE_DIR)/
	cd $(NODE_DIR) && npm ci --no-audit --no-fund --loglevel=error
	touch $@

# Valkey 8.0 (Redis 7.2's module API and 7.4's module ACL categories) under target/valkey, for
# tests/newer_servers.rs; unpacked from Debian's bookworm-backports, not installed.
$(VALKEY_DIR)/.installed: scripts/fetch-valkey.sh
	scripts/fetch-valkey.sh
	touch $@

clients: $(VENV)/.installed $(NODE_DIR)/.installed $(VALKEY_DIR)/.installed

integration: build clients
	cargo test --workspace --tests

test: lint build clients
	cargo test --workspace

# Benchmarks (never part of `make test`): the core against the bloomfilter crate (criterion), then
# the server end to end against SET/GET on the same server. One table on stdout; the report in
# target/bench/report.json and target/bench/report.svg.
bench: build
	cargo bench -p bf-filter --bench core
	cargo bench -p redis-bf --bench e2e

# Fuzzing (never part of `make test`): each target for FUZZ_SECONDS (default 60). The corpora
# live in fuzz/corpus and are replayed by `make test`; a crash is written to fuzz/artifacts: copy it
# to fuzz/regressions/<target>/ so that `make test` replays it too, then fix it.
FUZZ_SECONDS ?= 60
FUZZ_TARGETS := arguments chunks stored redisbloom
fuzz: deps
	@command -v cargo-fuzz >/dev/null 2>&1 || cargo install cargo-fuzz --locked
	cd fuzz && for target in $(FUZZ_TARGETS); do \
	  RUSTC_BOOTSTRAP=1 cargo fuzz run $$target -- -max_total_time=$(FUZZ_SECONDS) -rss_limit_mb=2048 || exit 1; \
	done

clean:
	cargo clean
