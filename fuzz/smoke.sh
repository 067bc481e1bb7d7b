#!/usr/bin/env bash
# Every fuzz harness, built against the debug build (`swift build`, which `make unit` runs first) and run for
# FUZZ_SMOKE_SECONDS (default 2) from its committed seeds: a harness that no longer compiles against the code it
# checks, or that fails on its seeds or their first mutations, fails `make test` within a minute. `fuzz/ci.sh`
# (`make fuzz-ci`) is the run that fuzzes: every module instrumented, with AddressSanitizer, for longer.
# FUZZ_SMOKE_JOBS (default 2, one per core here) harnesses build and run at a time; each writes only its own files.
#   fuzz/smoke.sh [TARGET...]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${FUZZ_SMOKE_SECONDS:-2}
jobs_max=${FUZZ_SMOKE_JOBS:-2}
if [ $# -gt 0 ]; then targets=("$@"); else mapfile -t targets < <(fuzz/run --list); fi
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
for target in "${targets[@]}"; do
    while [ "$(jobs -rp | wc -l)" -ge "$jobs_max" ]; do wait -n || true; done
    (
        status=0
        fuzz/run --smoke "$target" "$seconds" >"$logs/$target.log" 2>&1 || status=$?
        echo "$status" >"$logs/$target.status"
    ) &
done
wait
failed=()
for target in "${targets[@]}"; do
    if [ "$(cat "$logs/$target.status" 2>/dev/null)" = 0 ]; then
        echo "fuzz-smoke: $target ok ($(grep -o 'Done [0-9]* runs' "$logs/$target.log" | tail -1))"
    else
        cat "$logs/$target.log" >&2
        failed+=("$target")
    fi
done
if [ ${#failed[@]} -gt 0 ]; then
    echo "fuzz-smoke: ${failed[*]} failed (inputs, if any, in fuzz/findings/smoke-*)" >&2
    exit 1
fi
