#!/usr/bin/env bash
# The release tarballs, for people who do not build from source (`make dist`):
#   scripts/dist.sh [output directory, default target/dist] [arch ...]
# builds the module for each arch (default: x86_64 aarch64) with cargo-zigbuild against glibc
# 2.17's symbols, so that it loads on any Linux with glibc 2.17 or newer, and writes
# redis-bf-<version>-linux-<arch>.tar.gz, holding one directory with the stripped module,
# README.md (packaging/README.md, for the person installing it), LICENSE and redis.conf.example,
# and its SHA-256 beside it. Prints each tarball's path on stdout (the build talks on stderr).
#
# The tools (scripts/zig-tools.sh, run from here) live in target/tools, the builds in target/zig,
# Zig's and cargo-zigbuild's caches in target/tools/cache: nothing outside target/.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD

out=${1:-target/dist}
shift || true
arches=("$@")
[ "${#arches[@]}" -gt 0 ] || arches=(x86_64 aarch64)

# The oldest glibc the module may need: manylinux2014's floor (CentOS 7, Debian 8, Ubuntu 14.04).
GLIBC=2.17
# Libraries the module may link to: the C library's own.
ALLOWED_NEEDED=" libc.so.6 libm.so.6 libpthread.so.0 libdl.so.2 librt.so.1 libgcc_s.so.1 \
ld-linux-x86-64.so.2 ld-linux-aarch64.so.1 "

version=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -n 1)
IFS=. read -r major minor patch <<<"${version%%[-+]*}"
module_version=$((major * 10000 + minor * 100 + patch))

scripts/zig-tools.sh >&2

build_dir=$repo/target/zig
mkdir -p "$build_dir" "$out"
out=$(cd "$out" && pwd)

machine_of() {
  case $1 in
    x86_64) echo "Advanced Micro Devices X86-64" ;;
    aarch64) echo "AArch64" ;;
    *) echo "unknown arch $1: x86_64 or aarch64" >&2; return 1 ;;
  esac
}
targets=()
for arch in "${arches[@]}"; do
  machine_of "$arch" >/dev/null
  targets+=(--target "$arch-unknown-linux-gnu.$GLIBC")
done
# One cargo run for all the targets: the two link-time-optimised links then run side by side.
# cargo-zigbuild hands bindgen Zig's include directories as Zig prints them, which is relative
# to the current directory when Zig's lib directory lies under it; redis-module's build script
# runs elsewhere and would not find them. From target/zig, Zig prints them absolute.
(
  cd "$build_dir"
  export PATH="$repo/target/tools/venv/bin:$PATH"
  export CARGO_ZIGBUILD_PYTHON_PATH="$repo/target/tools/venv/bin/python3"
  export XDG_CACHE_HOME="$repo/target/tools/cache"
  export ZIG_GLOBAL_CACHE_DIR="$repo/target/tools/cache/zig"
  export CARGO_TARGET_DIR="$build_dir"
  export CARGO_PROFILE_RELEASE_STRIP=symbols
  cargo zigbuild --manifest-path "$repo/Cargo.toml" --locked --release --lib "${targets[@]}" >&2
)

for arch in "${arches[@]}"; do
  machine=$(machine_of "$arch")
  triple=$arch-unknown-linux-gnu
  module=$build_dir/$triple/release/libredis_bf.so

  # What the tarball promises, checked before it is written.
  header=$(readelf -h "$module")
  grep -q "Machine: *$machine" <<<"$header" || {
    echo "$module is not an $arch module:" >&2; echo "$header" >&2; exit 1; }
  if grep -q '\.symtab\|\.debug_' <<<"$(readelf -S "$module")"; then
    echo "$module is not stripped" >&2; exit 1
  fi
  grep -q ' RedisModule_OnLoad$' <<<"$(readelf --dyn-syms "$module")" || {
    echo "$module does not export RedisModule_OnLoad" >&2; exit 1; }
  for needed in $(readelf -d "$module" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
    case $ALLOWED_NEEDED in
      *" $needed "*) ;;
      *) echo "$module needs $needed, which a bare glibc system may not have" >&2; exit 1 ;;
    esac
  done
  newest=$(objdump -T "$module" | sed -n 's/.*GLIBC_\([0-9.]*\).*/\1/p' | sort -V | tail -n 1)
  [ -n "$newest" ] || { echo "$module has no GLIBC_ symbol versions (objdump -T)" >&2; exit 1; }
  if [ "$(printf '%s\n%s\n' "$newest" "$GLIBC" | sort -V | tail -n 1)" != "$GLIBC" ]; then
    echo "$module needs glibc $newest, newer than $GLIBC" >&2
    exit 1
  fi

  name=redis-bf-$version-linux-$arch
  stage=$out/$name
  rm -rf "$stage"
  mkdir -p "$stage"
  cp "$module" "$stage/libredis_bf.so"
  # Redis 7 refuses to load a module file without execute permission.
  chmod 755 "$stage/libredis_bf.so"
  # The template's note for readers of the repository (its first line, and the blank one after)
  # goes.
  sed -e '/^> This file is the template/{N;d;}' -e "s/@VERSION@/$version/g" -e "s/@MODULE_VERSION@/$module_version/g" \
    -e "s/@ARCH@/$arch/g" -e "s/@GLIBC@/$GLIBC/g" packaging/README.md > "$stage/README.md"
  if grep -n '@[A-Z_]*@' "$stage/README.md" >&2; then
    echo "packaging/README.md has a placeholder dist.sh does not fill (above)" >&2
    exit 1
  fi
  cp LICENSE redis.conf.example "$stage/"
  tar -C "$out" --sort=name --owner=0 --group=0 --numeric-owner -czf "$out/$name.tar.gz" "$name"
  rm -rf "$stage"
  (cd "$out" && sha256sum "$name.tar.gz" > "$name.tar.gz.sha256")
  echo "$out/$name.tar.gz"
done
