#!/usr/bin/env bash
# Fetches what the test of the aarch64 tarball (tests/dist.rs) runs the module in, into
# target/arm64, without installing anything on the system:
#   target/arm64/sysroot      Debian bookworm's arm64 redis-server and the libraries it loads
#   target/arm64/qemu         Debian's qemu-user-static for this machine (amd64), which runs
#                             arm64 programs on x86_64
#   target/arm64/redis-server a wrapper: runs the arm64 redis-server under qemu with the sysroot
# apt runs with its own lists and cache under target/apt-arm64 (apart from fetch-valkey.sh's
# target/apt), and the packages are only unpacked. Every library the server and its libraries
# name (readelf -d, NEEDED) must be in the sysroot: the script fails naming any that is not.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "$(uname -m)" != "x86_64" ]; then
  echo "fetch-arm64.sh fetches qemu for an x86_64 machine; this one is $(uname -m)" >&2
  exit 1
fi

root=$PWD/target/arm64
sysroot=$root/sysroot
apt_dir=$PWD/target/apt-arm64
# The server and its libraries (Depends of redis-tools and of those libraries that redis-server
# or the module loads).
arm64_packages=(
  redis-server redis-tools
  libc6 libatomic1 libgcc-s1 libstdc++6 libjemalloc2 liblua5.1-0 liblzf1 libssl3 libsystemd0
  libcap2 libgcrypt20 libgpg-error0 liblz4-1 liblzma5 libzstd1
)

rm -rf "$root"
mkdir -p "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial" "$sysroot" "$root/qemu"
{
  for suite in bookworm bookworm-updates; do
    echo "deb [arch=amd64,arm64] http://deb.debian.org/debian $suite main"
  done
  echo "deb [arch=amd64,arm64] http://deb.debian.org/debian-security bookworm-security main"
} > "$apt_dir/sources.list"
options=(
  -o "Dir::Etc::SourceList=$apt_dir/sources.list"
  -o "Dir::Etc::SourceParts=/dev/null"
  -o "Dir::State::Lists=$apt_dir/lists"
  -o "Dir::Cache=$apt_dir/cache"
  -o "APT::Architecture=amd64"
  -o "APT::Architectures=amd64,arm64"
  -o "APT::Sandbox::User=$(id -un)"
)
apt-get -qq "${options[@]}" update
debs=$apt_dir/debs
rm -rf "$debs"
mkdir -p "$debs"
(
  cd "$debs"
  apt-get -qq "${options[@]}" download "${arm64_packages[@]/%/:arm64}" qemu-user-static:amd64
)
for deb in "$debs"/*_arm64.deb; do
  dpkg-deb -x "$deb" "$sysroot"
done
dpkg-deb -x "$debs"/qemu-user-static_*_amd64.deb "$root/qemu"
rm -rf "$debs"
qemu=$root/qemu/usr/bin/qemu-aarch64-static
[ -x "$qemu" ] || { echo "qemu-user-static has no $qemu" >&2; exit 1; }
# Only the arm64 emulator is used: the others are most of the package's 400 MB.
find "$root/qemu/usr/bin" -type f ! -name qemu-aarch64-static -delete

# Every NEEDED library of the server, and of those libraries, recursively, is in the sysroot.
lib_dirs=(lib/aarch64-linux-gnu usr/lib/aarch64-linux-gnu lib usr/lib)
find_lib() {
  local dir
  for dir in "${lib_dirs[@]}"; do
    if [ -e "$sysroot/$dir/$1" ]; then
      echo "$sysroot/$dir/$1"
      return 0
    fi
  done
  return 1
}
server=$sysroot/usr/bin/redis-server
[ -e "$server" ] || { echo "the arm64 packages have no usr/bin/redis-server" >&2; exit 1; }
declare -A seen=()
queue=("$server")
missing=()
while [ "${#queue[@]}" -gt 0 ]; do
  file=${queue[0]}
  queue=("${queue[@]:1}")
  for needed in $(readelf -d "$file" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
    [ -n "${seen[$needed]:-}" ] && continue
    seen[$needed]=1
    if path=$(find_lib "$needed"); then
      queue+=("$path")
    else
      missing+=("$needed")
    fi
  done
done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "the arm64 sysroot lacks ${missing[*]}: add their packages to fetch-arm64.sh" >&2
  exit 1
fi

# The test harness starts one binary: this wrapper runs the arm64 server under qemu. exec keeps
# the process id, which the harness checks against INFO's process_id.
cat > "$root/redis-server" <<EOF
#!/bin/sh
exec "$qemu" -L "$sysroot" "$sysroot/usr/bin/redis-server" "\$@"
EOF
chmod +x "$root/redis-server"
"$root/redis-server" --version
