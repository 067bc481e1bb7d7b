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

# libFuzzer's -timeout is wall-clock time: on a shared machine a stalled or starved process can "time out" on an
# input that takes milliseconds. A timeout counts only if the saved input is slow again when run alone.
reproduces_timeout() {
    local target=$1 input=$2
    ! SWIFT_BACKTRACE=enable=no "fuzz/.build/$target-fuzzer" -runs=1 -timeout=10 "$input" >/dev/null 2>&1
}

# True when every input the run saved is a timeout that does not reproduce.
spurious_timeouts() {
    local target=$1 f
    shift
    [ $# -gt 0 ] || return 1
    for f in "$@"; do
        case $f in *-timeout-*) ;; *) return 1 ;; esac
        if reproduces_timeout "$target" "fuzz/findings/$f"; then return 1; fi
    done
}

mkdir -p fuzz/findings
failed=()
for target in "${targets[@]}"; do
    log=fuzz/findings/ci-$target.log
    before=$(ls fuzz/findings)
    if fuzz/run "$target" "$seconds" >"$log" 2>&1; then
        runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
        echo "fuzz-ci: $target ok (${runs:-?} inputs in ${seconds} s)"
        grep '^known issue' "$log" | sed "s/^/fuzz-ci: $target: /" || true
        continue
    fi
    new=$(comm -13 <(echo "$before") <(ls fuzz/findings) | grep -v '^ci-' || true)
    # shellcheck disable=SC2086
    if spurious_timeouts "$target" $new; then
        echo "fuzz-ci: $target: a timeout that does not reproduce (the machine stalled); not a finding: $new"
        continue
    fi
    failed+=("$target")
    echo "fuzz-ci: $target FAILED; log: $log; input: ${new:-none saved}"
    grep -m1 -A6 -E 'PROPERTY FAILED|ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer)|Fatal error' "$log" || tail -20 "$log"
done
echo "fuzz-ci: $(($(date +%s) - started)) s in all"
if [ ${#failed[@]} -gt 0 ]; then
    echo "fuzz-ci: findings in ${failed[*]}"
    exit 1
fi
