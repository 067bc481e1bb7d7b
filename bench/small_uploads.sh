#!/usr/bin/env bash
# Small durable uploads against the disk's own ceiling, in one run. Each round measures, back to back:
#   * the disk: create + write 1 KiB + fdatasync + directory fsync, from 1 and 16 threads (bench/disk_ceiling.py),
#     in the same directory tree as the server's data;
#   * Silo: 1 KiB v0 media uploads, each to a new name (bench/small_uploads.lua), at 1, 16 and 64 connections:
#     req/s, p50 and p99.
# Then it prints a Markdown table of the medians over the rounds, the ratio of Silo's rate at 16 connections to the
# disk's 16-thread rate, the p99 at 64 connections over the p99 at 1, the bytes on disk per object (blob files,
# metadata.sqlite and its WAL, after a checkpoint), and Silo's commit groups (`silo_metadata_commit_groups_total`
# beside `silo_metadata_commits_total`, where the binary has them).
#
# Silo runs on CPU 0 and wrk on CPU 1 (taskset, bench/lib.sh); the disk probe runs on CPU 0 too. On a shared machine
# the wall-clock figures swing with whatever else runs: compare Silo with the disk figure of the same round.
#
# Usage: bench/small_uploads.sh [sqlite|postgres]   (default sqlite: SQLite + disk; postgres: PostgreSQL + SeaweedFS
#   S3, from scripts/postgres-up.sh with fsync, full_page_writes and synchronous_commit turned back on, and
#   scripts/seaweedfs-up.sh with your S3_PORT / WEED_BASE_PORT)
#   BENCH_ROUNDS=2  BENCH_SECONDS=5  BENCH_CONNS="1 16 64"  BENCH_BIN=dir of a release `silo` (else one is built)
#   BENCH_SILO_ARGS="…" extra `silo serve` flags
set -euo pipefail
cd "$(dirname "$0")/.."
backend=${1:-sqlite}
seconds=${BENCH_SECONDS:-5}
rounds=${BENCH_ROUNDS:-2}
read -r -a conns <<<"${BENCH_CONNS:-1 16 64}"
BENCH_WORK_PREFIX=silo-small-uploads
# shellcheck source=bench/lib.sh
source bench/lib.sh
need_tools wrk bc
release_silo
load_start=$(cut -d' ' -f1-3 /proc/loadavg)

flags=()
describe_backend() { [ "$backend" = sqlite ] && echo "SQLite + disk" || echo "PostgreSQL (fsync on) + SeaweedFS S3"; }
case $backend in
sqlite) ;;
postgres)
    read -r pg_url pg_dir < <(scripts/postgres-up.sh)
    cleanup_hooks+=("scripts/postgres-down.sh '$pg_dir'")
    # The test cluster runs without durability; an upload benchmark needs the commit's fsync back.
    psql -q "$pg_url" -c 'ALTER SYSTEM SET fsync = on' -c 'ALTER SYSTEM SET synchronous_commit = on' \
        -c 'ALTER SYSTEM SET full_page_writes = on' -c 'SELECT pg_reload_conf()' >/dev/null
    vars=$(scripts/seaweedfs-up.sh)
    eval "$vars"
    cleanup_hooks+=("scripts/seaweedfs-down.sh '$SEAWEEDFS_DIR'")
    flags=(--metadata "$pg_url" --blobs "$SILO_TEST_S3_URL")
    ;;
*) echo "usage: bench/small_uploads.sh [sqlite|postgres]" >&2; exit 2 ;;
esac

head -c 1024 /dev/urandom >"$work/small.bin"
mkdir -p "$work/m"
# /metrics needs an admin key when rules are set.
admin_key=$(head -c 24 /dev/urandom | base64 | tr -d '/+=')
echo "$admin_key" >"$work/admin.keys"
start_silo "$work/data" --admin-key-file "$work/admin.keys" "${flags[@]}"
[ -n "$silo_port" ] || { cat "$work/data.log" >&2; exit 1; }
base="http://127.0.0.1:$silo_port/v0/b/bench.appspot.com/o"
# The first upload creates the bucket.
curl -sS -f -o /dev/null -X POST -H 'Content-Type: application/octet-stream' --data-binary @"$work/small.bin" \
    "$base?name=warm-up"

