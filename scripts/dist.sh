#!/usr/bin/env bash
# The release tarballs, for people who do not build from source (`make dist`):
#   scripts/dist.sh [output directory, default target/dist] [arch ...]
# builds the module for each arch (default: x86_64 aarch64) with cargo-zigbuild against glibc
# 2.17's symbols, so that it loads on any Linux with glibc 2.17 or newer, and writes
# redis-bf-<version>-linux-<arch>.tar.gz, holding one directory with the stripped module,
# README.md (packaging/README.md, for the person installing it), LICENSE and redis.conf.example,
# and its SHA-256 beside it. Prints each tarball's path on stdout (the build talks on stderr).
#
# Needs cargo (rustup's, to add the aarch64 standard library) and python3 with venv, nothing else:
# no root, no C compiler, linker, binutils or clang. The tools (scripts/zig-tools.sh, run from
# here: cargo-zigbuild, Zig, libclang and pyelftools from PyPI) live in target/tools, the builds in
# target/zig, Zig's and cargo-zigbuild's caches in target/tools/cache: nothing outside target/.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD

out=${1:-target/dist}
shift || true
arches=("$@")
[ "${#arches[@]}" -gt 0 ] || arches=(x86_64 aarch64)

# The oldest glibc the module may need: manylinux2014's floor (CentOS 7, Debian 8, Ubuntu 14.04).
GLIBC=2.17

version=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -n 1)
IFS=. read -r major minor patch <<<"${version%%[-+]*}"
module_version=$((major * 10000 + minor * 100 + patch))

scripts/zig-tools.sh >&2
tools=$repo/target/tools/venv
# The libclang.so of PyPI's libclang wheel, for bindgen (LIBCLANG_PATH: it looks nowhere else).
libclang_dir=$("$tools/bin/python3" -c \
  'import clang, pathlib; print(pathlib.Path(clang.__file__).parent / "native")')

build_dir=$repo/target/zig
mkdir -p "$build_dir" "$out"
out=$(cd "$out" && pwd)

targets=()
for arch in "${arches[@]}"; do
  case $arch in
    x86_64 | aarch64) targets+=(--target "$arch-unknown-linux-gnu.$GLIBC") ;;
    *) echo "unknown arch $arch: x86_64 or aarch64" >&2; exit 1 ;;
  esac
done
# One cargo run for all the targets: the two link-time-optimised links then run side by side.
# cargo-zigbuild hands bindgen Zig's include directories as Zig prints them, which is relative
# to the current directory when Zig's lib directory lies under it; redis-module's build script
# runs elsewhere and would not find them. From target/zig, Zig prints them absolute.
# target/tools/bin holds the `cc` that rustc links the build scripts and proc-macros for this
# machine with (Zig too: cargo-zigbuild sets the linker of the targets only); bindgen loads the
# libclang of target/tools/venv.
(
  cd "$build_dir"
  export PATH="$repo/target/tools/bin:$tools/bin:$PATH"
  export CARGO_ZIGBUILD_PYTHON_PATH="$tools/bin/python3"
  export LIBCLANG_PATH="$libclang_dir"
  export XDG_CACHE_HOME="$repo/target/tools/cache"
  export ZIG_GLOBAL_CACHE_DIR="$repo/target/tools/cache/zig"
  export CARGO_TARGET_DIR="$build_dir"
  export CARGO_PROFILE_RELEASE_STRIP=symbols
  cargo zigbuild --manifest-path "$repo/Cargo.toml" --locked --release --lib "${targets[@]}" >&2
)

for arch in "${arches[@]}"; do
  module=$build_dir/$arch-unknown-linux-gnu/release/libredis_bf.so

  # What the tarball promises, checked before it is written: architecture, stripped, the entry
  # point exported, nothing linked but glibc's own libraries, no symbol newer than glibc $GLIBC.
  "$tools/bin/python3" scripts/check_module.py --arch "$arch" --glibc "$GLIBC" "$module"

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
