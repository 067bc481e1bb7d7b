#!/usr/bin/env bash
# Tail latency on every backend, against nginx in the same run: the 1 KiB GET p99 at 64 keep-alive connections with
# metadata in SQLite, in PostgreSQL, and in PostgreSQL with blobs in an S3 store (SeaweedFS); the same while four
# 64 MiB uploads run into the server (nginx takes the same uploads as WebDAV PUTs); and the spread of the req/s over
# ten fresh one-node runs on PostgreSQL. Writes bench/results/tail.md; bench/run calls it and includes the table.
# Usage: bench/tail.sh   (BENCH_SECONDS, BENCH_ROUNDS as in bench/run; BENCH_SPREAD_RUNS=10; BENCH_BIN=dir of a
# release `silo` to skip the build)
#
# Where things run: Silo and nginx on CPU 0, wrk and the uploading curls on CPU 1; PostgreSQL and SeaweedFS are not
# pinned (on a real deployment they are other machines; here they take CPU from both sides). PostgreSQL is the
# throwaway test cluster of scripts/postgres-up.sh (fsync off): the GET figures are read round trips, which fsync
# does not change.
set -euo pipefail
[ -n "${BENCH_TRACE:-}" ] && set -x
cd "$(dirname "$0")/.."
seconds=${BENCH_SECONDS:-5}
rounds=${BENCH_ROUNDS:-3}
spread_runs=${BENCH_SPREAD_RUNS:-10}
upload_mib=64
bucket=bench.appspot.com
progress() { echo "[tail $SECONDS s] $*" >&2; }
started_at=$(date -u +%Y-%m-%dT%H:%MZ)
load_start=$(cut -d' ' -f1-3 /proc/loadavg)

BENCH_WORK_PREFIX=silo-bench-tail
# shellcheck source=bench/lib.sh
source bench/lib.sh
# Run from bench/run (BENCH_BIN set), everything is installed and built already.
if [ -z "${BENCH_BIN:-}" ]; then
    scripts/install-deps.sh
    need_tools wrk bc
fi
release_silo

