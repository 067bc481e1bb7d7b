#!/usr/bin/env python3
"""One, two and three `silo serve` nodes on one PostgreSQL and one SeaweedFS: throughput of a mixed load, whether
preconditioned creates race correctly across three nodes, and what PostgreSQL's own statistics say waits.

Run with the services up: scripts/with-services.sh python3 bench/nodes.py [--seconds 8]

For each node count, wrk drives every node at once (the same connections in all, split across the nodes): 1 KiB
v0 uploads to new names and 1 KiB GETs of seeded names, in two wrk processes side by side. Meanwhile
pg_stat_activity is sampled every 50 ms plus the two psql calls each sample costs (a few samples a second): for
each backend of the database that is in a transaction, its wait event (or "running" when it waits on nothing, "idle in transaction" between statements), and pg_locks' ungranted
locks by type. A lock that serializes the nodes shows as Lock waits (`transactionid`, `tuple`, `advisory`) that
grow with the node count. With 2 cores shared by the nodes, PostgreSQL, SeaweedFS and wrk, throughput cannot grow
linearly; the wait events say whether anything in Silo would stop it where the cores would not.
"""
import argparse
import collections
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
from silo_process import request, start_silo  # noqa: E402

BUCKET = "nodes.appspot.com"
SEEDED = 200

REPORT = """
done = function(summary, latency, requests)
  io.write(string.format("RESULT %d %d %.0f %.0f %d\\n", summary.requests, summary.duration,
    latency:percentile(50), latency:percentile(99), summary.errors.status + summary.errors.timeout))
end
"""

UPLOAD = """
math.randomseed(os.time() + %d)
local body = string.rep("u", 1024)
local n = 0
request = function()
  n = n + 1
  return wrk.format("POST", "/v0/b/%s/o?name=load%%2F%d-" .. n .. "-" .. math.random(1, 1000000000), nil, body)
end
"""

READ = """
math.randomseed(os.time() + %d)
request = function()
  return wrk.format("GET", "/v0/b/%s/o/seed%%2F" .. math.random(0, %d) .. "?alt=media")
end
"""


def psql(url, sql):
    out = subprocess.run(["psql", url, "-tAF", "\t", "-c", sql], capture_output=True, text=True, check=True)
    return [line.split("\t") for line in out.stdout.splitlines() if line]


class Sampler(threading.Thread):
    """Samples pg_stat_activity and pg_locks until stopped."""

    def __init__(self, url):
        super().__init__(daemon=True)
        self.url = url
        self.stop = threading.Event()
        self.waits = collections.Counter()
        self.locks = collections.Counter()
        self.samples = 0

    def run(self):
        activity = """
            SELECT coalesce(wait_event_type || ':' || wait_event, CASE WHEN state = 'active' THEN 'running' ELSE state END)
            FROM pg_stat_activity
            WHERE datname = current_database() AND pid <> pg_backend_pid()
              AND state IN ('active', 'idle in transaction') AND backend_type = 'client backend'
        """
        # What the waiting statements are: the first words of each query that waits on a lock.
        locks = """
            SELECT left(regexp_replace(a.query, '\\s+', ' ', 'g'), 60)
            FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid WHERE NOT l.granted
        """
        while not self.stop.is_set():
            for (event,) in psql(self.url, activity):
                self.waits[event] += 1
            for (lock,) in psql(self.url, locks):
                self.locks[lock] += 1
            self.samples += 1
            time.sleep(0.05)


def wrk(script, port, connections, seconds, out):
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as f:
        f.write(script + REPORT)
    process = subprocess.run(["wrk", "-t1", f"-c{connections}", f"-d{seconds}s", "-s", f.name,
                              f"http://127.0.0.1:{port}"], capture_output=True, text=True)
    os.unlink(f.name)
    m = re.search(r"^RESULT (\d+) (\d+) (\d+) (\d+) (\d+)$", process.stdout, re.M)
    out.append(tuple(map(int, m.groups())) if m else None)


