#!/usr/bin/env bash
# Creates (or reuses) a virtualenv at $1 with the requirements in $2; reinstalls when the requirements change.
set -euo pipefail
venv=$1
requirements=$2
stamp="$venv/.requirements"
if [ ! -x "$venv/bin/python" ]; then python3 -m venv "$venv"; fi
if ! cmp -s "$requirements" "$stamp" 2>/dev/null; then
    "$venv/bin/pip" install -q --disable-pip-version-check -r "$requirements"
    cp "$requirements" "$stamp"
fi
