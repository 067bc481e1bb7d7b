#!/usr/bin/env bash
# Bounded schemathesis run against a live, secured `silo serve` (tests/schemathesis/run.py does the work).
#   tests/schemathesis/run.sh [--binary PATH] [--max-examples N] [--seed N] [--out DIR]
# SILO_BINARY picks the binary (default .build/release/silo). The whole run is killed after
# SCHEMATHESIS_TIMEOUT seconds (default 420); each of its five schemathesis runs after 120.
set -euo pipefail
cd "$(dirname "$0")/../.."
scripts/python-venv.sh .venv/schemathesis tests/schemathesis/requirements.txt
binary=${SILO_BINARY:-.build/release/silo}
exec timeout -k 15 "${SCHEMATHESIS_TIMEOUT:-420}" \
    .venv/schemathesis/bin/python tests/schemathesis/run.py --binary "$binary" "$@"
