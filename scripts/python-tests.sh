#!/usr/bin/env bash
# The Python package's tests (python/tests): the venv target/pyvenv from the pinned
# python/tests/requirements.txt, the package installed into it, then pytest in python/. Each test
# starts its own redis-server with the module: $REDIS_BF_MODULE, by default
# target/release/libredis_bf.so. Extra arguments go to pytest, paths relative to python/
# (scripts/python-tests.sh tests/test_crawl.py -k resume).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/python-venv.sh target/pyvenv python/tests/requirements.txt
export REDIS_BF_MODULE=${REDIS_BF_MODULE:-$PWD/target/release/libredis_bf.so}
export PYTHONDONTWRITEBYTECODE=1
cd python
exec ../target/pyvenv/bin/python -m pytest -p no:cacheprovider -q "$@"
