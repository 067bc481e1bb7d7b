#!/usr/bin/env bash
# Thumbnails: a 12-megapixel JPEG → 256×256 WebP (cover), made by a release `silo serve --images` against
# `vipsthumbnail` on the same file in the same run, and a cached thumbnail against a 1 KiB GET on the same server.
# Both tools run on CPU 0 and the load generators on CPU 1 (bench/lib.sh's pinning); each figure is the median of
# ROUNDS rounds, the tools taking turns within a round. Prints a table and writes bench/results/thumbnail.md.
#
#   vipsthumbnail: one process makes N thumbnails (N links to the same file), so its startup is paid once, with
#     libvips' default threads; its figure is N / wall time, and its user+system time / N.
#   Silo, transform: the result cache off (cacheBytes 0), so every request transforms; wrk with 1 connection
#     (requests one after another, as vipsthumbnail's files are); thumbnails/s and server CPU per request.
#   Silo, cached: a second server with the cache on, one warm-up request, then wrk with 64 connections on the
#     thumbnail, on a 1 KiB object's plain download, and on a plain download of an object holding the thumbnail's
#     own bytes (the same response size: what the thumbnail path costs beyond a download).
#
# Usage: bench/thumbnail.sh [ROUNDS]   (default 3)
#   BENCH_SECONDS=5     length of each wrk run
#   THUMB_FILES=20      thumbnails per vipsthumbnail round
#   BENCH_BIN=DIR       a directory holding a release `silo` (else one is built)
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
seconds=${BENCH_SECONDS:-5}
files=${THUMB_FILES:-20}
bucket=bench.appspot.com
BENCH_WORK_PREFIX=silo-thumbnail
# shellcheck source=bench/lib.sh
. bench/lib.sh
scripts/install-deps.sh
need_tools wrk
release_silo

