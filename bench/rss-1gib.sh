#!/usr/bin/env bash
# Uploads and downloads a 1 GiB object through `silo serve` and reports the server's peak RSS (VmHWM), which must
# stay under 64 MiB whatever the object size, with curl's throughput next to a `dd conv=fsync` disk reference from
# the same run. Loopback only; stops what it starts. Usage: bench/rss-1gib.sh [SIZE_MIB]
set -euo pipefail
cd "$(dirname "$0")/.."
size_mib=${1:-1024}
binary=.build/release/silo
[ -x "$binary" ] || swift build -c release -Xswiftc -cross-module-optimization --product silo >/dev/null
work=$(mktemp -d /tmp/silo-bench-XXXXXX)
server_pid=""
cleanup() { [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT

head -c $((size_mib * 1048576)) /dev/urandom >"$work/object"
"$binary" serve --port 0 --data "$work/data" >"$work/server.log" 2>&1 &
server_pid=$!
for _ in $(seq 100); do grep -q 'http://127.0.0.1:' "$work/server.log" && break; sleep 0.1; done
port=$(grep -o 'http://127.0.0.1:[0-9]*' "$work/server.log" | head -1 | cut -d: -f3)
base="http://127.0.0.1:$port/v0/b/bench.appspot.com/o"
rss() { awk '/VmHWM/ {print int($2/1024)}' "/proc/$server_pid/status"; }
idle_rss=$(rss)

t0=$(date +%s.%N)
dd if="$work/object" of="$work/dd-copy" bs=1M conv=fsync status=none
t1=$(date +%s.%N)
dd_mibs=$(echo "$size_mib / ($t1 - $t0)" | bc -l)
rm -f "$work/dd-copy"

media=$(curl -sS -o /dev/null -w '%{speed_upload}' -X POST -H 'Content-Type: application/octet-stream' -T "$work/object" "$base?name=big.bin")
start=$(curl -sS -D - -o /dev/null -X POST -H 'X-Goog-Upload-Protocol: resumable' -H 'X-Goog-Upload-Command: start' "$base?name=big-resumable.bin" | tr -d '\r' | awk -F': ' 'tolower($1)=="x-goog-upload-url" {print $2}')
resumable=$(curl -sS -o /dev/null -w '%{speed_upload}' -X POST -H 'X-Goog-Upload-Command: upload, finalize' -H 'X-Goog-Upload-Offset: 0' -T "$work/object" "$start")
download=$(curl -sS -o "$work/back" -w '%{speed_download}' "$base/big.bin?alt=media")
cmp -s "$work/object" "$work/back" && same=yes || same=NO
rm -f "$work/back"
download_null=$(curl -sS -o /dev/null -w '%{speed_download}' "$base/big.bin?alt=media")
peak_rss=$(rss)
kill -TERM "$server_pid"; wait "$server_pid" || true; server_pid=""

mib() { echo "$1 / 1048576" | bc -l | xargs printf '%.0f'; }
report=bench/results/rss-1gib.md
{
    echo "# Silo peak RSS with a ${size_mib} MiB object ($(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores)"
    echo
    echo "| measure | value | reference (same run) | ratio |"
    echo "|---|---|---|---|"
    echo "| server peak RSS (VmHWM) after all transfers | ${peak_rss} MiB | idle ${idle_rss} MiB; limit 64 MiB | $( [ "$peak_rss" -lt 64 ] && echo 'under limit' || echo 'OVER LIMIT') |"
    echo "| v0 media upload (curl -T) | $(mib "$media") MiB/s | dd conv=fsync $(printf '%.0f' "$dd_mibs") MiB/s | $(echo "$media / 1048576 / $dd_mibs" | bc -l | xargs printf '%.2f') |"
    echo "| v0 resumable upload, one finalize request | $(mib "$resumable") MiB/s | dd conv=fsync $(printf '%.0f' "$dd_mibs") MiB/s | $(echo "$resumable / 1048576 / $dd_mibs" | bc -l | xargs printf '%.2f') |"
    echo "| v0 download to a file (curl -o) | $(mib "$download") MiB/s | bytes identical: $same | |"
    echo "| v0 download to /dev/null | $(mib "$download_null") MiB/s | | |"
    echo
    echo "Command: \`bench/rss-1gib.sh $size_mib\`"
} >"$report"
cat "$report"
[ "$same" = yes ] && [ "$peak_rss" -lt 64 ]
