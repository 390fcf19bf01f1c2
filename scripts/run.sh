#!/usr/bin/env bash
# `make run`: starts redis-server in the foreground with redis.conf.example and the built module,
# with its data in target/run. The port is $PORT if set (it must be free), otherwise 6379, or, where
# something already listens there (on Debian and Ubuntu, installing redis-server starts the
# packaged server on 6379), the next free port: the output names it. The server reads a copy of
# redis.conf.example, made in target/run the first time, so that CONFIG REWRITE writes there and
# never into the tracked file. The module is always this checkout's build: a loadmodule line of
# libredis_bf.so in the copy (CONFIG REWRITE writes one, with the path of the checkout it ran in)
# is pointed at it on every run, its arguments kept, and where there is none the module is loaded
# from the command line; never twice, and never a stale file from a checkout that moved. (BASE_PORT
# replaces 6379 and RUN_DIR target/run, for the test of this script.)
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
# The copy's loadmodule lines of this module now name this checkout's file. Redis reads a quoted
# path whole, so a checkout under a directory with spaces loads too.
load=(--loadmodule "$module")
rewritten=$(mktemp "$run_dir/redis.conf.XXXXXX")
module_line='^[[:space:]]*loadmodule[[:space:]]+("[^"]*libredis_bf\.so"|[^[:space:]]*libredis_bf\.so)([[:space:]].*)?$'
while IFS= read -r line || [ -n "$line" ]; do
  if [[ "$line" =~ $module_line ]]; then
    line="loadmodule \"$module\"${BASH_REMATCH[2]}"
    load=()
  fi
  printf '%s\n' "$line"
done < "$config" > "$rewritten"
mv "$rewritten" "$config"
echo "Starting redis-server with redis-bf on 127.0.0.1:$port (Ctrl-C stops it)."
echo "Configuration: $config (a copy of redis.conf.example; CONFIG REWRITE writes there, delete it to start again from the example)."
echo "Module: $module (this checkout's build, loaded on every run whatever path the copy named)."
echo "Try it from another terminal: redis-cli -p $port BF.ADD seen hello"
exec redis-server "$config" --port "$port" --dir "$run_dir" "${load[@]}"
