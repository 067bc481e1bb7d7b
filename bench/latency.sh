#!/usr/bin/env bash
# The shape of the 1 KiB GET's latency, not just its p99: Silo (SQLite + disk, the bench/run rules) and nginx on
# CPU 0, wrk on CPU 1, taking turns, at several connection counts; percentiles 50/75/90/95/99/99.9 and the maximum in
# microseconds, and the CPU wrk itself used (a client near a full core queues responses too, and that is in every
# latency it reports). Prints a Markdown table; keeps nothing.
#   bench/latency.sh [CONNS…]   (default: 1 4 16 64; BENCH_ROUNDS=2, BENCH_SECONDS=4, BENCH_BIN as in bench/run)
set -euo pipefail
cd "$(dirname "$0")/.."
BENCH_WORK_PREFIX=silo-latency
# shellcheck source=bench/lib.sh
source bench/lib.sh
need_tools wrk nginx
release_silo
mkdir -p "$work/www" "$work/data"
head -c 1024 /dev/urandom >"$work/small.bin"
cp "$work/small.bin" "$work/www/small.bin"
start_nginx "$work/www"
start_silo "$work/data"
base="http://127.0.0.1:$silo_port/v0/b/bench.appspot.com/o"
curl -sS -f -o /dev/null -X POST --data-binary @"$work/small.bin" "$base?name=small.bin"
# The first v0 read gives the object its download token (a write); every later one is a cache hit.
curl -sS -f -o /dev/null "$base/small.bin?alt=media"
wait_http "http://127.0.0.1:$nginx_port/small.bin"
conns=("$@")
[ ${#conns[@]} -gt 0 ] || conns=(1 4 16 64)
echo "| conns | server | round | req/s | p50 | p75 | p90 | p95 | p99 | p99.9 | max (µs) | wrk CPU (of ${BENCH_SECONDS:-4} s) |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|"
for c in "${conns[@]}"; do
    for round in $(seq "${BENCH_ROUNDS:-2}"); do
        for server in nginx silo; do
            url="http://127.0.0.1:$nginx_port/small.bin"
            [ "$server" = silo ] && url="$base/small.bin?alt=media"
            out=$(/usr/bin/time -f "cpu %U %S" taskset -c "$load_cpu" wrk -t1 -c"$c" -d"${BENCH_SECONDS:-4}s" \
                -s bench/latency.lua "$url" 2>&1)
            read -r rps p50 p75 p90 p95 p99 p999 max < <(grep -E '^[0-9]+( [0-9]+){7}$' <<<"$out")
            cpu=$(awk '/^cpu / {printf "%.2f s", $2 + $3}' <<<"$out")
            echo "| $c | $server | $round | $rps | $p50 | $p75 | $p90 | $p95 | $p99 | $p999 | $max | $cpu |"
        done
    done
done
