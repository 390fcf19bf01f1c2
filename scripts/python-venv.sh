#!/usr/bin/env bash
# Usage: scripts/python-venv.sh VENV REQUIREMENTS
# Makes (or refreshes, when REQUIREMENTS changed) the virtual environment VENV from the pinned
# REQUIREMENTS, then installs the redis-bf package (python/) into it from a copy under target/,
# so that no build output lands in the source tree. Used by python-tests.sh and python-bench.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=$1
requirements=$2
python=${PYTHON:-python3}

stamp=$venv/.installed
wanted=$(cat "$requirements" python/tests/requirements.txt | sha256sum | cut -d' ' -f1)
if [ ! -x "$venv/bin/python" ] || [ "$(cat "$stamp" 2>/dev/null)" != "$wanted" ]; then
  echo "python-venv: installing $requirements into $venv"
  rm -rf "$venv"
  "$python" -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check -r "$requirements"
  echo "$wanted" >"$stamp"
fi

build=target/py-build/$(basename "$venv")
rm -rf "$build"
mkdir -p "$build"
# -L: python/LICENSE is a symbolic link to the repository's LICENSE; the copy takes its text.
cp -rL python/pyproject.toml python/README.md python/LICENSE python/src "$build/"
"$venv/bin/pip" install --quiet --disable-pip-version-check --no-deps --no-build-isolation \
  --force-reinstall "./$build"
