#!/usr/bin/env bash
# Installs the Debian packages Silo builds and tests with, if any is missing. Safe to run repeatedly.
# `scripts/install-deps.sh ceph` also installs Debian's Ceph (monitor, manager, OSD, RADOS Gateway) for
# `make ceph-test` only: 97 Debian packages, 273 MiB installed, that the default `make test` does not need.
set -euo pipefail
packages=(libvips-dev libvips-tools libsqlite3-dev libssl-dev libisal-dev zlib1g-dev libcurl4-openssl-dev libpq-dev postgresql-15 pkg-config curl python3 bc tmux strace nginx rclone openssl chromium chromium-driver prometheus logrotate time valgrind wrk)
for group in "$@"; do
    case $group in
    ceph) packages+=(ceph-mon ceph-mgr ceph-osd radosgw ceph-common) ;;
    *) echo "install-deps: unknown group '$group' (known: ceph)" >&2; exit 2 ;;
    esac
done
missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then exit 0; fi
echo "installing: ${missing[*]}"
sudo_cmd=()
[ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
"${sudo_cmd[@]}" apt-get update -qq
DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
