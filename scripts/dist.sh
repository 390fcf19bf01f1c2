#!/bin/sh
# Packages the built module for people who do not build from source (`make dist`):
#   scripts/dist.sh [output directory, default target/dist]
# writes redis-bf-<version>-linux-<arch>.tar.gz, holding the stripped module, redis.conf.example,
# README.md and LICENSE in one directory, and its SHA-256 beside it; prints the tarball's path.
set -eu
cd "$(dirname "$0")/.."
out=${1:-target/dist}
module=target/release/libredis_bf.so
if [ ! -f "$module" ]; then
  echo "$module is missing: build it first (make build)" >&2
  exit 1
fi
version=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -n 1)
name=redis-bf-$version-linux-$(uname -m)
mkdir -p "$out"
stage=$out/$name
rm -rf "$stage"
mkdir -p "$stage"
# --strip-all drops the static symbol table and debug sections; the dynamic symbols Redis looks
# up (RedisModule_OnLoad) stay.
strip --strip-all -o "$stage/libredis_bf.so" "$module"
cp redis.conf.example README.md LICENSE "$stage/"
tar -C "$out" --sort=name --owner=0 --group=0 --numeric-owner -czf "$out/$name.tar.gz" "$name"
rm -rf "$stage"
(cd "$out" && sha256sum "$name.tar.gz" > "$name.tar.gz.sha256")
echo "$out/$name.tar.gz"
