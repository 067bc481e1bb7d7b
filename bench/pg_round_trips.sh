#!/usr/bin/env bash
# PostgreSQL round trips per 1 KiB v0 upload, counted, not timed: for each `silo` binary given, 300 sequential uploads
# on one keep-alive connection while strace records the server's sendto calls; each round trip to PostgreSQL is one
# send on its connection's socket (libpq sends a pipeline in one call), and the count does not depend on the load.
#   S3_PORT=… WEED_BASE_PORT=… scripts/with-services.sh bench/pg_round_trips.sh BIN...   (needs strace and ptrace)
# Prints, per binary, the sends per upload on each socket: the PostgreSQL connection's, and the HTTP client's (one).
set -euo pipefail
: "${SILO_TEST_POSTGRES_URL:?run under scripts/with-services.sh}" "${SILO_TEST_S3_URL:?run under scripts/with-services.sh}"
command -v strace >/dev/null || { echo "pg_round_trips: needs strace" >&2; exit 2; }
uploads=${PG_ROUND_TRIP_UPLOADS:-300}
# Sequential v0 uploads of 1 KiB to new names in bucket $2 on port $1, $3 of them, prefix $4.
upload() {
    python3 - "$@" <<'PY'
import http.client, sys
port, bucket, count, prefix = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), sys.argv[4]
connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
for i in range(count):
    connection.request("POST", f"/v0/b/{bucket}/o?name={prefix}{i}", b"x" * 1024,
                       {"Content-Type": "application/octet-stream"})
    answer = connection.getresponse()
    answer.read()
    assert answer.status == 200, answer.status
PY
}
for bin in "$@"; do
    work=$(mktemp -d)
    port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    "$bin" serve --port "$port" --data "$work/data" --metadata "$SILO_TEST_POSTGRES_URL" --blobs "$SILO_TEST_S3_URL" \
        --create-buckets-on-upload true >"$work/log" 2>&1 &
    pid=$!
    for _ in $(seq 200); do curl -sf -o /dev/null "http://127.0.0.1:$port/healthz" && break; sleep 0.05; done
    bucket="rt-$(basename "$work" | tr 'A-Z' 'a-z' | tr -dc 'a-z0-9').appspot.com"
    # Warm: the bucket exists, every pooled connection has prepared its statements.
    upload "$port" "$bucket" 20 warm-
    threads=()
    for task in /proc/"$pid"/task/*; do threads+=(-p "$(basename "$task")"); done
    strace -qq -e trace=sendto -o "$work/strace" "${threads[@]}" 2>/dev/null &
    tracer=$!
    sleep 1
    upload "$port" "$bucket" "$uploads" o-
    sleep 0.5
    kill "$tracer"
    wait "$tracer" 2>/dev/null || true
    kill "$pid"
    wait "$pid" 2>/dev/null || true
    echo "$bin: $uploads uploads; sends per upload, by socket:"
    grep -o 'sendto([0-9]*' "$work/strace" | cut -d'(' -f2 | sort | uniq -c | sort -rn \
        | awk -v n="$uploads" '$1 >= n / 2 {printf "  fd %s: %.2f\n", $2, $1 / n}'
    rm -rf "$work"
done
