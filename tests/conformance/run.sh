#!/usr/bin/env bash
# `make conformance`: google-cloud-storage's retry conformance tests (tests/conformance of the pinned sdist from
# PyPI, driven by its retry_strategy_test_data.json) against one live `silo serve --test-faults` on 127.0.0.1 port 0,
# in place of storage-testbench. See tests/conformance/README.md.
#
#   SILO_BINARY=PATH               server to test (default .build/release/silo)
#   CONFORMANCE_REPORT_ONLY=1      report failures but exit 0
#   CONFORMANCE_TIMEOUT=S          bound on the whole run after setup (default 600); CONFORMANCE_TEST_TIMEOUT=S one
#                                  test (default 120)
#   CONFORMANCE_OUT=DIR            junit XML and pytest log (default .venv/conformance-out)
#   CONFORMANCE_PYTEST_ARGS="…"    extra pytest arguments (e.g. -k S8)
#   CONFORMANCE_WORKERS=N          tests at a time (pytest-xdist, default 4)
#   CONFORMANCE_SILO_ARGS="…"      extra `silo serve` arguments (e.g. --inline-limit 0)
#   CONFORMANCE_SLEEP_SCALE=F      factor on the clients' retry back-off sleeps (default 0.1; 1 for real waits)
set -euo pipefail
cd "$(dirname "$0")/../.."
here=tests/conformance
binary=${SILO_BINARY:-.build/release/silo}
out=${CONFORMANCE_OUT:-.venv/conformance-out}
# The library, its test dependencies and the sdist are the system tests' (tests/gcs-system): one pin, one venv.
requirements=tests/gcs-system/requirements.txt
cache=.venv/gcs-system-cache
started=$(date +%s)

[ -x "$binary" ] || { echo "conformance: no server binary at $binary (make release, or set SILO_BINARY)" >&2; exit 2; }

version=$(sed -n 's/^google-cloud-storage\(\[[^]]*\]\)\{0,1\}==\([0-9.]*\)$/\2/p' "$requirements")
[ -n "$version" ] || { echo "conformance: no google-cloud-storage==X.Y.Z pin in $requirements" >&2; exit 2; }

scripts/python-venv.sh .venv/gcs-system "$requirements"

src="$cache/google-cloud-storage-$version-conformance"
if [ ! -d "$src/tests/conformance" ]; then
    mkdir -p "$cache"
    sdist=$(ls "$cache"/google_cloud_storage-"$version".tar.gz "$cache"/google-cloud-storage-"$version".tar.gz \
        2>/dev/null | head -n1 || true)
    if [ -z "$sdist" ]; then
        .venv/gcs-system/bin/pip download -q --disable-pip-version-check --no-binary :all: --no-deps \
            -d "$cache" "google-cloud-storage==$version"
        sdist=$(ls "$cache"/google[_-]cloud[_-]storage-"$version".tar.gz | head -n1)
    fi
    # Only its tests/conformance (with the JSON that drives it, and tests/__init__.py for the package import).
    rm -rf "$src.tmp" && mkdir -p "$src.tmp"
    top=$(basename "$sdist" .tar.gz)  # an sdist unpacks to NAME-VERSION/, as its file is named
    tar -xzf "$sdist" -C "$src.tmp" --strip-components=1 "$top/tests/conformance" "$top/tests/__init__.py"
    mv "$src.tmp" "$src"
fi

echo "conformance: google-cloud-storage $version, server $binary, setup $(($(date +%s) - started)) s"
status=0
timeout -k 30 "${CONFORMANCE_TIMEOUT:-600}" .venv/gcs-system/bin/python "$here/run.py" --binary "$binary" \
    --src "$src" --python "$PWD/.venv/gcs-system/bin/python" --out "$out" || status=$?
[ "$status" = 124 ] && echo "conformance: stopped by the global timeout (${CONFORMANCE_TIMEOUT:-600} s)" >&2
echo "conformance: total $(($(date +%s) - started)) s; junit XML and log in $out"
exit "$status"
