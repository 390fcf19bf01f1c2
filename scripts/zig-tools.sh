#!/usr/bin/env bash
# Installs what `make dist` builds the release tarballs with, under target/tools, without root:
#   - cargo-zigbuild and Zig (PyPI's ziglang), pinned, in a Python virtual environment at
#     target/tools/venv: Zig links the module against glibc 2.17's symbol versions (the
#     manylinux2014 floor) for x86_64 and aarch64, whatever glibc this machine has;
#   - Rust's standard library for aarch64-unknown-linux-gnu (rustup target add), if missing.
# Idempotent: a second run checks and returns. Prints nothing but errors when all is there.
set -euo pipefail
cd "$(dirname "$0")/.."

# Pinned together: cargo-zigbuild hands bindgen Zig's libc include directories, and with Zig
# 0.17.1 (PyPI's newest when this was written) redis-module's bindgen cannot find <sys/types.h>
# there; 0.15.2 works. Change one only with a `make dist` that builds both tarballs.
CARGO_ZIGBUILD_VERSION=0.24.0
ZIGLANG_VERSION=0.15.2
TARGETS=(x86_64-unknown-linux-gnu aarch64-unknown-linux-gnu)

tools=$PWD/target/tools
venv=$tools/venv
stamp=$tools/.installed
want="cargo-zigbuild==$CARGO_ZIGBUILD_VERSION ziglang==$ZIGLANG_VERSION"

# Rust's standard library for each target: rustup's, or whatever toolchain cargo uses.
sysroot=$(rustc --print sysroot)
for target in "${TARGETS[@]}"; do
  [ -d "$sysroot/lib/rustlib/$target/lib" ] && continue
  if ! command -v rustup >/dev/null 2>&1; then
    echo "Rust's standard library for $target is missing and there is no rustup to add it:" >&2
    echo "install it with your Rust toolchain (rustup: rustup target add $target)" >&2
    exit 1
  fi
  echo "rustup target add $target"
  if ! rustup target add "$target"; then
    echo "could not add Rust's standard library for $target (rustup target add $target failed" >&2
    echo "above: it downloads from static.rust-lang.org)" >&2
    exit 1
  fi
done

if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && [ -x "$venv/bin/cargo-zigbuild" ]; then
  touch "$stamp"  # newer than this script, for make
  exit 0
fi
command -v python3 >/dev/null 2>&1 || { echo "python3 is missing (make deps installs it)" >&2; exit 1; }
rm -rf "$venv" "$stamp"
mkdir -p "$tools"
if ! python3 -m venv "$venv"; then
  echo "python3 -m venv failed: install python3-venv (make deps does)" >&2
  exit 1
fi
# shellcheck disable=SC2086 # $want is two requirement words
"$venv/bin/pip" install --quiet --disable-pip-version-check --no-cache-dir $want
"$venv/bin/cargo-zigbuild" --version
echo "zig $("$venv/bin/python3" -m ziglang version)"
echo "$want" > "$stamp"
