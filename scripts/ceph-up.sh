#!/usr/bin/env bash
# Starts a throwaway one-host Ceph cluster on 127.0.0.1 (one monitor, one manager, one BlueStore OSD on a sparse file,
# and the RADOS Gateway's S3 API on the beast frontend), creates an S3 user and the test bucket, and prints the same
# export lines as scripts/seaweedfs-up.sh, so every S3 test runs against it unchanged.
#
# Usage: eval "$(scripts/ceph-up.sh)"   -> exports CEPH_DIR, the S3 endpoint and AWS credentials, and
#        SILO_TEST_S3_URL; stop with scripts/ceph-down.sh "$CEPH_DIR".
# Needs Debian's ceph-mon ceph-mgr ceph-osd radosgw (scripts/install-deps.sh ceph). Everything runs as the calling
# user from a temp dir: the OSD's block device is a file (bluestore_block_create), so no disk or root is needed.
# Ports (below 32768, where Linux's ephemeral range starts): S3 on $S3_PORT, the monitor on $CEPH_BASE_PORT, the
# manager's and OSD's messengers in $CEPH_BASE_PORT+1..+99; unless given, a free run of ports picked at random.
# Everything but the final export lines goes to stderr.
set -euo pipefail
cd "$(dirname "$0")/.."
for tool in ceph-mon ceph-mgr ceph-osd radosgw radosgw-admin ceph-authtool monmaptool ceph; do
    command -v "$tool" >/dev/null || {
        echo "ceph-up: $tool not found (scripts/install-deps.sh ceph installs Debian's Ceph)" >&2
        exit 1
    }
done

# A free port (or a free run of $1 ports) below the ephemeral range, so no outgoing connection holds one.
free_ports() {
    python3 - "$1" <<'PY'
import random, socket, sys
count = int(sys.argv[1])
for _ in range(200):
    base = random.randint(20000, 32767 - count)
    sockets = []
    try:
        for port in range(base, base + count):
            s = socket.socket()
            sockets.append(s)
            s.bind(("127.0.0.1", port))
    except OSError:
        continue
    finally:
        for s in sockets:
            s.close()
    print(base)
    break
else:
    raise SystemExit("no free port range")
PY
}
# One free run of 101 ports: the monitor, 99 for the messengers, then the gateway (unless the ports are given).
RUN=$(free_ports 101)
BASE=${CEPH_BASE_PORT:-$RUN}
S3_PORT=${S3_PORT:-$((RUN + 100))}
ACCESS=${S3_ACCESS_KEY:-siloaccess}
SECRET=${S3_SECRET_KEY:-silosecret}
BUCKET=${S3_BUCKET:-silo-test}
# The OSD's block file is sparse: only what is written takes room.
OSD_SIZE=${CEPH_OSD_SIZE:-20G}

