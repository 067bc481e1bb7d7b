#!/usr/bin/env bash
# 256 MiB uploads into a release `silo serve` against the single-stream MD5 ceiling, in one run: the upload figure
# of bench/run, quick enough to repeat after each change. Each round measures, back to back, `openssl speed md5` on
# the server's core (the bound on any upload that returns md5Hash), then a resumable (`upload, finalize` in one
# request), a multipart and a media upload with curl -T; it prints each figure's median MiB/s and its ratio to the
# MD5 median. The server runs on CPU 0 and curl on CPU 1 (taskset), as in bench/run. Stops what it starts.
#
# On a shared machine the wall-clock rates swing with whatever else runs on CPU 0, so each upload's server CPU time
# (utime + stime from /proc, all threads) is printed too, as MiB per CPU-second: `openssl speed` measures MD5 in CPU
# time as well, so that ratio is the one other load disturbs least.
#
# Usage: bench/upload.sh [ROUNDS]   (default 5)
#   UPLOAD_MIB=256           object size
#   UPLOAD_SILO_ARGS="…"     extra `silo serve` flags
#   UPLOAD_SILO_BIN=PATH     run this `silo` binary instead of building one (to compare builds)
#   UPLOAD_PERF_STAT=1       also print `perf stat` of the server over the resumable uploads
#   UPLOAD_RSS_MIB=64        then 32 concurrent media uploads of this size (sparse); prints the server's peak RSS
#                            (VmHWM) over the run, which must stay < 64 MiB. 0 skips it.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-5}
size_mib=${UPLOAD_MIB:-256}
BENCH_WORK_PREFIX=silo-upload
BENCH_SILO_ARGS=${UPLOAD_SILO_ARGS:-}
# shellcheck source=bench/lib.sh
. bench/lib.sh
if [ -n "${UPLOAD_SILO_BIN:-}" ]; then
    mkdir "$work/bin"
    ln -s "$(realpath "$UPLOAD_SILO_BIN")" "$work/bin/silo"
    bin=$work/bin
else
    release_silo
fi
start_silo "$work/data"
server_pid=$silo_pid
[ -n "$silo_port" ] || { cat "$work/data.log" >&2; exit 1; }
base="http://127.0.0.1:$silo_port/v0/b/bench.appspot.com/o"

head -c $((size_mib << 20)) /dev/urandom >"$work/object"
boundary=silo-upload-boundary
{
    printf -- '--%s\r\nContent-Type: application/json; charset=utf-8\r\n\r\n' "$boundary"
    printf '{"name":"up-multipart.bin","contentType":"application/octet-stream"}\r\n'
    printf -- '--%s\r\nContent-Type: application/octet-stream\r\n\r\n' "$boundary"
    cat "$work/object"
    printf -- '\r\n--%s--\r\n' "$boundary"
} >"$work/multipart.body"

# Runs one upload; appends its wall MiB/s to the array named $2 and its server-CPU MiB/s to the array named $3.
measure() {
    local before after seconds
    before=$(cpu_ticks "$server_pid")
    seconds=$("$1")
    after=$(cpu_ticks "$server_pid")
    declare -n wall_rates=$2 cpu_rates=$3
    wall_rates+=("$(mibs "$seconds")")
    cpu_rates+=("$(echo "$size_mib * $clk_tck / ($after - $before + 0.0001)" | bc -l)")
}
mibs() { echo "$size_mib / $1" | bc -l; }
md5_speed() {
    on_server openssl speed -seconds 2 -bytes 1048576 md5 2>/dev/null \
        | awk '$1 == "md5" {v = $NF; sub(/k$/, "", v); print v * 1000 / 1048576}'
}
resumable() {
    local url
    url=$(curl -sS -f -D - -o /dev/null -X POST -H 'X-Goog-Upload-Protocol: resumable' \
        -H 'X-Goog-Upload-Command: start' -H "X-Goog-Upload-Header-Content-Length: $((size_mib << 20))" \
        "$base?name=up-resumable.bin" | tr -d '\r' | awk -F': ' 'tolower($1)=="x-goog-upload-url" {print $2}')
    on_load curl -sS -f -o /dev/null -w '%{time_total}' -X POST \
        -H 'X-Goog-Upload-Command: upload, finalize' -H 'X-Goog-Upload-Offset: 0' -T "$work/object" "$url"
}
multipart() {
    on_load curl -sS -f -o /dev/null -w '%{time_total}' -X POST -H 'X-Goog-Upload-Protocol: multipart' \
        -H "Content-Type: multipart/related; boundary=$boundary" -T "$work/multipart.body" "$base"
}
media() {
    on_load curl -sS -f -o /dev/null -w '%{time_total}' -X POST \
        -H 'Content-Type: application/octet-stream' -T "$work/object" "$base?name=up-media.bin"
}

