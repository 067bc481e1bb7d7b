#!/usr/bin/env bash
# What storage events cost on the write path: small v0 uploads (1 KiB, wrk POSTs, 8 connections) into a release
# `silo serve`, three ways in one run, interleaved each round:
#   base    EVENTS_BASE_BIN (required: a release silo built from a commit before events): the reference;
#   off     this build, no webhook (no outbox rows; the usage counts are kept all the same);
#   on      this build with --event-webhook to a local receiver that answers 200 (two outbox rows per upload:
#           each overwrite sends finalize and delete); its CPU is counted until the receiver stops receiving, so it
#           includes the delivery of every event the uploads made.
# Prints per configuration the median uploads/s and server CPU µs per upload (both with the spread over rounds),
# and their ratios to base. Server on CPU 0, wrk and the receiver on CPU 1 (bench/lib.sh). Stops what it starts.
#
# Usage: bench/events.sh [ROUNDS]   (default 3; EVENTS_SECONDS=10 per measurement; EVENTS_BIN=PATH runs that
#   binary as this build instead of building one)
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
seconds=${EVENTS_SECONDS:-10}
BENCH_WORK_PREFIX=silo-events
# shellcheck source=bench/lib.sh
. bench/lib.sh
base_bin=${EVENTS_BASE_BIN:?set EVENTS_BASE_BIN to a release silo built before events (e.g. a worktree of eafe4dc)}
if [ -n "${EVENTS_BIN:-}" ]; then
    this_bin=$(realpath "$EVENTS_BIN")
else
    swift build -c release -Xswiftc -cross-module-optimization --product silo >/dev/null
    this_bin=$(swift build -c release -Xswiftc -cross-module-optimization --show-bin-path)/silo
fi
mkdir -p "$work/base" "$work/this" "$work/m"
ln -s "$(realpath "$base_bin")" "$work/base/silo"
ln -s "$this_bin" "$work/this/silo"
head -c 1024 /dev/urandom >"$work/body"
head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$work/secret"

# The receiver: answers POSTs with 200 and GET with how many POSTs it has had.
receiver_port=$(free_port)
cat >"$work/receiver.py" <<'PY'
import http.server, sys, threading
count, lock = [0], threading.Lock()
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a): pass
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        with lock: count[0] += 1
        self.send_response(200); self.send_header("Content-Length", "0"); self.end_headers()
    def do_GET(self):
        body = str(count[0]).encode()
        self.send_response(200); self.send_header("Content-Length", str(len(body))); self.end_headers()
        self.wfile.write(body)
http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
PY
# exec (through taskset), so that $! is the receiver itself and the exit cleanup stops it.
(exec taskset -c "$load_cpu" python3 "$work/receiver.py" "$receiver_port") &
pids+=($!)

# Each wrk connection uploads its own rotating set of names, so uploads are mostly overwrites of existing objects.
cat >"$work/post.lua" <<LUA
local body = io.open("$work/body", "rb"):read("*a")
local n = 0
request = function()
  n = n + 1
  return wrk.format("POST", "/v0/b/bench.appspot.com/o?name=ev-" .. (n % 500), nil, body)
end
LUA

# One measurement of configuration $1 (binary dir $2, extra flags after): appends "uploads/s cpu-µs/upload".
measure_uploads() {
    local name=$1 dir=$2 before after out requests
    shift 2
    bin=$dir
    start_silo "$work/data-$name" "$@"
    [ -n "$silo_port" ] || { cat "$work/data-$name.log" >&2; exit 1; }
    before=$(cpu_ticks "$silo_pid")
    out=$(on_load wrk -t1 -c8 -d"${seconds}s" --timeout 10s -s "$work/post.lua" "http://127.0.0.1:$silo_port")
    if [ "$name" = on ]; then
        # Until the receiver has had everything: no new event for a second.
        local seen=-1 now
        while now=$(curl -s "http://127.0.0.1:$receiver_port/") && [ "$now" != "$seen" ]; do
            seen=$now
            sleep 1
        done
    fi
    after=$(cpu_ticks "$silo_pid")
    if grep -q 'Non-2xx' <<<"$out"; then echo "$name: $(grep Non-2xx <<<"$out")" >&2; fi
    requests=$(awk '/requests in/ {print $1}' <<<"$out")
    echo "$(awk '/^Requests\/sec/ {print $2}' <<<"$out")" \
        "$(echo "($after - $before) * 1000000 / $clk_tck / ($requests + 0.000001)" | bc -l)" >>"$work/m/$name"
    stop_silo
    rm -rf "$work/data-$name"
}

for round in $(seq "$rounds"); do
    measure_uploads base "$work/base"
    measure_uploads off "$work/this"
    measure_uploads on "$work/this" --event-webhook "http://127.0.0.1:$receiver_port/hook" \
        --event-secret-file "$work/secret"
    echo "round $round done" >&2
done

echo "small uploads (1 KiB v0, 8 connections, ${seconds}s x $rounds rounds; $pinning)"
printf '%-5s %12s %-28s %12s %-28s %8s %8s\n' config uploads/s "(rounds)" cpu-µs/up "(rounds)" "rate/b" "cpu/b"
base_rate=$(col base 1)
base_cpu=$(col base 2)
for name in base off on; do
    printf '%-5s %12s %-28s %12s %-28s %8s %8s\n' "$name" "$(fmt "$(col $name 1)")" "($(all $name 1))" \
        "$(fmt "$(col $name 2)")" "($(all $name 2))" "$(ratio "$(col $name 1)" "$base_rate")" \
        "$(ratio "$(col $name 2)" "$base_cpu")"
done
