#!/usr/bin/env bash
# Creates (or reuses) a virtualenv at $1 with the requirements in $2; reinstalls when the requirements change.
#
# Installed with uv (pinned below, itself from PyPI into .venv/uv): the test venvs hold google-cloud-storage, pyarrow,
# polars, gsutil and the rest, and pip spent 38 s of CPU on the clients' venv where uv spends 15 s, while `make test`
# makes every venv in the background beside the builds (`make venvs`). Venvs are made with `--seed`, so they have
# their own pip, which some suites call (`pip download` of an sdist).
#
# One install at a time per venv (a lock beside it): a target that needs a venv the background run is making waits
# for it.
set -euo pipefail
venv=$1
requirements=$2
stamp="$venv/.requirements"
uv_version=0.13.10
# uv lives in the checkout's .venv wherever this is called from; the venv itself is where $1 says.
tools=$(cd "$(dirname "$0")/.." && pwd)/.venv
uv=$tools/uv/bin/uv
mkdir -p "$(dirname "$venv")" "$tools"
(
    flock 8
    if ! [ -x "$uv" ] || [ "$("$uv" --version | cut -d' ' -f2)" != "$uv_version" ]; then
        python3 -m venv "$tools/uv"
        "$tools/uv/bin/pip" install -q --disable-pip-version-check "uv==$uv_version"
    fi
) 8>"$tools/uv.lock"
exec 9>"$venv.lock"
flock 9
if [ ! -x "$venv/bin/python" ]; then "$uv" venv -q --seed --python python3 "$venv"; fi
if ! cmp -s "$requirements" "$stamp" 2>/dev/null; then
    "$uv" pip install -q --python "$venv/bin/python" -r "$requirements"
    cp "$requirements" "$stamp"
fi
