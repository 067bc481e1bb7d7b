#!/usr/bin/env bash
# SiloStorage's write(toFile:) against `curl -o` of the same download URL, in one run: a 256 MiB and a 64 MiB
# object served by `silo serve` (release build, port 0, temporary data dir) on loopback. Three alternating rounds
# per client; each figure is the median. Clients: curl, the SDK on its libcurl transport (the Linux default) and
# the SDK on URLSession, each SDK run a fresh SiloBenchSDK process so its peak RSS (VmHWM) belongs to that one
# download. Goal: libcurl transport >= 0.9x curl, peak RSS flat in object size.
# Writes bench/results/sdk-download.md. Stops what it starts. Usage: bench/sdk-download.sh [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
swift build -c release -Xswiftc -cross-module-optimization --product silo >/dev/null
swift build -c release -Xswiftc -cross-module-optimization --product SiloBenchSDK >/dev/null
bin=$(swift build -c release -Xswiftc -cross-module-optimization --show-bin-path)
work=$(mktemp -d /tmp/silo-sdk-bench-XXXXXX)
server_pid=""
cleanup() { [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT

"$bin/silo" serve --port 0 --data "$work/data" >"$work/server.log" 2>&1 &
server_pid=$!
for _ in $(seq 100); do grep -q 'http://127.0.0.1:' "$work/server.log" && break; sleep 0.1; done
port=$(grep -o 'http://127.0.0.1:[0-9]*' "$work/server.log" | head -1 | cut -d: -f3)
bucket=bench.appspot.com
base="http://127.0.0.1:$port/v0/b/$bucket/o"

median() { printf '%s\n' "$@" | sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
mibs() { echo "$1 / 1048576 / $2" | bc -l; }   # bytes, seconds → MiB/s

# One download by a client; appends "<MiB/s> <peak RSS MiB>" to $work/results-<client>-<size>.
record() { echo "$(mibs $(($2 * 1048576)) "$3") $(($4 / 1024))" >>"$work/results-$1-$2"; }
download() {
    local client=$1 size=$2 out="$work/out" line seconds kib
    rm -f "$out"
    if [ "$client" = curl-cli ]; then
        line=$(/usr/bin/time -f 'vmhwm_kib=%M' curl -sS -o "$out" -w 'seconds=%{time_total}\n' \
            "$base/obj-$size?alt=media" 2>&1)
    else
        line=$("$bin/SiloBenchSDK" "$port" "$bucket" "obj-$size" "$out" "${client#sdk-}")
    fi
    seconds=$(grep -o 'seconds=[0-9.e-]*' <<<"$line" | cut -d= -f2)
    kib=$(grep -o 'vmhwm_kib=[0-9]*' <<<"$line" | cut -d= -f2)
    cmp -s "$out" "$work/obj-$size" || { echo "$client: downloaded bytes differ" >&2; exit 1; }
    rm -f "$out"
    record "$client" "$size" "$seconds" "$kib"
}

clients=(curl-cli sdk-curl sdk-urlsession)
sizes=(256 64)
for size in "${sizes[@]}"; do
    head -c $((size * 1048576)) /dev/urandom >"$work/obj-$size"
    curl -sS -o /dev/null -X POST -H 'Content-Type: application/octet-stream' -T "$work/obj-$size" "$base?name=obj-$size"
    # One unmeasured download per client first, so every measured round starts from the same warm caches.
    for client in "${clients[@]}"; do download "$client" "$size"; rm -f "$work/results-$client-$size"; done
    for _ in $(seq "$rounds"); do
        for client in "${clients[@]}"; do download "$client" "$size"; done
    done
done
load=$(cut -d' ' -f1-3 /proc/loadavg)
kill -TERM "$server_pid"; wait "$server_pid" || true; server_pid=""

speed() { median $(cut -d' ' -f1 "$work/results-$1-$2"); }
rss() { median $(cut -d' ' -f2 "$work/results-$1-$2"); }
all() { cut -d' ' -f"$3" "$work/results-$1-$2" | xargs printf '%.0f ' | sed 's/ $//'; }
report=bench/results/sdk-download.md
{
    echo "# SiloStorage write(toFile:) vs curl -o ($(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, load $load)"
    echo
    echo "Loopback, \`silo serve\` release build. Median of $rounds alternating rounds per client (all rounds in"
    echo "brackets). Peak RSS is each client process's VmHWM. Every download was compared byte for byte with the"
    echo "uploaded file."
    echo
    echo "| object | client | MiB/s | × curl -o | peak RSS (MiB) |"
    echo "|---|---|---|---|---|"
    for size in "${sizes[@]}"; do
        reference=$(speed curl-cli "$size")
        for client in "${clients[@]}"; do
            case $client in
            curl-cli) name='`curl -o file`' ;;
            sdk-curl) name='SDK `write(toFile:)`, CurlStorageTransport (Linux default)' ;;
            sdk-urlsession) name='SDK `write(toFile:)`, URLSessionStorageTransport' ;;
            esac
            echo "| $size MiB | $name | $(printf '%.0f' "$(speed "$client" "$size")") [$(all "$client" "$size" 1)] |" \
                "$(echo "$(speed "$client" "$size") / $reference" | bc -l | xargs printf '%.2f') |" \
                "$(rss "$client" "$size") [$(all "$client" "$size" 2)] |"
        done
    done
    echo
    echo "Command: \`bench/sdk-download.sh $rounds\`"
} >"$report"
cat "$report"
