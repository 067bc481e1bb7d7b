#!/usr/bin/env bash
# Stops a scripts/seaweedfs-up.sh instance by its recorded PID (never by name) and removes its directory and the
# gRPC sockets weed leaves in /tmp. SIGTERM, then SIGKILL after 2 s: a graceful stop waits 15 s on a filer stream.
# Usage: scripts/seaweedfs-down.sh "$SEAWEEDFS_DIR"
set -uo pipefail
DIR=${1:?usage: seaweedfs-down.sh DIR}
[ -f "$DIR/weed.pid" ] || { echo "seaweedfs-down: no weed.pid in $DIR" >&2; exit 1; }
P=$(cat "$DIR/weed.pid")
kill "$P" 2>/dev/null
for _ in $(seq 1 20); do kill -0 "$P" 2>/dev/null || break; sleep 0.1; done
kill -9 "$P" 2>/dev/null
# Not our child here, so `wait` cannot reap it; give the kernel a moment to tear it down.
for _ in $(seq 1 20); do kill -0 "$P" 2>/dev/null || break; sleep 0.1; done
# shellcheck disable=SC2046
[ -f "$DIR/sockets" ] && rm -f $(cat "$DIR/sockets")
rm -rf "$DIR"
