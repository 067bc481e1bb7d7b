#!/usr/bin/env bash
# A/B of two silo binaries on the 1 KiB GET: alternating rounds, server on CPU 0, wrk on CPU 1, 64 connections.
# Prints req/s, p99 and the server's CPU per request for each. Used to check that a change costs the hot path
# nothing measurable (the full comparison against nginx is bench/run).
#   bench/ab.sh OLD_BINARY NEW_BINARY [ROUNDS] [SECONDS]
# AB_OLD_ARGS / AB_NEW_ARGS: extra `silo serve` flags for each side, to compare settings of one binary
# (AB_OLD_ARGS='--threads 8' bench/ab.sh .build/release/silo .build/release/silo).
set -euo pipefail
old=$1 new=$2 rounds=${3:-3} seconds=${4:-5}
command -v wrk >/dev/null || { echo "bench/ab.sh needs wrk (apt-get install wrk)" >&2; exit 1; }
hz=$(getconf CLK_TCK)
for round in $(seq "$rounds"); do
    for side in old new; do
        if [ "$side" = old ]; then bin=$old args=${AB_OLD_ARGS:-}; else bin=$new args=${AB_NEW_ARGS:-}; fi
        dir=$(mktemp -d)
        port=$((20000 + RANDOM % 20000))
        # shellcheck disable=SC2086 # the args are a list of flags
        taskset -c 0 "$bin" serve --port "$port" --data "$dir" $args >/dev/null 2>&1 &
        pid=$!
        trap 'kill $pid 2>/dev/null; rm -rf "$dir"' EXIT
        for _ in $(seq 50); do curl -s -o /dev/null "http://127.0.0.1:$port/" && break; sleep 0.1; done
        head -c 1024 /dev/urandom > "$dir/object"
        url="http://127.0.0.1:$port/v0/b/ab.appspot.com/o"
        curl -s -o /dev/null -X POST --data-binary @"$dir/object" "$url?name=small"
        curl -s -o /dev/null "$url/small?alt=media"
        before=$(awk '{print $14 + $15}' "/proc/$pid/stat")
        out=$(taskset -c 1 wrk -t1 -c64 -d"$seconds" --latency "$url/small?alt=media")
        after=$(awk '{print $14 + $15}' "/proc/$pid/stat")
        requests=$(echo "$out" | awk '/requests in/ {print $1}')
        echo "$bin${args:+ $args} round $round: $(echo "$out" | awk '/Requests\/sec/ {print $2}') req/s," \
            "p99 $(echo "$out" | awk '/ 99%/ {print $2}'), $(echo "scale=2; ($after - $before) * 1000000 / $hz / $requests" | bc) µs CPU/req"
        kill "$pid"
        wait "$pid" 2>/dev/null || true
        rm -rf "$dir"
        trap - EXIT
    done
done
