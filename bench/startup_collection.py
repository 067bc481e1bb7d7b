#!/usr/bin/env python3
"""Readiness versus the first maintenance pass: how long `silo serve` takes to answer `/healthz` when its first
maintenance pass has a backlog of blobs to delete, and how long that pass takes, in one run.

It writes N objects twice over the S3 store (an S3 store keeps replaced bytes for the collector: deleting them at
once would break downloads reading them), restarts the server on SQLite + S3 (a store this one process holds, so the
first pass takes everything registered before the start) and measures, from the new process's start:
  * the first `/healthz` answered 200;
  * the first pass finished (`silo_maintenance_passes_total` >= 1) and the blobs it collected.

Needs SILO_TEST_S3_URL and AWS_* (scripts/with-services.sh, or seaweedfs-up.sh). Loopback only.
    scripts/with-services.sh python3 bench/startup_collection.py --binary .build/release/silo --objects 1000
"""
import argparse
import os
import re
import shutil
import signal
import sys
import tempfile
import time
import concurrent.futures

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
from silo_process import request, start_silo  # noqa: E402

BUCKET = "startup.appspot.com"


def metric(port, name):
    _, _, body = request(port, "GET", "/metrics")
    m = re.search(rb"^" + name.encode() + rb" (\d+)", body, re.M)
    return int(m.group(1)) if m else None


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", default=".build/release/silo")
    parser.add_argument("--objects", type=int, default=1000)
    parser.add_argument("--blobs", default=os.environ.get("SILO_TEST_S3_URL"))
    args = parser.parse_args()
    if not args.blobs:
        print("startup_collection: needs SILO_TEST_S3_URL (scripts/with-services.sh starts SeaweedFS)")
        return 1
    data = tempfile.mkdtemp(prefix="silo-startup-")
    try:
        proc, port, _ = start_silo(args.binary, "--data", data, "--blobs", args.blobs)
        with concurrent.futures.ThreadPoolExecutor(16) as pool:
            for round_number in range(2):
                list(pool.map(lambda i: request(port, "POST", f"/v0/b/{BUCKET}/o?name=o{i:06d}",
                                                os.urandom(1024)), range(args.objects)))
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
        started = time.time()
        proc, port, _ = start_silo(args.binary, "--data", data, "--blobs", args.blobs)
        ready = None
        passed = None
        while passed is None and time.time() - started < 600:
            if ready is None:
                status, _, _ = request(port, "GET", "/healthz")
                if status == 200:
                    ready = time.time() - started
            passes = metric(port, "silo_maintenance_passes_total")
            if passes is None and ready is not None:
                break  # a build without the metric (one that collected before it listened)
            if (passes or 0) >= 1:
                passed = time.time() - started
            time.sleep(0.02)
        collected = metric(port, "silo_garbage_blobs_collected_total")
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
        done = f"{passed:.2f} s, {collected} blobs collected" if passed is not None else "(not reported by this build)"
        print(f"startup with {args.objects} replaced blobs on S3: /healthz 200 after {ready:.2f} s; the first "
              f"maintenance pass done after {done}")
        return 0
    finally:
        shutil.rmtree(data, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
