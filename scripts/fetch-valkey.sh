#!/usr/bin/env bash
# Fetches Debian's valkey-server 8.0 (from bookworm-backports; the server binary is in
# valkey-tools) into target/valkey, for the test of
# what only newer servers do (tests/newer_servers.rs): Valkey 8.0 has Redis 7.2's module API and
# Redis 7.4's RedisModule_AddACLCategory. Nothing is installed on the system: apt runs with its
# own lists and cache under target/apt, and the package is only unpacked.
set -euo pipefail
cd "$(dirname "$0")/.."

root=target/valkey
apt_dir="$PWD/target/apt"
mkdir -p "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial" "$root"
echo "deb http://deb.debian.org/debian bookworm-backports main" > "$apt_dir/sources.list"
options=(
  -o "Dir::Etc::SourceList=$apt_dir/sources.list"
  -o "Dir::Etc::SourceParts=/dev/null"
  -o "Dir::State::Lists=$apt_dir/lists"
  -o "Dir::Cache=$apt_dir/cache"
  -o "APT::Sandbox::User=$(id -un)"
)
apt-get -qq "${options[@]}" update
cd "$apt_dir"
apt-get -qq "${options[@]}" download valkey-server valkey-tools
cd - >/dev/null
for deb in "$apt_dir"/valkey-server_*.deb "$apt_dir"/valkey-tools_*.deb; do
  dpkg-deb -x "$deb" "$root"
done
"$root/usr/bin/valkey-server" --version