DIR=$(mktemp -d "${TMPDIR:-/tmp}/silo-ceph.XXXXXX")
mkdir -p "$DIR"/{mon,mgr,osd,rgw,run,log,crash}
CONF=$DIR/ceph.conf
FSID=$(python3 -c 'import uuid; print(uuid.uuid4())')
fail() {
    echo "ceph-up: $*" >&2
    tail -n 30 "$DIR"/log/*.log >&2 2>/dev/null || true
    [ -n "${CEPH_KEEP_ON_FAILURE:-}" ] || scripts/ceph-down.sh "$DIR"
    exit 1
}
trap 'fail "interrupted"' INT TERM

# Everything in this directory and on loopback: the monitor's address pins the cluster's, and the messenger's port
# range keeps the other daemons beside it, clear of anyone else's ports.
cat >"$CONF" <<CONF
[global]
fsid = $FSID
mon host = v2:127.0.0.1:$BASE
mon initial members = a
public network = 127.0.0.0/8
public addr = 127.0.0.1
cluster addr = 127.0.0.1
ms bind msgr1 = false
ms bind port min = $((BASE + 1))
ms bind port max = $((BASE + 99))
run dir = $DIR/run
admin socket = $DIR/run/\$name.asok
log file = $DIR/log/\$name.log
pid file = $DIR/run/\$name.pid
crash dir = $DIR/crash
auth cluster required = cephx
auth service required = cephx
auth client required = cephx
auth allow insecure global id reclaim = false
# One OSD on one host: one copy, placed by OSD rather than by host.
osd pool default size = 1
osd pool default min size = 1
mon allow pool size one = true
osd crush chooseleaf type = 0
osd pool default pg num = 8
osd pool default pgp num = 8
osd pool default pg autoscale mode = off
mon warn on pool no redundancy = false
mon data avail warn = 2
mon data avail crit = 1
# A test cluster on a shared machine: small caches.
osd memory target = 939524096
bluestore cache autotune = false
bluestore cache size = 134217728
[mon]
mon data = $DIR/mon/\$cluster-\$id
keyring = \$mon_data/keyring
mon allow pool delete = true
[mgr]
mgr data = $DIR/mgr/\$cluster-\$id
keyring = \$mgr_data/keyring
[osd]
osd data = $DIR/osd/\$cluster-\$id
keyring = \$osd_data/keyring
osd objectstore = bluestore
bluestore block create = true
bluestore block size = $(numfmt --from=iec "$OSD_SIZE")
bluestore fsck on mount = false
osd max object name len = 460
osd max object namespace len = 64
[client]
keyring = $DIR/keyring
[client.rgw.a]
keyring = $DIR/rgw/keyring
rgw frontends = beast endpoint=127.0.0.1:$S3_PORT
rgw data = $DIR/rgw
rgw dns name = 127.0.0.1
CONF
C=(--conf "$CONF")

# Keys: every daemon's but the OSD's goes into the monitor's keyring before it is created, which saves a round of
# `ceph auth` calls (each one starts a Python interpreter: a second or two on a loaded machine).
key() { # keyring, name, caps...
    local keyring=$1 name=$2
    shift 2
    ceph-authtool --create-keyring "$keyring" --gen-key -n "$name" "$@" >/dev/null
    ceph-authtool "$DIR/mon.keyring" --import-keyring "$keyring" >/dev/null
}
mkdir -p "$DIR/mgr/ceph-x"
ceph-authtool --create-keyring "$DIR/mon.keyring" --gen-key -n mon. --cap mon 'allow *' >/dev/null
key "$DIR/keyring" client.admin --cap mon 'allow *' --cap osd 'allow *' --cap mds 'allow *' --cap mgr 'allow *'
key "$DIR/mgr/ceph-x/keyring" mgr.x --cap mon 'allow profile mgr' --cap osd 'allow *' --cap mds 'allow *'
key "$DIR/rgw/keyring" client.rgw.a --cap mon 'allow rw' --cap osd 'allow rwx' --cap mgr 'allow rw'
monmaptool --create --fsid "$FSID" --addv a "[v2:127.0.0.1:$BASE]" "$DIR/monmap" >/dev/null
ceph-mon "${C[@]}" --mkfs -i a --monmap "$DIR/monmap" --keyring "$DIR/mon.keyring" >"$DIR/log/mkfs-mon.log" 2>&1 \
    || fail "ceph-mon --mkfs failed"

start() { # name, command...: a daemon in the foreground of a background job, its PID recorded for ceph-down.sh
    local name=$1
    shift
    "$@" >>"$DIR/log/$name.out" 2>&1 </dev/null &
    echo $! >>"$DIR/pids"
}
start mon ceph-mon "${C[@]}" -f -i a
start mgr ceph-mgr "${C[@]}" -f -i x

# The OSD needs an id from the monitor (the one `ceph` call; it waits for the monitor to answer), then its store.
OSD_UUID=$(python3 -c 'import uuid; print(uuid.uuid4())')
OSD_KEY=$(ceph-authtool --gen-print-key)
echo "{\"cephx_secret\": \"$OSD_KEY\"}" >"$DIR/osd-secret.json"
OSD_ID=$(timeout 60 ceph "${C[@]}" osd new "$OSD_UUID" -i "$DIR/osd-secret.json" 2>"$DIR/log/osd-new.log") \
    || fail "the monitor did not register the OSD (log/osd-new.log)"
mkdir -p "$DIR/osd/ceph-$OSD_ID"
ceph-authtool --create-keyring "$DIR/osd/ceph-$OSD_ID/keyring" --name "osd.$OSD_ID" --add-key "$OSD_KEY" >/dev/null
ceph-osd "${C[@]}" -i "$OSD_ID" --mkfs --osd-uuid "$OSD_UUID" >"$DIR/log/mkfs-osd.log" 2>&1 \
    || fail "ceph-osd --mkfs failed (log/mkfs-osd.log)"
start osd ceph-osd "${C[@]}" -f -i "$OSD_ID"

# The gateway creates its pools as soon as the OSD is up, and answers once it has.
start rgw radosgw "${C[@]}" -f -n client.rgw.a
ENDPOINT="http://127.0.0.1:$S3_PORT"
ready=""
for _ in $(seq 1 900); do
    code=$(curl -s -o /dev/null -w '%{http_code}' "$ENDPOINT/" || true)
    if [ "$code" = 200 ] || [ "$code" = 403 ]; then ready=1; break; fi
    for p in $(cat "$DIR/pids"); do kill -0 "$p" 2>/dev/null || fail "a daemon (PID $p) exited during startup"; done
    sleep 0.2
done
[ -n "$ready" ] || fail "the RADOS Gateway did not answer on $ENDPOINT"

radosgw-admin "${C[@]}" user create --uid=silo --display-name=silo --access-key="$ACCESS" --secret-key="$SECRET" \
    >/dev/null 2>"$DIR/log/user-create.log" || fail "radosgw-admin user create failed"
# RGW checks a V4 signature against x-amz-content-sha256 and has no default for it (SeaweedFS does); curl sends none.
curl -s -o /dev/null --fail --aws-sigv4 "aws:amz:us-east-1:s3" --user "$ACCESS:$SECRET" -X PUT "$ENDPOINT/$BUCKET" \
    -H "x-amz-content-sha256: $(printf '' | sha256sum | cut -d' ' -f1)" || fail "could not create bucket $BUCKET"
echo "ceph-up: dir $DIR, monitor 127.0.0.1:$BASE, S3 endpoint $ENDPOINT, access key $ACCESS, secret $SECRET" >&2
cat <<VARS
export CEPH_DIR='$DIR'
export S3_ENDPOINT='$ENDPOINT'
export AWS_ACCESS_KEY_ID='$ACCESS'
export AWS_SECRET_ACCESS_KEY='$SECRET'
export AWS_REGION='us-east-1'
export SILO_TEST_S3_URL='s3://$BUCKET?endpoint=$ENDPOINT&region=us-east-1'
VARS
