#!/usr/bin/env bash
# Runs a command with SILO_TEST_POSTGRES_URL naming a throwaway PostgreSQL cluster, and stops the cluster afterwards
# (also when the command fails or is interrupted). Usage: scripts/with-postgres.sh swift test --skip-build ...
set -euo pipefail
cd "$(dirname "$0")/.."
read -r url dir < <(scripts/postgres-up.sh)
trap 'scripts/postgres-down.sh "$dir"' EXIT
echo "PostgreSQL for tests: $url" >&2
SILO_TEST_POSTGRES_URL=$url "$@"
