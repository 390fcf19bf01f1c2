#!/usr/bin/env bash
# The crawler benchmark of the Python package (python/bench/bench.py; never part of make test):
# one real Scrapy crawl of a 5,000-page local site per dupefilter (scrapy-redis's set,
# scrapy-redis-bloomfilter, a naive BF.ADD one before and after BF.RESERVE, redis_bf's), then the
# defaults filled for real to 10M and 100M items. About 20 minutes on two cores; needs about 1 GiB
# of memory for Redis. The venv target/pyvenv-bench adds scrapy-redis-bloomfilter to the test pins.
# Module: $REDIS_BF_MODULE, by default target/release/libredis_bf.so. Arguments go to bench.py
# (--pages, --runs, --sizes).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/python-venv.sh target/pyvenv-bench python/bench/requirements.txt
export REDIS_BF_MODULE=${REDIS_BF_MODULE:-$PWD/target/release/libredis_bf.so}
export PYTHONDONTWRITEBYTECODE=1
exec target/pyvenv-bench/bin/python python/bench/bench.py "$@"
