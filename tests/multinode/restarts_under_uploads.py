#!/usr/bin/env python3
"""Two `silo serve` nodes on one PostgreSQL and one SeaweedFS. Writers send 1-6 MiB v0 uploads to node B, all the
time, while node A

  1. is restarted again and again (SIGTERM, then `silo serve` again; then kill -9 and again): each start runs a
     maintenance pass, which on a shared store must not take the blobs of B's uploads in flight;
  2. then runs with `--garbage-grace 0 --maintenance-interval 1`: a collection every second that takes every blob
     nothing references yet, so B's commits race it all the time.

Afterwards every acknowledged upload (200) must read back, byte for byte, from both nodes: a 200 means durable and
readable, whatever other nodes do. Uploads that lost a race answer 503, which clients retry; they are counted, not
failures. Run by `make multinode` (scripts/with-services.sh starts and stops the services). 127.0.0.1 only; bounded
in time (about a minute) and count.
"""
import argparse
import hashlib
import http.client
import os
import random
import signal
import sys
import tempfile
import threading
import time
import urllib.parse

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from silo_process import request, start_silo  # noqa: E402

BUCKET = "restarts.appspot.com"
MIB = 1 << 20


class Writers:
    """Writers uploading to one node until stopped; what was acknowledged, and every other answer, counted."""

    def __init__(self, port, count, seed):
        self.port = port
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.acked = {}  # name -> md5 hex
        self.answers = {}  # status -> count
        self.errors = 0
        self.threads = [threading.Thread(target=self.run, args=(i, random.Random(seed + i)), daemon=True)
                        for i in range(count)]

    def run(self, index, rng):
        number = 0
        while not self.stop.is_set():
            number += 1
            name = f"w{index}/{number:05d}.bin"
            data = rng.randbytes(rng.randint(1 * MIB, 6 * MIB))
            try:
                conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
                conn.request("POST", f"/v0/b/{BUCKET}/o?name={urllib.parse.quote(name, safe='')}", body=data)
                status = conn.getresponse().status
                conn.close()
            except (OSError, http.client.HTTPException):
                with self.lock:
                    self.errors += 1
                continue
            with self.lock:
                self.answers[status] = self.answers.get(status, 0) + 1
                if status == 200:
                    self.acked[name] = hashlib.md5(data).hexdigest()

    def __enter__(self):
        for t in self.threads:
            t.start()
        return self

    def __exit__(self, *_):
        self.stop.set()
        for t in self.threads:
            t.join(timeout=120)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", default=".build/release/silo")
    parser.add_argument("--metadata", default=os.environ.get("SILO_TEST_POSTGRES_URL"))
    parser.add_argument("--blobs", default=os.environ.get("SILO_TEST_S3_URL"))
    parser.add_argument("--restarts", type=int, default=8, help="SIGTERM restarts of node A (then 2 with kill -9)")
    parser.add_argument("--gap", type=float, default=1.5, help="seconds between restarts")
    parser.add_argument("--collect-seconds", type=float, default=8.0,
                        help="how long node A collects every second with no grace (0: skip that phase)")
    parser.add_argument("--writers", type=int, default=4)
    args = parser.parse_args()
    if not args.metadata or not args.blobs:
        print("restarts_under_uploads: needs SILO_TEST_POSTGRES_URL and SILO_TEST_S3_URL (make multinode starts both)")
        return 1
    work = tempfile.mkdtemp(prefix="silo-restarts-")
    stores = ("--metadata", args.metadata, "--blobs", args.blobs)

    def start(name, *extra):
        return start_silo(args.binary, "--data", os.path.join(work, name), *stores, *extra)[:2]

    b, port_b = start("b")
    a = None
    failures = []
    started = time.time()
    try:
        a, port_a = start("a")
        with Writers(port_b, args.writers, seed=int(started)) as writers:
            time.sleep(args.gap)
            for round_number in range(args.restarts + 2):
                hard = round_number >= args.restarts
                a.send_signal(signal.SIGKILL if hard else signal.SIGTERM)
                a.wait(timeout=60)
                a, port_a = start("a")
                time.sleep(args.gap)
            if args.collect_seconds > 0:
                # Collections every second that take everything unreferenced, however young.
                a.send_signal(signal.SIGTERM)
                a.wait(timeout=60)
                a, port_a = start("a", "--garbage-grace", "0", "--maintenance-interval", "1")
                time.sleep(args.collect_seconds)
        lost = []
        for name, digest in sorted(writers.acked.items()):
            path = f"/v0/b/{BUCKET}/o/{urllib.parse.quote(name, safe='')}?alt=media"
            # Every byte from B; from A the last byte, which a reader reaches only through the whole blob's listing.
            status, _, body = request(port_b, "GET", path, timeout=60)
            if status != 200 or hashlib.md5(body).hexdigest() != digest:
                lost.append(f"{name} on B: {status}, {len(body)} bytes")
            status, _, tail = request(port_a, "GET", path, headers={"Range": "bytes=-1"}, timeout=60)
            if status != 206 or tail != body[-1:]:
                lost.append(f"{name} on A: {status}, {tail[:80]!r}")
        print(f"restarts under uploads: {args.restarts} SIGTERM and 2 kill -9 restarts of A, then "
              f"{args.collect_seconds:.0f} s of collections every second with no grace; writers to B got "
              f"{dict(sorted(writers.answers.items()))} ({writers.errors} connection errors); "
              f"{len(writers.acked)} acknowledged, {len(lost)} unreadable; {time.time() - started:.0f} s", flush=True)
        for line in lost[:20]:
            print("  lost: " + line, flush=True)
        if lost:
            failures.append(f"{len(lost)} reads of acknowledged uploads failed")
        if len(writers.acked) < 20:
            failures.append(f"only {len(writers.acked)} uploads were acknowledged: the writers did not really write")
        unexpected = {s: n for s, n in writers.answers.items() if s not in (200, 503)}
        if unexpected:
            failures.append(f"answers other than 200 and 503: {unexpected}")
    finally:
        for p in (a, b):
            if p is not None and p.poll() is None:
                p.send_signal(signal.SIGTERM)
                p.wait(timeout=60)
    for f in failures:
        print("FAIL " + f, flush=True)
    print("ok   every acknowledged upload reads back on both nodes" if not failures else "", flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