def race(ports, tag, rounds=20):
    """Concurrent ifGenerationMatch=0 creates of one name from every node: exactly one wins each round."""
    failures = []
    for r in range(rounds):
        results = []

        def create(port, i):
            status, _, _ = request(port, "POST", f"/upload/storage/v1/b/{BUCKET}/o?uploadType=media"
                                   f"&name=race%2F{tag}{r}&ifGenerationMatch=0", f"{port}-{i}".encode(),
                                   {"Content-Type": "text/plain"})
            results.append(status)

        threads = [threading.Thread(target=create, args=(port, i)) for port in ports for i in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if results.count(200) != 1 or set(results) - {200, 412}:
            failures.append((r, sorted(results)))
    return failures


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", default=".build/release/silo")
    parser.add_argument("--seconds", type=int, default=8)
    parser.add_argument("--connections", type=int, default=24, help="per kind of load, split across the nodes")
    parser.add_argument("--nodes", type=int, nargs="+", default=[1, 2, 3])
    args = parser.parse_args()
    url, blobs = os.environ.get("SILO_TEST_POSTGRES_URL"), os.environ.get("SILO_TEST_S3_URL")
    if not url or not blobs:
        sys.exit("nodes: needs SILO_TEST_POSTGRES_URL and SILO_TEST_S3_URL (scripts/with-services.sh)")
    work = tempfile.mkdtemp(prefix="silo-nodes-")
    processes, ports = [], []
    rows = []
    status = 0
    try:
        for count in sorted(args.nodes):
            while len(ports) < count:
                p, port = start_silo(args.binary, "--data", os.path.join(work, str(len(ports))), "--metadata", url,
                                     "--blobs", blobs)[:2]
                processes.append(p)
                ports.append(port)
            if not rows:
                for i in range(SEEDED + 1):
                    request(ports[0], "POST", f"/v0/b/{BUCKET}/o?name=seed%2F{i}", os.urandom(1024))
            failures = race(ports, f"{count}-")
            if failures:
                status = 1
                print(f"FAIL {count} nodes: preconditioned creates {failures[:3]}", flush=True)
            sampler = Sampler(url)
            sampler.start()
            out_upload, out_read, threads = [], [], []
            per_node = max(1, args.connections // count)
            for i, port in enumerate(ports):
                threads.append(threading.Thread(target=wrk, args=(UPLOAD % (i, BUCKET, i), port, per_node,
                                                                   args.seconds, out_upload)))
                threads.append(threading.Thread(target=wrk, args=(READ % (i, BUCKET, SEEDED), port, per_node,
                                                                   args.seconds, out_read)))
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            sampler.stop.set()
            sampler.join()
            if None in out_upload or None in out_read:
                sys.exit("wrk printed no result")
            row = {
                "nodes": count,
                "uploads_per_s": sum(r[0] for r in out_upload) / args.seconds,
                "upload_p99_ms": max(r[3] for r in out_upload) / 1000,
                "reads_per_s": sum(r[0] for r in out_read) / args.seconds,
                "read_p99_ms": max(r[3] for r in out_read) / 1000,
                "errors": sum(r[4] for r in out_upload + out_read),
                "samples": sampler.samples,
                "waits": dict(sampler.waits.most_common()),
                "ungranted_locks": dict(sampler.locks.most_common()),
            }
            rows.append(row)
            print(json.dumps(row), flush=True)
    finally:
        for p in processes:
            p.terminate()
        for p in processes:
            p.wait(30)
    print("\n| nodes | uploads/s | upload p99 (ms) | GETs/s | GET p99 (ms) | errors | backends in a transaction, per "
          "sample: running / waiting (top waits) | statements waiting on a lock, per sample |")
    print("|---|---|---|---|---|---|---|---|")
    for row in rows:
        n = max(row["samples"], 1)
        running = row["waits"].get("running", 0) / n
        waiting = {k: v / n for k, v in row["waits"].items() if k != "running"}
        top = ", ".join(f"{k} {v:.2f}" for k, v in sorted(waiting.items(), key=lambda kv: -kv[1])[:4])
        locks = ", ".join(f"{k} {v / n:.2f}" for k, v in row["ungranted_locks"].items()) or "none"
        print(f"| {row['nodes']} | {row['uploads_per_s']:.0f} | {row['upload_p99_ms']:.1f} | {row['reads_per_s']:.0f} | "
              f"{row['read_p99_ms']:.1f} | {row['errors']} | {running:.2f} running; {top} | {locks} |")
    return status


if __name__ == "__main__":
    sys.exit(main())