# ---- services -------------------------------------------------------------------------------------------------------
progress "starting PostgreSQL and SeaweedFS…"
read -r pg_url pg_dir < <(scripts/postgres-up.sh)
cleanup_hooks+=("scripts/postgres-down.sh '$pg_dir'")
vars=$(scripts/seaweedfs-up.sh)
eval "$vars"
cleanup_hooks+=("scripts/seaweedfs-down.sh '$SEAWEEDFS_DIR'")
# One database per configuration, so that neither sees the other's rows.
pg_s3_url=${pg_url%/*}/silo_s3
psql -q "$pg_url" -c 'CREATE DATABASE silo_s3' >/dev/null

mkdir -p "$work/www/dav" "$work/m"
chmod 777 "$work/www/dav"   # nginx's workers (nobody) write the WebDAV uploads
head -c 1024 /dev/urandom >"$work/www/small.bin"
head -c $((upload_mib << 20)) /dev/urandom >"$work/upload.bin"
chmod 644 "$work/www/small.bin"
start_nginx "$work/www"

# ---- the three Silo configurations, side by side -------------------------------------------------------------------
configs=(sqlite pg pgs3)
declare -A silo_pids silo_bases
describe() {
    case $1 in
    sqlite) echo "SQLite + disk" ;;
    pg) echo "PostgreSQL + disk" ;;
    pgs3) echo "PostgreSQL + S3 (SeaweedFS)" ;;
    esac
}
launch() { # config → silo_pids[config], silo_bases[config]
    local config=$1 dir flags=()
    dir=$work/silo-$config   # the same blobs directory on a relaunch (the spread runs)
    case $config in
    pg) flags=(--metadata "$pg_url") ;;
    pgs3) flags=(--metadata "$pg_s3_url" --blobs "$SILO_TEST_S3_URL") ;;
    esac
    start_silo "$dir" "${flags[@]}"
    [ -n "$silo_port" ] || { echo "silo ($config) did not start:" >&2; cat "$dir.log" >&2; exit 1; }
    silo_pids[$config]=$silo_pid
    silo_bases[$config]="http://127.0.0.1:$silo_port/v0/b/$bucket/o"
}
seed() { # config: the small object, read once (the first v0 read assigns its download token)
    local base=${silo_bases[$1]}
    curl -sS -f -o /dev/null -X POST -H 'Content-Type: application/octet-stream' -T "$work/www/small.bin" \
        "$base?name=small.bin"
    curl -sS -f -o /dev/null "$base/small.bin"
    cmp -s <(curl -sS "$base/small.bin?alt=media") "$work/www/small.bin" || { echo "$1: small.bin differs" >&2; exit 1; }
}
for config in "${configs[@]}"; do
    launch "$config"
    seed "$config"
done
progress "servers up: nginx $nginx_url; silo ${silo_bases[*]}"

# Four uploaders, each sending the same 64 MiB again and again until $work/stop-uploads exists.
uploads_start() { # url-of-index-function
    rm -f "$work/stop-uploads"
    uploader_pids=()
    local i
    for i in 1 2 3 4; do
        (
            while [ ! -e "$work/stop-uploads" ]; do
                on_load curl -sS -f -o /dev/null --max-time 120 "$@" "$($url_of "$i")" || true
            done
        ) &
        uploader_pids+=($!)
    done
    sleep 0.5   # the uploads are under way before the measurement starts
}
uploads_stop() {
    touch "$work/stop-uploads"
    local p
    for p in "${uploader_pids[@]}"; do wait "$p" 2>/dev/null || true; done
}
nginx_upload_url() { echo "$nginx_url/dav/up-$1.bin"; }
silo_upload_url() { echo "${silo_bases[$mixed_config]}?name=up-$1.bin"; }

small_of() { echo "${silo_bases[$1]}/small.bin?alt=media"; }
on_load wrk -t1 -c64 -d1s "$nginx_url/small.bin" >/dev/null
for config in "${configs[@]}"; do on_load wrk -t1 -c64 -d1s "$(small_of "$config")" >/dev/null; done

progress "idle: $rounds rounds × ${seconds}s × (nginx + ${#configs[@]} configurations)…"
for _ in $(seq "$rounds"); do
    measure idle-nginx "$nginx_pid" 64 "$nginx_url/small.bin"
    for config in "${configs[@]}"; do measure "idle-$config" "${silo_pids[$config]}" 64 "$(small_of "$config")"; done
done

progress "mixed: the same GETs while 4 × $upload_mib MiB uploads run…"
for _ in $(seq "$rounds"); do
    url_of=nginx_upload_url uploads_start -T "$work/upload.bin"
    measure mixed-nginx "$nginx_pid" 64 "$nginx_url/small.bin"
    uploads_stop
    for mixed_config in sqlite pg; do
        url_of=silo_upload_url uploads_start -X POST -H 'Content-Type: application/octet-stream' -T "$work/upload.bin"
        measure "mixed-$mixed_config" "${silo_pids[$mixed_config]}" 64 "$(small_of "$mixed_config")"
        uploads_stop
    done
done

progress "spread: $spread_runs fresh one-node runs on PostgreSQL + disk…"
for config in "${configs[@]}"; do kill "${silo_pids[$config]}"; wait "${silo_pids[$config]}" 2>/dev/null || true; done
spread=()
for run in $(seq "$spread_runs"); do
    launch pg
    on_load wrk -t1 -c64 -d1s "$(small_of pg)" >/dev/null
    for _ in $(seq "$rounds"); do measure "spread-$run" "${silo_pids[pg]}" 64 "$(small_of pg)"; done
    spread+=("$(col "spread-$run" 1)")
    kill "${silo_pids[pg]}"
    wait "${silo_pids[pg]}" 2>/dev/null || true
done
load_end=$(cut -d' ' -f1-3 /proc/loadavg)

# ---- report ---------------------------------------------------------------------------------------------------------
met() { if [ "$(echo "$1" | bc -l)" = 1 ]; then echo "met"; else echo "**not met**"; fi; }
p99() { col "$1" 3; }
spread_min=$(printf '%s\n' "${spread[@]}" | sort -g | head -1)
spread_max=$(printf '%s\n' "${spread[@]}" | sort -g | tail -1)
spread_ratio=$(ratio "$spread_max" "$spread_min")
row() { # label silo-series nginx-series goal-op goal
    local r
    r=$(ratio "$(p99 "$2")" "$(p99 "$3")")
    echo "| $1 | $(fmt "$(p99 "$2")" 2) [$(all "$2" 3 2)] | nginx $(fmt "$(p99 "$3")" 2) [$(all "$3" 3 2)] | $r | $4 $5 | $(met "$r $4 $5") |"
}
report=bench/results/tail.md
{
    echo "## Tail latency on every backend ($started_at, $(nproc) cores, load $load_start → $load_end)"
    echo
    echo "1 KiB v0 \`alt=media\` GET, wrk 64 keep-alive connections, ${seconds}s per run, median of $rounds rounds (rounds in"
    echo "brackets; servers took turns). $pinning; PostgreSQL and SeaweedFS unpinned. Mixed: four curl uploads of"
    echo "$upload_mib MiB each, repeated for the whole run (Silo: v0 media upload; nginx: WebDAV PUT of the same file)."
    echo
    echo "| figure | Silo p99 ms | reference p99 ms (same run) | ratio | goal | |"
    echo "|---|---|---|---|---|---|"
    row "idle, $(describe sqlite)" idle-sqlite idle-nginx "<=" 1
    row "idle, $(describe pg)" idle-pg idle-nginx "<=" 1.5
    row "idle, $(describe pgs3)" idle-pgs3 idle-nginx "<=" 2
    row "4 × $upload_mib MiB uploads running, $(describe sqlite)" mixed-sqlite mixed-nginx "<=" 0.5
    row "4 × $upload_mib MiB uploads running, $(describe pg)" mixed-pg mixed-nginx "<=" 0.5
    echo
    echo "| figure | Silo | reference | ratio | goal | |"
    echo "|---|---|---|---|---|---|"
    for config in "${configs[@]}"; do
        echo "| idle req/s, $(describe "$config") | $(fmt "$(col "idle-$config" 1)") (CPU $(fmt "$(col "idle-$config" 5)" 1) µs/req) | nginx $(fmt "$(col idle-nginx 1)") (CPU $(fmt "$(col idle-nginx 5)" 1) µs/req) | $(ratio "$(col "idle-$config" 1)" "$(col idle-nginx 1)") | | |"
    done
    echo "| req/s spread, $(describe pg), $spread_runs fresh runs (max / min of the runs' medians) | $(fmt "$spread_max") / $(fmt "$spread_min") [$(printf '%.0f ' "${spread[@]}" | sed 's/ $//')] | | $spread_ratio | < 1.5 | $(met "$spread_ratio < 1.5") |"
    echo
    echo "Command: \`bench/tail.sh\` (also run by \`bench/run\`)."
} >"$report"
cat "$report"