uploads=1
for round in $(seq "$rounds"); do
    for threads in 1 16; do
        rm -rf "$work/disk"
        mkdir -p "$work/disk"
        on_server python3 bench/disk_ceiling.py "$work/disk" "$threads" "$seconds" >>"$work/m/disk-$threads"
    done
    rm -rf "$work/disk"
    for c in "${conns[@]}"; do
        out=$(on_load wrk -t1 -c"$c" -d"${seconds}s" --timeout 10s -s bench/small_uploads.lua \
            "$base?name=r$round/c$c/" -- "$work/small.bin")
        line=$(grep -E '^[0-9]+ [0-9]+ [0-9]+ [0-9]+ [0-9]+$' <<<"$out") || { echo "$out" >&2; exit 1; }
        read -r _ _ _ requests errors <<<"$line"
        [ "$errors" -eq 0 ] || echo "round $round, $c connections: $errors failed requests" >&2
        uploads=$((uploads + requests))
        echo "$line" >>"$work/m/silo-$c"
    done
done

# The bytes came back as uploaded (one object; the crash test checks every acknowledged one).
# (wrk calls the request function a few times before it sends, so the first name's counter is not 1.)
listing=$(curl -sS "$base?prefix=r1/c${conns[0]}/&maxResults=1")
first=$(python3 -c 'import json, sys; print(json.loads(sys.argv[1])["items"][0]["name"])' "$listing") || { echo "listing: $listing" >&2; exit 1; }
cmp -s <(curl -sS "$base/${first//\//%2F}?alt=media") "$work/small.bin" || { echo "$first differs" >&2; exit 1; }
metrics=$(curl -sS -H "Authorization: Bearer $admin_key" "http://127.0.0.1:$silo_port/metrics" || true)
metric() { awk -v n="$1" '$1 == n {print $2}' <<<"$metrics"; }
stop_silo
bytes_line=""
if [ "$backend" = sqlite ]; then
    # After a clean stop the WAL is checkpointed into metadata.sqlite.
    blob_bytes=$(du -sb "$work/data/blobs" | cut -f1)
    meta_bytes=$(find "$work/data" -maxdepth 1 -name 'metadata.sqlite*' -printf '%s\n' | awk '{s += $1} END {print s + 0}')
    bytes_line="on disk per object ($uploads objects): $((blob_bytes / uploads)) B of blob files (du), $((meta_bytes / uploads)) B of metadata.sqlite + WAL"
fi

med() { median $(awk -v c="$2" '{print $c}' "$work/m/$1"); }
listed() { awk -v c="$2" '{printf "%s%s", (NR > 1 ? ", " : ""), $c}' "$work/m/$1"; }
ms() { awk -v v="$1" 'BEGIN { printf "%.1f", v / 1000 }'; }
echo "$(describe_backend) · $(readlink -f "$bin/silo") · $rounds rounds of ${seconds}s · $pinning · load before: $load_start, after: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| what | ops/s (median) | p50 ms | p99 ms | ops/s per round |"
echo "|---|---|---|---|---|"
for t in 1 16; do
    echo "| disk, $t thread(s) | $(med "disk-$t" 1) | $(ms "$(med "disk-$t" 2)") | $(ms "$(med "disk-$t" 3)") | $(listed "disk-$t" 1) |"
done
for c in "${conns[@]}"; do
    echo "| Silo, $c connection(s) | $(med "silo-$c" 1) | $(ms "$(med "silo-$c" 2)") | $(ms "$(med "silo-$c" 3)") | $(listed "silo-$c" 1) |"
done
echo
if [ -s "$work/m/silo-16" ] && [ -s "$work/m/silo-64" ] && [ -s "$work/m/silo-1" ]; then
    echo "Silo at 16 connections / disk at 16 threads: $(ratio "$(med silo-16 1)" "$(med disk-16 1)") (goal ≥ 0.80);" \
        "p99 at 64 / p99 at 1: $(ratio "$(med silo-64 3)" "$(med silo-1 3)") (goal < 4)"
fi
commits=$(metric silo_metadata_commits_total) groups=$(metric silo_metadata_commit_groups_total)
if [ -n "$groups" ] && [ -n "$commits" ]; then
    echo "metadata commits: $commits in $groups durability steps ($(ratio "$commits" "$groups") per step)"
fi
[ -z "$bytes_line" ] || echo "$bytes_line"
