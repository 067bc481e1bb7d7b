#!/usr/bin/env bash
# Stops a scripts/ceph-up.sh cluster by its recorded PIDs (never by name), gateway first and monitor last, and removes
# its directory. SIGTERM, then SIGKILL after 5 s.
# Usage: scripts/ceph-down.sh "$CEPH_DIR"
set -uo pipefail
DIR=${1:?usage: ceph-down.sh DIR}
[ -d "$DIR" ] || { echo "ceph-down: no directory $DIR" >&2; exit 1; }
if [ -f "$DIR/pids" ]; then
    pids=$(tac "$DIR/pids")
    for p in $pids; do
        kill "$p" 2>/dev/null
        for _ in $(seq 1 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
        kill -9 "$p" 2>/dev/null
    done
    # Not our children here, so `wait` cannot reap them; give the kernel a moment to tear them down.
    for p in $pids; do
        for _ in $(seq 1 20); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    done
fi
rm -rf "$DIR"
