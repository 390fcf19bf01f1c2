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

command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1 || {
  echo "node-tests: node and npm are needed (make deps installs Debian's nodejs and npm)"
  exit 1
}
node -e 'process.exit(Number(process.versions.node.split(".")[0]) >= 20 ? 0 : 1)' || {
  echo "node-tests: Node.js $(node --version) is older than the package's engines (>=20; node-redis 6 needs 20 too)"
  exit 1
}

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
