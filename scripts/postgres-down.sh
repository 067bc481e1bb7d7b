#!/usr/bin/env bash
# Stops a cluster started by scripts/postgres-up.sh (by its data dir, never by process name) and deletes its dir.
set -euo pipefail
DIR=${1:?usage: postgres-down.sh <dir printed by postgres-up.sh>}
PGBIN=${PGBIN:-/usr/lib/postgresql/15/bin}
[ -f "$DIR/data/postmaster.pid" ] || { rm -rf "$DIR"; exit 0; }
if [ "$(id -u)" -eq 0 ]; then
    su postgres -s /bin/sh -c "$(printf '%q ' "$PGBIN/pg_ctl" -D "$DIR/data" -m fast -w stop)" >/dev/null
else
    "$PGBIN/pg_ctl" -D "$DIR/data" -m fast -w stop >/dev/null
fi
rm -rf "$DIR"
