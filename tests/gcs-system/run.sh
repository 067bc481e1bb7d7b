#!/usr/bin/env bash
# `make gcs-system`: google-cloud-storage's own system tests (tests/system of the pinned sdist from PyPI), then
# test_gcsfs_versions.py under each pinned gcsfs (requirements-gcsfs-*.txt), against one live `silo serve` on
# 127.0.0.1 port 0 in emulator mode. See tests/gcs-system/README.md.
#
#   SILO_BINARY=PATH            server to test (default .build/release/silo)
#   GCS_SYSTEM_REPORT_ONLY=1    report failures but exit 0
#   GCS_SYSTEM_TIMEOUT=S        global bound on the whole run after setup (default 900); GCS_SYSTEM_TEST_TIMEOUT=S one
#                               test (default 120)
#   GCS_SYSTEM_OUT=DIR          where the junit XML, pytest logs, captured exchanges and failures.md go
#                               (default .venv/gcs-system-out)
#   GCS_SYSTEM_ONLY=system|gcsfs  run one half
#   GCS_SYSTEM_PYTEST_ARGS="…"  extra pytest arguments for the system tests (e.g. -k bucket)
set -euo pipefail
cd "$(dirname "$0")/../.."
here=tests/gcs-system
binary=${SILO_BINARY:-.build/release/silo}
out=${GCS_SYSTEM_OUT:-.venv/gcs-system-out}
cache=.venv/gcs-system-cache
only=${GCS_SYSTEM_ONLY:-}
started=$(date +%s)

[ -x "$binary" ] || { echo "gcs-system: no server binary at $binary (make release, or set SILO_BINARY)" >&2; exit 2; }

# The google-cloud-storage version is the one pinned in requirements.txt: the library and its tests match.
version=$(sed -n 's/^google-cloud-storage\(\[[^]]*\]\)\{0,1\}==\([0-9.]*\)$/\2/p' "$here/requirements.txt")
[ -n "$version" ] || { echo "gcs-system: no google-cloud-storage==X.Y.Z pin in $here/requirements.txt" >&2; exit 2; }

scripts/python-venv.sh .venv/gcs-system "$here/requirements.txt"
args=(--binary "$binary" --out "$out")

if [ "$only" != gcsfs ]; then
    src="$cache/google-cloud-storage-$version"
    if [ ! -d "$src/tests/system" ]; then
        mkdir -p "$cache"
        sdist=$(ls "$cache"/google_cloud_storage-"$version".tar.gz "$cache"/google-cloud-storage-"$version".tar.gz \
            2>/dev/null | head -n1 || true)
        if [ -z "$sdist" ]; then
            .venv/gcs-system/bin/pip download -q --disable-pip-version-check --no-binary :all: --no-deps \
                -d "$cache" "google-cloud-storage==$version"
            sdist=$(ls "$cache"/google[_-]cloud[_-]storage-"$version".tar.gz | head -n1)
        fi
        # Only its tests/ (with the data files they upload): the library itself comes from the venv.
        rm -rf "$src.tmp" && mkdir -p "$src.tmp"
        top=$(basename "$sdist" .tar.gz)  # an sdist unpacks to NAME-VERSION/, as its file is named
        tar -xzf "$sdist" -C "$src.tmp" --strip-components=1 "$top/tests"
        mv "$src.tmp" "$src"
    fi
    args+=(--system-src "$src" --system-python "$PWD/.venv/gcs-system/bin/python")
fi

if [ "$only" != system ]; then
    for req in "$here"/requirements-gcsfs-*.txt; do
        label=$(basename "$req" .txt)
        label=${label#requirements-}
        scripts/python-venv.sh ".venv/$label" "$req"
        args+=(--gcsfs "$label=$PWD/.venv/$label/bin/python")
    done
fi

echo "gcs-system: google-cloud-storage $version, server $binary, setup $(($(date +%s) - started)) s"
status=0
timeout -k 30 "${GCS_SYSTEM_TIMEOUT:-900}" .venv/gcs-system/bin/python "$here/run.py" "${args[@]}" || status=$?
[ "$status" = 124 ] && echo "gcs-system: stopped by the global timeout (${GCS_SYSTEM_TIMEOUT:-900} s)" >&2
echo "gcs-system: total $(($(date +%s) - started)) s; junit XML, logs and failures.md in $out"
exit "$status"
