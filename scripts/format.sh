#!/usr/bin/env bash
# Formats the Swift sources with the toolchain's swift-format, then lints strictly.
# With --check, changes nothing and fails if any file is not formatted.
set -euo pipefail
cd "$(dirname "$0")/.."
paths=(Package.swift Sources Tests fuzz)
if [ "${1:-}" = "--check" ]; then
    swift format lint --strict --recursive --parallel "${paths[@]}"
else
    swift format format --in-place --recursive --parallel "${paths[@]}"
    swift format lint --strict --recursive --parallel "${paths[@]}"
fi
