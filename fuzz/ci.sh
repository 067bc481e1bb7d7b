#!/usr/bin/env bash
# Builds every fuzz harness, runs each for FUZZ_CI_SECONDS (default 15) from its corpus and committed seeds, and
# fails if any run reports a finding (crash, property failure, leak, timeout, out-of-memory). Known issues that a
# harness tolerates (fuzz/RESULTS.md) do not fail it; FUZZ_STRICT=1 makes them fail too.
#   fuzz/ci.sh [TARGET...]        (make fuzz-ci)
# Logs: fuzz/findings/ci-TARGET.log; a finding's input is saved next to it (see fuzz/run for reproducing one).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${FUZZ_CI_SECONDS:-15}
if [ $# -gt 0 ]; then targets=("$@"); else mapfile -t targets < <(fuzz/run --list); fi

started=$(date +%s)
fuzz/run --build "${targets[@]}"
built=$(date +%s)
echo "fuzz-ci: built ${#targets[@]} harnesses in $((built - started)) s"

mkdir -p fuzz/findings
failed=()
for target in "${targets[@]}"; do
    log=fuzz/findings/ci-$target.log
    if fuzz/run "$target" "$seconds" >"$log" 2>&1; then
        runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
        echo "fuzz-ci: $target ok (${runs:-?} inputs in ${seconds} s)"
        grep '^known issue' "$log" | sed "s/^/fuzz-ci: $target: /" || true
    else
        failed+=("$target")
        echo "fuzz-ci: $target FAILED; log: $log"
        grep -m1 -A6 -E 'PROPERTY FAILED|ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer)|Fatal error' "$log" || tail -20 "$log"
    fi
done
echo "fuzz-ci: $(($(date +%s) - started)) s in all"
if [ ${#failed[@]} -gt 0 ]; then
    echo "fuzz-ci: findings in ${failed[*]}"
    exit 1
fi
