#!/usr/bin/env bash
# Installs what `make dist` builds the release tarballs with, under target/tools, without root and
# with nothing but cargo (rustup's) and python3 (with venv) on the machine:
#   - cargo-zigbuild, Zig (PyPI's ziglang), libclang and pyelftools, pinned, in a Python virtual
#     environment at target/tools/venv: Zig compiles and links the module against glibc 2.17's
#     symbol versions (the manylinux2014 floor) for x86_64 and aarch64, whatever glibc this
#     machine has; bindgen (redis-module's build script) parses redismodule.h with the libclang.so
#     of PyPI's libclang wheel, which needs nothing but glibc; pyelftools reads the built module
#     for scripts/check_module.py;
#   - target/tools/bin/cc: Zig as the C compiler and linker for this machine, which rustc links
#     the build scripts and proc-macros with (cargo-zigbuild sets the targets' linker only), so
#     that no C toolchain is needed either;
#   - Rust's standard library for aarch64-unknown-linux-gnu (rustup target add), if missing.
# Idempotent: a second run checks and returns. Prints nothing but errors when all is there.
set -euo pipefail
cd "$(dirname "$0")/.."

# Pinned together: cargo-zigbuild hands bindgen Zig's libc include directories, and with Zig
# 0.17.1 (PyPI's newest when this was written) redis-module's bindgen cannot find <sys/types.h>
# there; 0.15.2 works. Change one only with a `make dist` that builds both tarballs.
CARGO_ZIGBUILD_VERSION=0.24.0
ZIGLANG_VERSION=0.15.2
# bindgen loads it at build time (dist.sh points LIBCLANG_PATH at it, with Zig's headers).
LIBCLANG_VERSION=18.1.1
PYELFTOOLS_VERSION=0.33
TARGETS=(x86_64-unknown-linux-gnu aarch64-unknown-linux-gnu)

tools=$PWD/target/tools
venv=$tools/venv
stamp=$tools/.installed
want="cargo-zigbuild==$CARGO_ZIGBUILD_VERSION ziglang==$ZIGLANG_VERSION"
want+=" libclang==$LIBCLANG_VERSION pyelftools==$PYELFTOOLS_VERSION"

if ! command -v rustc >/dev/null 2>&1; then
  echo "rustc is missing: install Rust (rustup, https://rustup.rs) and put cargo on PATH" >&2
  exit 1
fi
# The machine's: its build scripts and proc-macros are linked by Zig too (target/tools/bin/cc).
host=$(rustc -vV | sed -n 's/^host: //p')
case $host in
  x86_64-unknown-linux-gnu | aarch64-unknown-linux-gnu) ;;
  *) echo "make dist builds on x86_64 or aarch64 Linux with glibc, not on $host" >&2; exit 1 ;;
esac

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

# (-x follows the venv's python3 link: a venv whose interpreter went is made again.)
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && [ -x "$venv/bin/python3" ] \
  && [ -x "$venv/bin/cargo-zigbuild" ] && [ -x "$tools/bin/cc" ]; then
  touch "$stamp"  # newer than this script, for make
  exit 0
fi
command -v python3 >/dev/null 2>&1 || { echo "python3 is missing" >&2; exit 1; }
rm -rf "$venv" "$stamp" "$tools/bin"
mkdir -p "$tools/bin"
if ! python3 -m venv "$venv"; then
  echo "python3 -m venv failed: install Python's venv module (Debian: python3-venv; as root," >&2
  echo "make deps-dist installs it)" >&2
  exit 1
fi
# shellcheck disable=SC2086 # $want is four requirement words
"$venv/bin/pip" install --quiet --disable-pip-version-check --no-cache-dir $want
"$venv/bin/cargo-zigbuild" --version
echo "zig $("$venv/bin/python3" -m ziglang version)"

# The linker of this machine's build artifacts, for glibc 2.17 like the module (older than any
# machine's); rustc calls `cc` with gcc's arguments, which cargo-zigbuild's `zig cc` translates.
cat >"$tools/bin/cc" <<EOF
#!/bin/sh
# Written by scripts/zig-tools.sh: Zig as the C compiler and linker for this machine ($host).
export CARGO_ZIGBUILD_PYTHON_PATH="$venv/bin/python3"
exec "$venv/bin/cargo-zigbuild" zig cc -- -fno-sanitize=all -target ${host%%-*}-linux-gnu.2.17 "\$@"
EOF
chmod 755 "$tools/bin/cc"
echo "$want" > "$stamp"
