#!/usr/bin/env bash
# Time from `silo serve` to /healthz answering 200 over a store of many objects, with the page cache dropped first
# (cold: what a restarted machine sees) and without (warm), for each binary given, median of BENCH_ROUNDS (3). The
# store is one real upload cloned N times by SiloBenchSeed (at most 1,000,000; bench/scale.py measures the same
# figure over stores of real uploads). Dropping the page cache needs root; without it only warm is measured.
#   bench/startup.sh [N] [SILO_BINARY…]     default: 1000000 and .build/release/silo
set -euo pipefail
cd "$(dirname "$0")/.."
BENCH_WORK_PREFIX=silo-startup
# shellcheck source=bench/lib.sh
source bench/lib.sh
count=${1:-1000000}
shift || true
binaries=("$@")
[ ${#binaries[@]} -gt 0 ] || { release_silo; binaries=("$bin/silo"); }
seeder=.build/release/SiloBenchSeed
[ -x "$seeder" ] || swift build -c release -Xswiftc -cross-module-optimization --product SiloBenchSeed >/dev/null
seed_port=$(free_port)
"${binaries[0]}" serve --port "$seed_port" --data "$work/data" --create-buckets-on-upload true >"$work/seed.log" 2>&1 &
seed_pid=$!
pids+=("$seed_pid")
wait_http "http://127.0.0.1:$seed_port/healthz"
curl -sS -f -o /dev/null -X POST --data-binary x "http://127.0.0.1:$seed_port/v0/b/start.appspot.com/o?name=t"
kill "$seed_pid"
wait "$seed_pid" 2>/dev/null || true
"$seeder" "$work/data/metadata.sqlite" start.appspot.com t "$count" >/dev/null
ready() { # binary → seconds until /healthz is 200
    local port started pid
    port=$(free_port)
    started=$(date +%s.%N)
    "$1" serve --port "$port" --data "$work/data" >"$work/serve.log" 2>&1 &
    pid=$!
    until curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/healthz" 2>/dev/null | grep -q 200; do
        kill -0 "$pid" 2>/dev/null || { echo "silo serve exited; see $work/serve.log" >&2; exit 1; }
        if [ "$(echo "$(date +%s.%N) - $started > 120" | bc)" = 1 ]; then
            kill "$pid"
            echo "silo serve not ready within 120 s; see $work/serve.log" >&2
            exit 1
        fi
        sleep 0.005
    done
    echo "$(date +%s.%N) - $started" | bc
    kill "$pid"
    wait "$pid" 2>/dev/null || true
}
can_drop=false
[ -w /proc/sys/vm/drop_caches ] && can_drop=true
echo "ready after silo serve, $count objects, median of ${BENCH_ROUNDS:-3} (s)"
for binary in "${binaries[@]}"; do
    cold=() warm=()
    for _ in $(seq "${BENCH_ROUNDS:-3}"); do
        if $can_drop; then
            sync
            echo 3 >/proc/sys/vm/drop_caches
            seconds=$(ready "$binary")
            cold+=("$seconds")
        fi
        seconds=$(ready "$binary")
        warm+=("$seconds")
    done
    echo "$binary: cold $($can_drop && fmt "$(median "${cold[@]}")" 3 || echo –), warm $(fmt "$(median "${warm[@]}")" 3)"
done
