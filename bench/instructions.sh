#!/usr/bin/env bash
# Instructions per request of `silo serve` (user space only), counted by valgrind's callgrind: the same count for the
# same binary and requests however busy the machine is, so two builds can be compared to the percent where wall
# clocks and CPU time on a shared machine swing by ten. The kernel's share of a request (socket reads and sends)
# is not counted; bench/profile.sh shows it.
#
#   bench/instructions.sh get        1 KiB v0 GETs (`alt=media`), as bench/run's small-object figure
#   bench/instructions.sh metadata   v0 getMetadata
#   bench/instructions.sh unique     1 KiB v0 GETs whose heads never repeat (a counter in the query): what the
#                                    replay memo costs a request it cannot answer
#   bench/instructions.sh random     v0 getMetadata of random names in a bucket of RANDOM_OBJECTS (default 100,000)
#                                    objects: the cold path, where caches miss and the store is asked
#
# One event loop, the same public rules file as bench/run, a warm-up, then INSTRUCTIONS_SECONDS (default 4) of
# requests over 8 keep-alive connections (wrk; some thousands under valgrind), counted from a zeroed collector. Prints instructions per request and the top
# functions by their own instructions and by inclusive ones. BENCH_BIN=dir of a release `silo` skips the build;
# INSTRUCTIONS_KEEP=DIR keeps the callgrind file there (for callgrind_annotate or kcachegrind).
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-get}
case "$mode" in get | metadata | unique | random) ;; *) echo "usage: bench/instructions.sh get|metadata|unique|random" >&2; exit 64 ;; esac
BENCH_WORK_PREFIX=silo-instructions
# shellcheck source=bench/lib.sh
source bench/lib.sh
need_tools valgrind wrk
release_silo
head -c 1024 /dev/urandom >"$work/small.bin"
if [ "$mode" = random ]; then
    # SEEDING: one real upload, its row cloned RANDOM_OBJECTS times by SiloBenchSeed (as bench/run's listing does:
    # real uploads would take minutes here). Every clone is a real row of the shape the server writes; they share
    # the template's blob, so what this counts is the metadata side of a cold read.
    objects=${RANDOM_OBJECTS:-100000}
    seed_port=$(free_port)
    "$bin/silo" serve --port "$seed_port" --data "$work/data" --rules "$work/public.rules" \
        --create-buckets-on-upload true >"$work/seed.log" 2>&1 &
    seed_pid=$!
    for _ in $(seq 100); do curl -s -o /dev/null "http://127.0.0.1:$seed_port/" && break; sleep 0.1; done
    curl -sS -f -o /dev/null -X POST --data-binary @"$work/small.bin" \
        "http://127.0.0.1:$seed_port/v0/b/bench.appspot.com/o?name=seed%2Ftemplate"
    kill "$seed_pid"
    wait "$seed_pid" 2>/dev/null || true
    [ -x "$bin/SiloBenchSeed" ] || swift build -c release -Xswiftc -cross-module-optimization --product SiloBenchSeed >/dev/null
    "$bin/SiloBenchSeed" "$work/data/metadata.sqlite" bench.appspot.com seed/template "$objects" >/dev/null
fi

port=$(free_port)
mkdir -p "$work/cg"
valgrind --tool=callgrind --callgrind-out-file="$work/cg/out.%p" "$bin/silo" serve --port "$port" --threads 1 \
    --data "$work/data" --rules "$work/public.rules" --create-buckets-on-upload true >"$work/silo.log" 2>&1 &
pids+=($!)
base="http://127.0.0.1:$port"
for _ in $(seq 600); do curl -s -o /dev/null "$base/" && break; sleep 0.1; done
curl -sS -f -o /dev/null -X POST --data-binary @"$work/small.bin" "$base/v0/b/bench.appspot.com/o?name=small.bin"
case "$mode" in
get | unique) url="$base/v0/b/bench.appspot.com/o/small.bin?alt=media" ;;
metadata) url="$base/v0/b/bench.appspot.com/o/small.bin" ;;
random) url="$base/v0/b/bench.appspot.com/o/d00%2Fobj00000" ;;
esac
wrk_script=()
if [ "$mode" = unique ]; then
    # v0 ignores query parameters it does not know: the same object, a new head every time.
    cat >"$work/unique.lua" <<'LUA'
local n = 0
request = function()
  n = n + 1
  return wrk.format("GET", wrk.path .. "&n=" .. n)
end
LUA
    wrk_script=(-s "$work/unique.lua")
elif [ "$mode" = random ]; then
    # SiloBenchSeed's names: dNN/objNNNNN, 10,000 under each dNN/. A fixed seed: the same names every run.
    cat >"$work/random.lua" <<LUA
local objects = $objects
math.randomseed(42)
request = function()
  local i = math.random(0, objects - 1)
  return wrk.format("GET", string.format("/v0/b/bench.appspot.com/o/d%02d%%2Fobj%05d", math.floor(i / 10000), i % 10000))
end
LUA
    wrk_script=(-s "$work/random.lua")
fi
# The first v0 read gives the object its download token (a write); then every cache is warm.
curl -sS -f -o /dev/null "$url"
# Random names warm longer: each reader connection prepares its statements on first use.
warm=2
[ "$mode" = random ] && warm=6
on_load wrk -t1 -c8 -d"${warm}s" "${wrk_script[@]}" "$url" >/dev/null
callgrind_control -z >/dev/null
out=$(on_load wrk -t1 -c8 -d"${INSTRUCTIONS_SECONDS:-4}s" "${wrk_script[@]}" "$url")
served=$(awk '/requests in/ {print $1}' <<<"$out")
callgrind_control -d >/dev/null
file=$(ls "$work"/cg/out.*.1)
total=$(callgrind_annotate "$file" 2>/dev/null | awk '/PROGRAM TOTALS/ {gsub(",", "", $1); print $1}')
echo "== silo serve, $mode: $served requests, $total instructions, $((total / served)) instructions per request"
demangle() { if command -v swift >/dev/null; then swift demangle --simplified; else cat; fi; }
# callgrind_annotate's rows: "12,345 (1.23%)  file:function [object]", as instructions per request.
per_request() {
    grep -E '^ *[0-9,]+ ' | grep -v 'PROGRAM TOTALS' | sed -E 's/ \[[^]]*\]$//' \
        | sed -E 's/^ *([0-9,]+) +\( *[0-9.]+%\) +/\1 /' \
        | awk -v n="$served" '{c = $1; gsub(",", "", c); $1 = ""; printf "%8.0f %s\n", c / n, substr($0, 2, 150)}'
}
echo "== by own instructions (per request)"
callgrind_annotate "$file" --threshold=100 2>/dev/null | demangle | per_request | sed -n '4,33p'
echo "== by inclusive instructions (per request)"
callgrind_annotate "$file" --inclusive=yes --threshold=100 2>/dev/null | demangle | per_request | sed -n '6,50p'
if [ -n "${INSTRUCTIONS_KEEP:-}" ]; then
    mkdir -p "$INSTRUCTIONS_KEEP"
    cp "$file" "$INSTRUCTIONS_KEEP/callgrind.$mode"
    echo "kept: $INSTRUCTIONS_KEEP/callgrind.$mode"
fi
