#!/usr/bin/env bash
# Creates (or reuses) a virtualenv at $1 with the requirements in $2; reinstalls when the requirements change.
# One install at a time per venv (a lock beside it): `make test` prepares every venv in the background
# (`make venvs`) while the targets that use them may already ask for one.
set -euo pipefail
venv=$1
requirements=$2
stamp="$venv/.requirements"
mkdir -p "$(dirname "$venv")"
exec 9>"$venv.lock"
flock 9
if [ ! -x "$venv/bin/python" ]; then python3 -m venv "$venv"; fi
if ! cmp -s "$requirements" "$stamp" 2>/dev/null; then
    # No byte-compiling of every installed module: Python compiles what a test imports, when it does, and the
    # install uses less of the CPU the builds beside it need (`make test`).
    "$venv/bin/pip" install -q --disable-pip-version-check --no-compile -r "$requirements"
    cp "$requirements" "$stamp"
fi
