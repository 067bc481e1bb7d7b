#!/usr/bin/env bash
# Builds the libFuzzer target for the rules compiler and evaluator and runs it.
#   fuzz/run-rules.sh [SECONDS] [extra libFuzzer flags...]
# SwiftPM cannot build fuzzers, so this compiles SiloCore and SiloWire as static libraries (ASan only) and the
# SiloRules sources plus the harness with coverage instrumentation (-sanitize=fuzzer,address).
# Seeds: fuzz/seeds/rules (committed, from spec §11). Working corpus: fuzz/corpus/rules. Crashes, leaks and
# timeouts: fuzz/findings/ (both gitignored).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"
shift || true
build=fuzz/.build
mkdir -p "$build" fuzz/corpus/rules fuzz/findings
swift_flags=(-swift-version 6 -O -g -parse-as-library -I "$build")

swiftc "${swift_flags[@]}" -sanitize=address -module-name SiloCore -emit-module \
    -emit-module-path "$build/SiloCore.swiftmodule" -emit-library -static -o "$build/libSiloCore.a" \
    $(find Sources/SiloCore -name '*.swift' | sort)
swiftc "${swift_flags[@]}" -sanitize=address -module-name SiloWire -emit-module \
    -emit-module-path "$build/SiloWire.swiftmodule" -emit-library -static -o "$build/libSiloWire.a" \
    $(find Sources/SiloWire -name '*.swift' | sort)
swiftc "${swift_flags[@]}" -sanitize=fuzzer,address -module-name SiloRules -emit-module \
    -emit-module-path "$build/SiloRules.swiftmodule" -emit-library -static -o "$build/libSiloRules.a" \
    $(find Sources/SiloRules -name '*.swift' | sort)
swiftc "${swift_flags[@]}" -sanitize=fuzzer,address -module-name RulesFuzzer fuzz/rules/RulesFuzzer.swift \
    -L "$build" -lSiloRules -lSiloWire -lSiloCore -o "$build/rules-fuzzer"

cp -n fuzz/seeds/rules/* fuzz/corpus/rules/ 2>/dev/null || true
exec "$build/rules-fuzzer" fuzz/corpus/rules -max_total_time="$seconds" -max_len=4096 -timeout=10 \
    -rss_limit_mb=2048 -artifact_prefix=fuzz/findings/ -print_final_stats=1 "$@"