# Warm-up: the first upload creates the bucket (resumable starts need it); page cache, first-use allocations.
media >/dev/null
resumable >/dev/null
md5=() res=() mul=() med=() res_cpu=() mul_cpu=() med_cpu=()
perf_pid=""
for round in $(seq "$rounds"); do
    md5+=("$(md5_speed)")
    if [ "${UPLOAD_PERF_STAT:-}" = 1 ]; then
        perf stat -p "$server_pid" -o "$work/perf-stat.$round" &
        perf_pid=$!
        sleep 0.2
    fi
    measure resumable res res_cpu
    if [ -n "$perf_pid" ]; then kill -INT "$perf_pid"; wait "$perf_pid" || true; perf_pid=""; fi
    measure multipart mul mul_cpu
    measure media med med_cpu
done
rss_mib=${UPLOAD_RSS_MIB:-64}
if [ "$rss_mib" -gt 0 ]; then
    truncate -s "$((rss_mib << 20))" "$work/sparse"
    p=()
    for i in $(seq 32); do
        on_load curl -sS -f -o /dev/null --max-time 600 -X POST \
            -H 'Content-Type: application/octet-stream' -T "$work/sparse" "$base?name=rss-$i" &
        p+=($!)
    done
    for i in "${p[@]}"; do wait "$i"; done
fi
peak_rss=$(awk '/VmHWM/ {print int($2 / 1024)}' "/proc/$server_pid/status")
cmp -s <(curl -sS "$base/up-resumable.bin?alt=media") "$work/object" \
    || { echo "resumable upload stored different bytes" >&2; exit 1; }

m=$(fmt "$(median "${md5[@]}")")
listed() { printf '%.0f ' "$@"; }
echo "$rounds rounds of $size_mib MiB, server on CPU $server_cpu, curl on CPU $load_cpu; load: $(cut -d' ' -f1-3 /proc/loadavg)"
readlink -f "$bin/silo"
printf '%-10s %12s %6s   %16s %6s\n' "" "wall MiB/s" "/md5" "MiB/server-CPU-s" "/md5"
printf '%-10s %12s %6s   %16s %6s   (md5: %s)\n' md5 "$m" "1.00" "$m" "1.00" "$(listed "${md5[@]}")"
for f in resumable:res multipart:mul media:med; do
    declare -n wall="${f#*:}" cpu="${f#*:}_cpu"
    w=$(fmt "$(median "${wall[@]}")") c=$(fmt "$(median "${cpu[@]}")")
    printf '%-10s %12s %6s   %16s %6s   (wall: %s)\n' "${f%%:*}" "$w" "$(ratio "$w" "$m")" "$c" "$(ratio "$c" "$m")" \
        "$(listed "${wall[@]}")"
done
[ "$rss_mib" -gt 0 ] && echo "peak RSS over the run, with 32 concurrent $rss_mib MiB uploads: $peak_rss MiB"
if [ "${UPLOAD_PERF_STAT:-}" = 1 ]; then
    echo "== perf stat, server, last resumable upload"
    grep -E 'task-clock|context-switches|page-faults|seconds time' "$work/perf-stat.$rounds"
fi
