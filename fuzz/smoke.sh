#!/usr/bin/env bash
# Every fuzz harness, built against the debug build (`swift build`, which `make unit` runs first) and run for
# FUZZ_SMOKE_SECONDS (default 2) from its committed seeds: a harness that no longer compiles against the code it
# checks, or that fails on its seeds or their first mutations, fails `make test` within a minute. `fuzz/ci.sh`
# (`make fuzz-ci`) is the run that fuzzes: every module instrumented, with AddressSanitizer, for longer.
#   fuzz/smoke.sh [TARGET...]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${FUZZ_SMOKE_SECONDS:-2}
if [ $# -gt 0 ]; then targets=("$@"); else mapfile -t targets < <(fuzz/run --list); fi
failed=()
for target in "${targets[@]}"; do
    log=$(mktemp)
    if fuzz/run --smoke "$target" "$seconds" >"$log" 2>&1; then
        echo "fuzz-smoke: $target ok ($(grep -o 'Done [0-9]* runs' "$log" | tail -1))"
    else
        cat "$log" >&2
        failed+=("$target")
    fi
    rm -f "$log"
done
if [ ${#failed[@]} -gt 0 ]; then
    echo "fuzz-smoke: ${failed[*]} failed (inputs, if any, in fuzz/findings/smoke-*)" >&2
    exit 1
fi
