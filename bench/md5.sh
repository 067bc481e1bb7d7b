#!/usr/bin/env bash
# Single-stream MD5 speed of Silo's CMD5 against libcrypto's (what `openssl speed md5` measures), and of MD5 with
# CRC-32C in one pass against libcrypto's MD5 followed by ISA-L's CRC-32C, on the server's core (CPU 0, as bench/run
# pins it). Builds bench/md5-speed.c with Sources/CMD5/md5.c at -O2, as a release build compiles it.
#
# Usage: bench/md5.sh [ROUNDS]   (default 5)
set -euo pipefail
cd "$(dirname "$0")/.."
BENCH_WORK_PREFIX=silo-md5
# shellcheck source=bench/lib.sh
. bench/lib.sh
cc=$(command -v clang || command -v cc)
"$cc" -O2 -ISources/CMD5/include bench/md5-speed.c Sources/CMD5/md5.c -lcrypto -lisal -o "$work/md5-speed"
echo "single stream, 1 MiB buffer, CPU $server_cpu; load: $(cut -d' ' -f1-3 /proc/loadavg)"
on_server "$work/md5-speed" "${1:-5}"
