#!/usr/bin/env bash
# `make run`: starts redis-server in the foreground with redis.conf.example and the built module,
# with its data in target/run. The port is $PORT if set (it must be free), otherwise 6379, or, where
# something already listens there (on Debian and Ubuntu, installing redis-server starts the
# packaged server on 6379), the next free port: the output names it. (BASE_PORT replaces 6379, for
# the test of this script.)
set -euo pipefail
cd "$(dirname "$0")/.."

module=$PWD/target/release/libredis_bf.so
[ -f "$module" ] || { echo "$module is missing: build it first (make build)" >&2; exit 1; }

# True if something accepts connections on 127.0.0.1:$1.
taken() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

if [ -n "${PORT:-}" ]; then
  port=$PORT
  if taken "$port"; then
    echo "Port $port is taken: choose another (PORT=... make run), or leave PORT unset." >&2
    exit 1
  fi
else
  base=${BASE_PORT:-6379}
  port=$base
  while taken "$port"; do
    port=$((port + 1))
    [ "$port" -le $((base + 100)) ] || { echo "No free port from $base to $((base + 100))." >&2; exit 1; }
  done
  if [ "$port" != "$base" ]; then
    echo "Port $base is taken (by the packaged redis-server, most likely): using port $port."
  fi
fi

mkdir -p target/run
echo "Starting redis-server with redis-bf on 127.0.0.1:$port (Ctrl-C stops it)."
echo "Try it from another terminal: redis-cli -p $port BF.ADD seen hello"
exec redis-server redis.conf.example --port "$port" --dir "$PWD/target/run" \
  --loadmodule "$module"
