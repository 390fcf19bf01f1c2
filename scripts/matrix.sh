#!/usr/bin/env bash
# The server matrix of `make test`: the black-box suites that touch server behaviour, run again on
# each newer server (the whole suite already ran on Debian's Redis 7.0): Redis 8.2.3 (jemalloc),
# Valkey 8.0 (Debian's backport, jemalloc) and Valkey 9.1.2 (libc malloc). One server after the
# other (about a minute and a half each on 2 cores): side by side, the timing tests of windowed
# filters shared two cores six ways. MATRIX_PARALLEL=1 runs them side by side. Each server has its
# own log in target/matrix/; a server's log is printed when it failed.
# MATRIX_SERVERS (paths, space-separated) chooses other servers; MATRIX_SUITES other suites.
# Needs the test binaries built (`cargo test --no-run`) and the servers unpacked
# (scripts/fetch-servers.sh, scripts/fetch-valkey.sh).
set -uo pipefail
cd "$(dirname "$0")/.."

servers=(${MATRIX_SERVERS:-target/servers/redis-8.2.3/redis-server target/valkey/usr/bin/valkey-server target/servers/valkey-9.1.2/valkey-server})
suites=(${MATRIX_SUITES:-early_hash cuckoo cuckoo_hint cuckoo_limits cuckoo_persistence cuckoo_redisbloom cuckoo_hostile madd_mexists insert info debug scaling configs wrongtype_and_arity persistence replication loadchunk_restoring window window_copies window_clock window_dumps window_idle window_upkeep layout cluster acl redisbloom redisbloom_older command_docs crash conflicts allocators huge_pages slot_migration})
args=()
for suite in "${suites[@]}"; do args+=(--test "$suite"); done

mkdir -p target/matrix
logs=()
pids=()
statuses=()
for server in "${servers[@]}"; do
  # Absolute, but not resolved: Debian's valkey-server is a link that acts by its name.
  binary=$(cd "$(dirname "$server")" && pwd)/$(basename "$server")
  # redis-8.2.3, valkey-9.1.2: product and version, from --version.
  log=target/matrix/$("$binary" --version | awk '{print tolower($1) "-" substr($3, 3)}').log
  logs+=("$log")
  run() {
    echo "== $("$binary" --version)"
    REDIS_SERVER=$binary cargo test --workspace --no-fail-fast "${args[@]}" 2>&1
  }
  if [ "${MATRIX_PARALLEL:-0}" = 1 ]; then
    run > "$log" &
    pids+=($!)
  else
    run > "$log"
    statuses+=($?)
  fi
done
for pid in "${pids[@]}"; do
  wait "$pid"
  statuses+=($?)
done

status=0
for index in "${!logs[@]}"; do
  if [ "${statuses[$index]}" = 0 ]; then
    echo "matrix: $(head -1 "${logs[$index]}" | cut -c4-): every suite passed (${logs[$index]})"
  else
    status=1
    cat "${logs[$index]}"
    echo "matrix: $(head -1 "${logs[$index]}" | cut -c4-): FAILED (log above, and in ${logs[$index]})"
  fi
done
exit $status
