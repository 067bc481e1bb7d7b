#!/usr/bin/env python3
"""Two stateless `silo serve` nodes on one PostgreSQL (metadata) and one SeaweedFS (bytes):

  * a write on node A is readable on node B at once (read-after-write);
  * a resumable upload started on A is finished on B;
  * A is killed (SIGKILL) in the middle of a resumable upload; the client asks B for the offset and finishes there;
  * concurrent preconditioned writes (ifGenerationMatch=0) from both nodes: exactly one wins, the others get 412;
  * the writer lease: A alone answers repeated reads from memory; once B starts, A reads every row from PostgreSQL
    (and sees B's writes at once); when B has gone, A caches again, starting from what B wrote;
  * then a rough throughput comparison, one node vs two, reported (not asserted).

Run by `make multinode`, which starts and stops the services: scripts/with-services.sh. 127.0.0.1 only, bounded.
"""
import argparse
import http.client
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from silo_process import request, start_silo  # noqa: E402


results = []
BUCKET = "multi.appspot.com"


def check(name, ok, detail=""):
    results.append(ok)
    print(("ok   " if ok else "FAIL ") + name + ("" if ok else f": {detail}"), flush=True)


def q(name):
    return urllib.parse.quote(name, safe="")


def answered_from_memory(port):
    """The node's answers from memory, from /metrics: metadata-cache hits, and replayed answers (which skip the
    cache: an event loop answers a byte-identical head again while its writer lease and the object stand)."""
    _, _, body = request(port, "GET", "/metrics")
    text = body.decode()
    hits = re.search(r'silo_cache_lookups_total\{cache="metadata",result="hit"\} (\d+)', text)
    replays = re.search(r"silo_replayed_answers_total (\d+)", text)
    return int(hits.group(1)) + int(replays.group(1)) if hits and replays else -1


def reads_cached(port, name, reads=5):
    """Whether `reads` GETs of `name` on the node were answered from memory."""
    request(port, "GET", f"/v0/b/{BUCKET}/o/{q(name)}?alt=media")
    before = answered_from_memory(port)
    for _ in range(reads):
        request(port, "GET", f"/v0/b/{BUCKET}/o/{q(name)}?alt=media")
    return answered_from_memory(port) - before >= reads


