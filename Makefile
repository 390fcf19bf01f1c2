# redis-bf: build, run and test the Bloom filter module.
#
#   make run    build the module and start redis-server with it on port 6379 (PORT=... to change)
#   make test   everything CI checks: formatting, clippy, unit and integration tests
#   make build  build target/release/libredis_bf.so
#   make clean  remove build output

PORT ?= 6379
MODULE := target/release/libredis_bf.so
DEBIAN_PACKAGES := redis-server redis-tools libclang-dev build-essential python3-venv
# Client libraries the compatibility tests drive, pinned.
VENV := target/venv
PY_CLIENTS := redis==8.1.0

.PHONY: all deps build run test lint unit integration clients bench clean

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

build: deps
	cargo build --release

$(MODULE): build

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

clients: $(VENV)/.installed

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

clean:
	cargo clean
