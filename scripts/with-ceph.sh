#!/usr/bin/env bash
# Runs a command with a throwaway PostgreSQL (SILO_TEST_POSTGRES_URL) and a one-host Ceph cluster's RADOS Gateway as
# the S3 store (SILO_TEST_S3_URL and the AWS_* credentials, as scripts/with-services.sh exports them for SeaweedFS) on
# 127.0.0.1, and stops both afterwards, also when the command fails or is interrupted.
# Usage: scripts/with-ceph.sh python3 tests/multinode/multinode_test.py
set -euo pipefail
cd "$(dirname "$0")/.."
read -r pg_url pg_dir < <(scripts/postgres-up.sh)
vars=$(scripts/ceph-up.sh) || { scripts/postgres-down.sh "$pg_dir"; exit 1; }
eval "$vars"
trap 'scripts/ceph-down.sh "$CEPH_DIR"; scripts/postgres-down.sh "$pg_dir"' EXIT
export SILO_TEST_POSTGRES_URL=$pg_url
"$@"
