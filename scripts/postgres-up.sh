#!/usr/bin/env bash
# Starts a throwaway PostgreSQL 15 cluster on 127.0.0.1 (a temp dir, a free port below 32768, trust auth, durability
# off: for tests only), with an empty database "silo". Prints one line: "<url> <dir>".
# Stop it with: scripts/postgres-down.sh <dir>.   Needs apt's postgresql-15 (scripts/install-deps.sh).
# As root the server runs as the 'postgres' user (it refuses root).
set -euo pipefail
PGBIN=${PGBIN:-/usr/lib/postgresql/15/bin}
[ -x "$PGBIN/pg_ctl" ] || { echo "postgres-up: $PGBIN/pg_ctl not found (apt-get install postgresql-15)" >&2; exit 1; }

# A port no one listens on, below the ephemeral range (32768+), so an outgoing connection cannot hold it.
free_port() {
    python3 - <<'PY'
import random, socket
for _ in range(200):
    port = random.randint(20000, 29999)
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            continue
        print(port)
        break
else:
    raise SystemExit("no free port")
PY
}
PGPORT=${PGPORT:-$(free_port)}

DIR=$(mktemp -d "${TMPDIR:-/tmp}/silo-pg.XXXXXX")
run() { "$@"; }
if [ "$(id -u)" -eq 0 ]; then
    id postgres >/dev/null 2>&1 || useradd --system --home-dir /var/lib/postgresql --shell /bin/bash postgres
    chown postgres:postgres "$DIR"
    run() { su postgres -s /bin/sh -c "$(printf '%q ' "$@")"; }
fi
echo "$PGPORT" >"$DIR/port"

if ! run "$PGBIN/initdb" -D "$DIR/data" -U postgres -A trust -E UTF8 --locale=C.UTF-8 --no-sync >"$DIR/initdb.log" 2>&1; then
    cat "$DIR/initdb.log" >&2
    rm -rf "$DIR"
    exit 1
fi
# PG_SERVER_OPTIONS: more `-c name=value` settings (a benchmark that wants a larger shared_buffers, say).
# max_connections: `make pairs` starts the server suites' tests all at once, each server with a pool of up to 4
# connections; at 200 the PostgreSQL pair refused connections past ~190 (measured with pg_stat_activity).
if ! run "$PGBIN/pg_ctl" -D "$DIR/data" -l "$DIR/server.log" -w -t 60 \
    -o "-c listen_addresses=127.0.0.1 -p $PGPORT -k $DIR -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=1000 ${PG_SERVER_OPTIONS:-}" \
    start >/dev/null; then
    cat "$DIR/server.log" >&2
    rm -rf "$DIR"
    exit 1
fi
"$PGBIN/psql" -X -q -h 127.0.0.1 -p "$PGPORT" -U postgres -d postgres -c 'CREATE DATABASE silo' >/dev/null
echo "postgres://postgres@127.0.0.1:$PGPORT/silo $DIR"
