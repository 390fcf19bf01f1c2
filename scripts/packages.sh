#!/usr/bin/env bash
# Installs the Debian packages named as arguments that are missing, when it can (as root, with
# apt-get), and otherwise names them and fails. Also checks that cargo is there.
set -euo pipefail
missing=()
if command -v dpkg >/dev/null 2>&1; then
  for pkg in "$@"; do
    dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
  done
else
  for pkg in "$@"; do
    case "$pkg" in
      redis-server) command -v redis-server >/dev/null 2>&1 || missing+=("$pkg") ;;
    esac
  done
fi
if [ "${#missing[@]}" -gt 0 ]; then
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    echo "Installing: ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq "${missing[@]}" </dev/null >/dev/null
  else
    echo "Missing packages: ${missing[*]}"
    echo "Install them with: sudo apt-get install -y ${missing[*]}"
    exit 1
  fi
fi
command -v cargo >/dev/null 2>&1 || { echo "cargo is missing: install Rust from https://rustup.rs"; exit 1; }
