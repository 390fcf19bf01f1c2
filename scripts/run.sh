#!/usr/bin/env bash
# `make run`: starts redis-server in the foreground with redis.conf.example and the built module,
# with its data in target/run. The port is $PORT if set (it must be free), otherwise 6379, or, where
# something already listens there (on Debian and Ubuntu, installing redis-server starts the
# packaged server on 6379), the next free port: the output names it. The server reads a copy of
# redis.conf.example, made in target/run the first time, so that CONFIG REWRITE writes there and
# never into the tracked file; a copy that already names the module (a rewrite wrote its
# loadmodule line) loads it from there, not twice. (BASE_PORT replaces 6379 and RUN_DIR target/run,
# for the test of this script.)
set -euo pipefail
cd "$(dirname "$0")/.."
run_dir=${RUN_DIR:-$PWD/target/run}

module=$PWD/target/release/libredis_bf.so
[ -f "$module" ] || { echo "$module is missing: build it first (make build)" >&2; exit 1; }

# True if something accepts connections on 127.0.0.1:$1.
taken() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

if [ -n "${PORT:-}" ]; then
  if ! [[ "$PORT" =~ ^[0-9]+$ ]] || [ "$PORT" -lt 1 ] || [ "$PORT" -gt 65535 ]; then
    echo "PORT=$PORT is not a port: give a number from 1 to 65535, or leave PORT unset." >&2
    exit 1
  fi
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

mkdir -p "$run_dir"
config=$run_dir/redis.conf
if [ ! -f "$config" ]; then
  cp redis.conf.example "$config"
fi
load=(--loadmodule "$module")
if grep -q '^loadmodule ' "$config"; then
  load=()
fi
echo "Starting redis-server with redis-bf on 127.0.0.1:$port (Ctrl-C stops it)."
echo "Configuration: $config (a copy of redis.conf.example; CONFIG REWRITE writes there, delete it to start again from the example)."
echo "Try it from another terminal: redis-cli -p $port BF.ADD seen hello"
exec redis-server "$config" --port "$port" --dir "$run_dir" "${load[@]}"
