#!/usr/bin/env bash
# Where `silo serve` spends its CPU, by library and by symbol (perf), under the load bench/run measures:
#   bench/profile.sh get       1 KiB v0 GETs, wrk -c64, for 4 s
#   bench/profile.sh metadata  v0 getMetadata, wrk -c64, for 4 s
#   bench/profile.sh upload    three 256 MiB resumable uploads (curl -T)
# A second argument `postgres` puts the metadata in a throwaway PostgreSQL cluster (scripts/postgres-up.sh, unpinned)
# instead of SQLite. For get/metadata it also prints the req/s and the server's CPU µs per request of a run without
# perf attached (perf's sampling costs the server CPU of its own).
# The server runs on CPU 0 and the load on CPU 1 (with 2+ cores), with the same public rules file as bench/run.
# BENCH_BIN=dir of a release `silo` skips the build (to compare two builds in one session).
# Needs perf (linux-perf) and, for get/metadata, wrk. Prints the top of `perf report`; keeps nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-get}
store=${2:-sqlite}
case "$mode" in get | metadata | upload) ;; *) echo "usage: bench/profile.sh get|metadata|upload [postgres]" >&2; exit 64 ;; esac
case "$store" in sqlite | postgres) ;; *) echo "usage: bench/profile.sh get|metadata|upload [postgres]" >&2; exit 64 ;; esac
command -v perf >/dev/null || { echo "perf is not installed (apt install linux-perf)" >&2; exit 69; }
BENCH_WORK_PREFIX=silo-profile
# shellcheck source=bench/lib.sh
source bench/lib.sh
release_silo
flags=()
if [ "$store" = postgres ]; then
    read -r pg_url pg_dir < <(scripts/postgres-up.sh)
    cleanup_hooks+=("scripts/postgres-down.sh '$pg_dir'")
    flags=(--metadata "$pg_url")
fi
start_silo "$work/data" "${flags[@]}"
server_pid=$silo_pid
port=$silo_port
base="http://127.0.0.1:$port/v0/b/bench.appspot.com/o"

record() { perf record -F 4000 -g -p "$server_pid" -o "$work/perf.data" -- sleep "$1" >/dev/null 2>&1; }
if [ "$mode" = upload ]; then
    head -c $((256 << 20)) /dev/urandom >"$work/big.bin"
    upload() {
        local url
        url=$(curl -sS -f -D - -o /dev/null -X POST -H 'X-Goog-Upload-Protocol: resumable' \
            -H 'X-Goog-Upload-Command: start' "$base?name=big.bin" \
            | tr -d '\r' | awk -F': ' 'tolower($1)=="x-goog-upload-url" {print $2}')
        taskset -c "$load_cpu" curl -sS -f -o /dev/null -X POST -H 'X-Goog-Upload-Command: upload, finalize' \
            -H 'X-Goog-Upload-Offset: 0' -T "$work/big.bin" "$url"
    }
    upload
    # perf stops when the uploads are done (SIGINT), not after a fixed time.
    perf record -F 4000 -g -p "$server_pid" -o "$work/perf.data" >/dev/null 2>&1 &
    recorder=$!
    sleep 0.5
    for _ in 1 2 3; do upload; done
    kill -INT "$recorder" 2>/dev/null || true
    wait "$recorder" || true
else
    head -c 1024 /dev/urandom >"$work/small.bin"
    curl -sS -f -o /dev/null -X POST --data-binary @"$work/small.bin" "$base?name=small.bin"
    url="$base/small.bin"
    [ "$mode" = get ] && url="$url?alt=media"
    seconds=4
    mkdir -p "$work/m"
    taskset -c "$load_cpu" wrk -t1 -c64 -d1 "$url" >/dev/null
    measure plain "$server_pid" 64 "$url"
    taskset -c "$load_cpu" wrk -t1 -c64 -d7 "$url" >/dev/null &
    load=$!
    sleep 1.5
    record 4
    wait "$load" || true
    echo "== silo serve, $mode ($store), without perf: $(fmt "$(col plain 1)") req/s, p99 $(fmt "$(col plain 3)" 2) ms, CPU $(fmt "$(col plain 5)" 1) µs/request"
fi
echo "== silo serve, $mode ($store): share of CPU samples by library"
perf report -i "$work/perf.data" --no-children --sort dso -g none 2>/dev/null | grep '%' | head -8
echo "== by symbol"
perf report -i "$work/perf.data" --no-children --sort sym -g none 2>/dev/null | grep '%' | head -25 | cut -c1-150