# ---- the image: 4000×3000 (12 MP), smooth ramps and a zone plate, JPEG Q=90 ------------------------------------------
d=$work/img
mkdir -p "$d/in" "$work/out" "$work/m"
vips grey "$d/h.v" 4000 3000
vips linear "$d/h.v" "$d/r.v" 255 0 --uchar
vips grey "$d/gv.v" 3000 4000
vips rot "$d/gv.v" "$d/gvr.v" d90
vips linear "$d/gvr.v" "$d/g.v" 255 0 --uchar
vips zone "$d/z.v" 4000 3000
vips linear "$d/z.v" "$d/b.v" 127.5 127.5 --uchar
vips bandjoin "$d/r.v $d/g.v $d/b.v" "$d/rgb.v"
vips copy "$d/rgb.v" "$d/rgb2.v" --interpretation srgb
vips copy "$d/rgb2.v" "$d/photo.jpg[Q=90]"
rm -f "$d"/*.v
for i in $(seq "$files"); do ln "$d/photo.jpg" "$d/in/p$i.jpg"; done
head -c 1024 /dev/urandom >"$d/small.bin"

# ---- servers --------------------------------------------------------------------------------------------------------
images() { # cache-bytes
    cat <<JSON
{"cacheBytes": $1, "maxConcurrentTransforms": 1,
 "buckets": {"$bucket": {"sizes": ["256x256"], "formats": ["webp"]}}}
JSON
}
images 0 >"$work/images-nocache.json"
images $((64 << 20)) >"$work/images-cache.json"
start_silo "$work/nocache" --images "$work/images-nocache.json"
nocache_pid=$silo_pid nocache_port=$silo_port
start_silo "$work/cache" --images "$work/images-cache.json"
cache_pid=$silo_pid cache_port=$silo_port
for port in "$nocache_port" "$cache_port"; do
    wait_http "http://127.0.0.1:$port/"
    curl -sf -o /dev/null -H 'Content-Type: image/jpeg' --data-binary @"$d/photo.jpg" \
        "http://127.0.0.1:$port/v0/b/$bucket/o?name=photo.jpg"
    curl -sf -o /dev/null -H 'Content-Type: application/octet-stream' --data-binary @"$d/small.bin" \
        "http://127.0.0.1:$port/v0/b/$bucket/o?name=small.bin"
done
query="alt=media&width=256&height=256&fit=cover&format=webp&quality=80"
thumb_nocache="http://127.0.0.1:$nocache_port/v0/b/$bucket/o/photo.jpg?$query"
thumb_cache="http://127.0.0.1:$cache_port/v0/b/$bucket/o/photo.jpg?$query"
small_cache="http://127.0.0.1:$cache_port/v0/b/$bucket/o/small.bin?alt=media"
curl -sf -o "$work/out/silo.webp" "$thumb_cache"
[ "$(curl -s -o /dev/null -D - "$thumb_cache" | tr -d '\r' | awk -F': ' 'tolower($1) == "x-silo-thumbnail-cache" {print $2}')" = hit ] ||
    { echo "the cached server did not answer from its cache" >&2; exit 1; }
# The thumbnail's own bytes as a plain object: the GET that sends exactly as much, so the comparison shows what the
# thumbnail path costs beyond a download (the 1 KiB GET also sends less).
curl -sf -o /dev/null -H 'Content-Type: image/webp' --data-binary @"$work/out/silo.webp" \
    "http://127.0.0.1:$cache_port/v0/b/$bucket/o?name=same-size.webp"
same_cache="http://127.0.0.1:$cache_port/v0/b/$bucket/o/same-size.webp?alt=media"
curl -sf -o /dev/null "http://127.0.0.1:$cache_port/v0/b/$bucket/o/same-size.webp"

# ---- rounds ---------------------------------------------------------------------------------------------------------
vips_round() {
    local start end ticks_before ticks_after
    rm -f "$work/out"/tn_*
    # The children's CPU time, from bash's `times` around one process run on the server's core.
    ticks_before=$(awk '{print $14 + $15 + $16 + $17}' /proc/$$/stat)
    start=$(date +%s.%N)
    on_server vipsthumbnail "$d"/in/*.jpg --size 256x256 --smartcrop centre -o "$work/out/tn_%s.webp[Q=80,strip]"
    end=$(date +%s.%N)
    ticks_after=$(awk '{print $14 + $15 + $16 + $17}' /proc/$$/stat)
    [ "$(find "$work/out" -name 'tn_*.webp' | wc -l)" -eq "$files" ] || { echo "vipsthumbnail wrote too few" >&2; exit 1; }
    echo "$(echo "$files / ($end - $start)" | bc -l)" \
        "$(echo "($ticks_after - $ticks_before) * 1000000 / $clk_tck / $files" | bc -l)" >>"$work/m/vipsthumbnail"
}
for round in $(seq "$rounds"); do
    echo "[round $round/$rounds]" >&2
    vips_round
    measure transform "$nocache_pid" 1 "$thumb_nocache"
    measure cached "$cache_pid" 64 "$thumb_cache"
    measure small "$cache_pid" 64 "$small_cache"
    measure same "$cache_pid" 64 "$same_cache"
done
vipsthumbnail "$d/photo.jpg" --size 256x256 --smartcrop centre -o "$work/out/ref.webp[Q=80,strip]"
vips_size=$(vipsheader -f width "$work/out/ref.webp")x$(vipsheader -f height "$work/out/ref.webp")
silo_size=$(vipsheader -f width "$work/out/silo.webp")x$(vipsheader -f height "$work/out/silo.webp")

# ---- report ---------------------------------------------------------------------------------------------------------
v_rate=$(col vipsthumbnail 1) v_cpu=$(col vipsthumbnail 2)
t_rate=$(col transform 1) t_cpu=$(col transform 5)
c_rate=$(col cached 1) c_cpu=$(col cached 5) s_rate=$(col small 1) s_cpu=$(col small 5)
e_rate=$(col same 1) e_cpu=$(col same 5) thumb_kib=$(fmt "$(echo "$(stat -c %s "$work/out/silo.webp") / 1024" | bc -l)" 1)
met() { if [ "$(echo "$1" | bc -l)" = 1 ]; then echo "met"; else echo "**not met**"; fi; }
report=bench/results/thumbnail.md
mkdir -p bench/results
{
    echo "# Thumbnails: Silo vs vipsthumbnail ($(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg))"
    echo
    echo "A 4000×3000 JPEG ($(($(stat -c %s "$d/photo.jpg") / 1024)) KiB) → 256×256 WebP Q=80, cover (centre crop):"
    echo "Silo $silo_size, vipsthumbnail $vips_size. libvips $(vips --version | awk '{print $1}' | sed 's/vips-//'). $pinning."
    echo "Medians of $rounds rounds [all rounds]; wrk runs ${seconds}s. CPU is the server's (or vipsthumbnail's) user+system time"
    echo "per thumbnail or per request."
    echo
    echo "| figure | Silo | reference (same run) | ratio | target | |"
    echo "|---|---|---|---|---|---|"
    echo "| thumbnails/s, one after another | $(fmt "$t_rate" 1) [$(all transform 1 1)] | vipsthumbnail $(fmt "$v_rate" 1) [$(all vipsthumbnail 1 1)] | $(ratio "$t_rate" "$v_rate") | ≥ 0.8 | $(met "$t_rate >= 0.8 * $v_rate") |"
    echo "| CPU ms per thumbnail | $(fmt "$(echo "$t_cpu / 1000" | bc -l)" 1) [$(awk '{printf "%s%.1f", (NR > 1 ? " " : ""), $5 / 1000}' "$work/m/transform")] | vipsthumbnail $(fmt "$(echo "$v_cpu / 1000" | bc -l)" 1) [$(awk '{printf "%s%.1f", (NR > 1 ? " " : ""), $2 / 1000}' "$work/m/vipsthumbnail")] | $(ratio "$v_cpu" "$t_cpu") (reference ÷ Silo) | ≥ 0.8 | $(met "$v_cpu >= 0.8 * $t_cpu") |"
    echo "| cached thumbnail, 64 conns, req/s | $(fmt "$c_rate") [$(all cached 1)] | 1 KiB GET $(fmt "$s_rate") [$(all small 1)] | $(ratio "$c_rate" "$s_rate") | ≥ 0.8 | $(met "$c_rate >= 0.8 * $s_rate") |"
    echo "| cached thumbnail, CPU µs/request | $(fmt "$c_cpu" 1) [$(all cached 5 1)] | 1 KiB GET $(fmt "$s_cpu" 1) [$(all small 5 1)] | $(ratio "$s_cpu" "$c_cpu") (reference ÷ Silo) | ≥ 0.8 | $(met "$s_cpu >= 0.8 * $c_cpu") |"
    echo "| cached thumbnail ($thumb_kib KiB), req/s | $(fmt "$c_rate") | GET of a $thumb_kib KiB object $(fmt "$e_rate") [$(all same 1)] | $(ratio "$c_rate" "$e_rate") | ≥ 0.95 (as fast) | $(met "$c_rate >= 0.95 * $e_rate") |"
    echo "| cached thumbnail ($thumb_kib KiB), CPU µs/request | $(fmt "$c_cpu" 1) | GET of a $thumb_kib KiB object $(fmt "$e_cpu" 1) [$(all same 5 1)] | $(ratio "$e_cpu" "$c_cpu") (reference ÷ Silo) | ≥ 0.95 (as fast) | $(met "$e_cpu >= 0.95 * $c_cpu") |"
} >"$report"
cat "$report"