def session_path(url):
    u = urllib.parse.urlsplit(url)
    return u.path + "?" + u.query


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", default=".build/release/silo")
    parser.add_argument("--metadata", default=os.environ.get("SILO_TEST_POSTGRES_URL"))
    parser.add_argument("--blobs", default=os.environ.get("SILO_TEST_S3_URL"))
    args = parser.parse_args()
    if not args.metadata or not args.blobs:
        print("multinode: needs SILO_TEST_POSTGRES_URL and SILO_TEST_S3_URL (make multinode starts both)")
        return 1
    work = tempfile.mkdtemp(prefix="silo-multinode-")
    a, port_a = start_silo(args.binary, "--data", os.path.join(work, "a"), "--metadata", args.metadata, "--blobs", args.blobs)[:2]
    b = None
    try:
        # The writer lease: A alone caches; B's start makes it hand over first.
        status, _, _ = request(port_a, "POST", f"/v0/b/{BUCKET}/o?name=lease.txt", b"one")
        check("A alone answers repeated reads from memory", status == 200 and reads_cached(port_a, "lease.txt"))
        b, port_b = start_silo(args.binary, "--data", os.path.join(work, "b"), "--metadata", args.metadata, "--blobs", args.blobs)[:2]
        check("with B running, A reads every row from PostgreSQL", not reads_cached(port_a, "lease.txt"))
        request(port_b, "POST", f"/v0/b/{BUCKET}/o?name=lease.txt", b"two")
        _, _, got = request(port_a, "GET", f"/v0/b/{BUCKET}/o/lease.txt?alt=media")
        check("A reads B's overwrite at once", got == b"two", got)

        # Read-after-write across nodes.
        data = os.urandom(300_000)
        status, _, body = request(port_a, "POST", f"/v0/b/{BUCKET}/o?name=raw.bin", data)
        check("write on A", status == 200, (status, body[:200]))
        status, _, got = request(port_b, "GET", f"/v0/b/{BUCKET}/o/raw.bin?alt=media")
        check("read-after-write on B", status == 200 and got == data, status)

        # Resumable upload started on A, finished on B.
        data = os.urandom(3 * 262144 + 1000)
        status, headers, _ = request(port_a, "POST", f"/v0/b/{BUCKET}/o?name=resumed.bin",
                                 headers={"X-Goog-Upload-Protocol": "resumable", "X-Goog-Upload-Command": "start"})
        path = session_path(headers["X-Goog-Upload-URL"])
        status, _, _ = request(port_a, "POST", path, data[:262144],
                           {"X-Goog-Upload-Command": "upload", "X-Goog-Upload-Offset": "0"})
        status, headers, _ = request(port_b, "POST", path, headers={"X-Goog-Upload-Command": "query"})
        check("B sees A's session and its offset", headers.get("X-Goog-Upload-Size-Received") == "262144", headers)
        status, _, body = request(port_b, "POST", path, data[262144:],
                              {"X-Goog-Upload-Command": "upload, finalize", "X-Goog-Upload-Offset": "262144"})
        meta = json.loads(body) if status == 200 else {}
        check("the upload finishes on B", status == 200 and meta.get("size") == str(len(data)), (status, body[:200]))
        status, _, got = request(port_a, "GET", f"/v0/b/{BUCKET}/o/resumed.bin?alt=media")
        check("and reads back on A", got == data, status)

        # A dies mid-upload; the client resumes on B.
        data = os.urandom(6 * 262144)
        status, headers, _ = request(port_a, "POST", f"/v0/b/{BUCKET}/o?name=survivor.bin",
                                 headers={"X-Goog-Upload-Protocol": "resumable", "X-Goog-Upload-Command": "start"})
        path = session_path(headers["X-Goog-Upload-URL"])
        for i in range(2):
            request(port_a, "POST", path, data[i * 262144:(i + 1) * 262144],
                {"X-Goog-Upload-Command": "upload", "X-Goog-Upload-Offset": str(i * 262144)})

        def doomed():
            try:
                conn = http.client.HTTPConnection("127.0.0.1", port_a, timeout=10)
                conn.putrequest("POST", path)
                conn.putheader("X-Goog-Upload-Command", "upload")
                conn.putheader("X-Goog-Upload-Offset", str(2 * 262144))
                conn.putheader("Content-Length", str(262144))
                conn.endheaders()
                conn.send(data[2 * 262144:2 * 262144 + 100_000])
                time.sleep(5)
            except OSError:
                pass

        t = threading.Thread(target=doomed)
        t.start()
        time.sleep(0.5)
        a.send_signal(signal.SIGKILL)
        a.wait()
        t.join()
        status, headers, _ = request(port_b, "POST", path, headers={"X-Goog-Upload-Command": "query"})
        offset = int(headers.get("X-Goog-Upload-Size-Received", "-1"))
        check("after A's death B reports the acknowledged offset", offset == 2 * 262144, headers)
        status, _, body = request(port_b, "POST", path, data[offset:],
                              {"X-Goog-Upload-Command": "upload, finalize", "X-Goog-Upload-Offset": str(offset)})
        status, _, got = request(port_b, "GET", f"/v0/b/{BUCKET}/o/survivor.bin?alt=media")
        check("the client finishes the upload on B, bytes intact", got == data, (status, len(got)))

        # Restart A and race preconditioned creates from both nodes.
        a, port_a = start_silo(args.binary, "--data", os.path.join(work, "a"), "--metadata", args.metadata, "--blobs", args.blobs)[:2]
        for round_number in range(5):
            name = f"race-{round_number}.txt"
            outcomes = []

            def create(port, payload):
                boundary = "race"
                body = (f"--{boundary}\r\nContent-Type: application/json\r\n\r\n" + json.dumps({"name": name})
                        + f"\r\n--{boundary}\r\nContent-Type: text/plain\r\n\r\n").encode() + payload + f"\r\n--{boundary}--".encode()
                s, _, _ = request(port, "POST", f"/upload/storage/v1/b/{BUCKET}/o?uploadType=multipart&ifGenerationMatch=0",
                              body, {"Content-Type": f"multipart/related; boundary={boundary}"})
                outcomes.append((s, payload))

            threads = [threading.Thread(target=create, args=(p, f"from {p} #{i}".encode()))
                       for i, p in enumerate([port_a, port_b, port_a, port_b])]
            for th in threads:
                th.start()
            for th in threads:
                th.join()
            winners = [payload for s, payload in outcomes if s == 200]
            losers = [s for s, _ in outcomes if s != 200]
            _, _, stored = request(port_b, "GET", f"/v0/b/{BUCKET}/o/{q(name)}?alt=media")
            check(f"race {round_number}: exactly one of four preconditioned writes wins",
                  len(winners) == 1 and all(s == 412 for s in losers) and stored == winners[0], outcomes)

        # Throughput, one node vs two (reported, not asserted: 2 cores are shared by both nodes and the client).
        request(port_a, "POST", f"/v0/b/{BUCKET}/o?name=small.bin", os.urandom(1024))

        def hammer(ports, seconds=3.0, threads=8):
            count = [0]
            lock = threading.Lock()
            stop = time.time() + seconds

            def worker(i):
                port = ports[i % len(ports)]
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
                n = 0
                while time.time() < stop:
                    conn.request("GET", f"/v0/b/{BUCKET}/o/small.bin?alt=media")
                    conn.getresponse().read()
                    n += 1
                with lock:
                    count[0] += n

            ts = [threading.Thread(target=worker, args=(i,)) for i in range(threads)]
            for th in ts:
                th.start()
            for th in ts:
                th.join()
            return count[0] / seconds

        if shutil.which("wrk"):
            def wrk(port, connections, seconds=5):
                out = subprocess.run(["wrk", "-t1", f"-c{connections}", f"-d{seconds}s",
                                      f"http://127.0.0.1:{port}/v0/b/{BUCKET}/o/small.bin?alt=media"],
                                     capture_output=True, text=True).stdout
                m = re.search(r"Requests/sec:\s+([\d.]+)", out)
                return float(m.group(1)) if m else 0.0

            one = wrk(port_a, 32)
            both = []
            ts = [threading.Thread(target=lambda p=p: both.append(wrk(p, 16))) for p in (port_a, port_b)]
            for th in ts:
                th.start()
            for th in ts:
                th.join()
            two = sum(both)
            tool = "wrk, 32 connections in all, 5 s"
        else:
            one = hammer([port_a])
            two = hammer([port_a, port_b])
            tool = "8 Python client threads, 3 s"
        print(f"throughput (1 KiB GET, {tool}): one node {one:.0f} req/s, two nodes {two:.0f} req/s, ratio {two / one:.2f}",
              flush=True)

        # B writes, then goes: A takes the lease within its 5 s retry and caches again, from an empty cache.
        request(port_b, "POST", f"/v0/b/{BUCKET}/o?name=lease.txt", b"three")
        b.send_signal(signal.SIGTERM)
        b.wait(timeout=30)
        deadline = time.time() + 30
        while time.time() < deadline and not reads_cached(port_a, "lease.txt"):
            time.sleep(0.5)
        check("when B has gone, A caches again", reads_cached(port_a, "lease.txt"))
        _, _, got = request(port_a, "GET", f"/v0/b/{BUCKET}/o/lease.txt?alt=media")
        check("starting from what B wrote last", got == b"three", got)
    finally:
        for p in (a, b):
            if p is not None and p.poll() is None:
                p.send_signal(signal.SIGTERM)
                p.wait(timeout=30)
    failed = results.count(False)
    print(f"{len(results) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
