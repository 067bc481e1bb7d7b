#!/usr/bin/env bash
# A cheap, deterministic performance guard for CI (no timing): counts the system calls `silo serve` makes per small
# v0 download (`alt=media`, 1 KiB), per getMetadata and per 20-item listing, over a fixed run of keep-alive requests
# traced with `strace -c -f`, and the user-space instructions per small download, getMetadata, never-repeating
# download (the replay memo cannot answer it) and getMetadata of random names over 100,000 objects under callgrind
# (bench/instructions.sh), and fails if any exceeds its ceiling in bench/thresholds.json. A regression such as
# reopening small blobs per request, an extra SQLite lock round trip or a per-request write shows up here as a
# changed count. Runs in under a minute (most of it valgrind). Usage: bench/guard.sh [--print]   (--print: show counts,
# never fail)
set -euo pipefail
cd "$(dirname "$0")/.."
requests=200
command -v strace >/dev/null || {
    sudo_cmd=()
    [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
    "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends strace >/dev/null
}
binary=.build/release/silo
[ -x "$binary" ] || swift build -c release -Xswiftc -cross-module-optimization --product silo >/dev/null
work=$(mktemp -d /tmp/silo-guard-XXXXXX)
server_pid="" tracer_pid=""
cleanup() {
    [ -n "$tracer_pid" ] && kill "$tracer_pid" 2>/dev/null
    [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null
    wait 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT

"$binary" serve --port 0 --data "$work/data" >"$work/server.log" 2>&1 &
server_pid=$!
for _ in $(seq 100); do grep -q 'http://127.0.0.1:' "$work/server.log" && break; sleep 0.1; done
port=$(grep -o 'http://127.0.0.1:[0-9]*' "$work/server.log" | head -1 | cut -d: -f3)
base="http://127.0.0.1:$port/v0/b/guard.appspot.com/o"
head -c 1024 /dev/urandom >"$work/small"
curl -sS -f -o /dev/null -X POST -H 'Content-Type: application/octet-stream' --data-binary @"$work/small" \
    "$base?name=small.bin"
for i in $(seq 20); do curl -sS -f -o /dev/null -X POST --data-binary x "$base?name=dir%2Fitem$i"; done

# One keep-alive connection (curl's URL range), after a warm-up that gives the object its download token.
run() { curl -sS -f -o /dev/null "$1&guard=[1-$2]"; }
declare -A urls=(
    [small_get]="$base/small.bin?alt=media"
    [get_metadata]="$base/small.bin?fields=all"
    [list_20_items]="$base?prefix=dir%2F&delimiter=%2F"
)
declare -A counts
for name in small_get get_metadata list_20_items; do
    run "${urls[$name]}" 20
    strace -f -c -o "$work/$name.strace" -p "$server_pid" 2>/dev/null &
    tracer_pid=$!
    sleep 0.5   # strace attaches to every thread before the run starts
    run "${urls[$name]}" "$requests"
    sleep 0.2
    kill -INT "$tracer_pid"
    wait "$tracer_pid" 2>/dev/null || true
    tracer_pid=""
    # The total line is "100.00 SECONDS USECS/CALL CALLS [ERRORS] total": calls is the 4th field either way.
    total=$(awk '$NF == "total" {print $4 + 0}' "$work/$name.strace")
    counts[$name]=$(echo "$total / $requests" | bc -l | xargs printf '%.2f')
done

status=0
for name in small_get get_metadata list_20_items; do
    limit=$(python3 -c "import json,sys; print(json.load(open('bench/thresholds.json'))['syscalls_per_request']['$name'])")
    verdict=ok
    if [ "$(echo "${counts[$name]} > $limit" | bc -l)" = 1 ]; then verdict=FAIL; status=1; fi
    # Every request needs at least a read and a send: fewer means the trace or its parsing broke, not a win.
    if [ "$(echo "${counts[$name]} < 2" | bc -l)" = 1 ]; then verdict="FAIL (below 2: the measurement is broken)"; status=1; fi
    printf '%-14s %6s syscalls/request (ceiling %s) %s\n' "$name" "${counts[$name]}" "$limit" "$verdict"
done
# Instructions per request (callgrind, user space): deterministic for a binary, unlike any timing.
for name in small_get:get get_metadata:metadata unique_get:unique random_metadata:random; do
    measured=$(BENCH_BIN=$(dirname "$binary") bench/instructions.sh "${name#*:}" 2>/dev/null \
        | awk '/instructions per request/ {print $(NF - 3)}')
    limit=$(python3 -c "import json; print(json.load(open('bench/thresholds.json'))['instructions_per_request']['${name%%:*}'])")
    verdict=ok
    if [ -z "$measured" ]; then
        verdict="FAIL (no count: bench/instructions.sh ${name#*:} did not run)"
        status=1
    elif [ "$measured" -gt "$limit" ]; then
        verdict=FAIL
        status=1
    fi
    printf '%-14s %6s instructions/request (ceiling %s) %s\n' "${name%%:*}" "${measured:-?}" "$limit" "$verdict"
done
if [ "${1:-}" = --print ]; then
    for name in small_get get_metadata list_20_items; do echo "--- $name"; cat "$work/$name.strace"; done
    exit 0
fi
exit $status
