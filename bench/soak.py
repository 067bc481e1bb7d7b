#!/usr/bin/env python3
"""Memory under mixed load with metadata churn: runs `silo serve` on 127.0.0.1 with its own data
directory, drives a bounded mix of uploads, metadata PATCHes that rewrite up to ~8 KiB of custom metadata on a
rotating set of objects, metadata and media GETs, listings and deletes, and samples the server's RSS (VmRSS from
/proc) throughout. Prints RSS before the load (after a warm-up), at each sample, and at the end, plus requests by
kind and any 5xx. With --reference BINARY, the same churn (a shorter phase) is first run against that binary, so
the figures have a reference from the same run (e.g. the release before the fix).

  bench/soak.py --binary .build/release/silo --seconds 600 [--reference /path/to/old/silo --reference-seconds 60]
               [--attack-rounds 100]   # the issue's 1 MiB PATCH + GET rounds, RSS growth per round

Standard library only; stops everything it started. Exit status 1 on a 5xx or a server that died.
"""
import argparse
import json
import os
import random
import shutil
import signal
import sys
import tempfile
import threading
import time
import urllib.parse

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
from silo_process import request, start_silo  # noqa: E402

BUCKET = "soak.appspot.com"


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def q(name):
    return urllib.parse.quote(name, safe="")


class Counts:
    def __init__(self):
        self.lock = threading.Lock()
        self.by_kind = {}
        self.server_errors = []

    def add(self, kind, status):
        with self.lock:
            self.by_kind[kind] = self.by_kind.get(kind, 0) + 1
            if status >= 500:
                self.server_errors.append((kind, status))


def worker(port, stop, seed, counts, names):
    rng = random.Random(seed)
    while not stop.is_set():
        name = rng.choice(names)
        roll = rng.random()
        try:
            if roll < 0.15:
                size = rng.choice([0, 100, 4096, 65536, 300000])
                status, _, _ = request(port, "POST", f"/v0/b/{BUCKET}/o?name={q(name)}", os.urandom(size))
                kind = "upload"
            elif roll < 0.45:
                # Churn: a new metageneration with up to ~8 KiB of fresh custom metadata, each time different.
                keys = rng.randint(1, 40)
                budget = 7000 // keys
                metadata = {f"k{rng.randrange(1 << 20)}": "v" * rng.randint(1, budget) for _ in range(keys)}
                body = json.dumps({"metadata": None}).encode() if rng.random() < 0.2 else \
                    json.dumps({"metadata": metadata, "cacheControl": f"max-age={rng.randrange(9999)}"}).encode()
                status, _, _ = request(port, "PATCH", f"/v0/b/{BUCKET}/o/{q(name)}", body,
                                       {"Content-Type": "application/json"})
                kind = "patch"
            elif roll < 0.70:
                status, _, _ = request(port, "GET", f"/v0/b/{BUCKET}/o/{q(name)}")
                kind = "get metadata"
            elif roll < 0.90:
                status, _, _ = request(port, "GET", f"/v0/b/{BUCKET}/o/{q(name)}?alt=media")
                kind = "get media"
            elif roll < 0.97:
                status, _, _ = request(port, "GET", f"/v0/b/{BUCKET}/o?prefix=soak%2F&maxResults=100")
                kind = "list"
            else:
                status, _, _ = request(port, "DELETE", f"/v0/b/{BUCKET}/o/{q(name)}")
                kind = "delete"
        except OSError:
            continue
        counts.add(kind, status)


def phase(binary, seconds, workers, label, sample_every):
    data = tempfile.mkdtemp(prefix="silo-soak-")
    proc, port, _ = start_silo(binary, "--data", data, "--threads", "4")
    try:
        names = [f"soak/{i:04d}" for i in range(2000)]
        for name in names:
            request(port, "POST", f"/v0/b/{BUCKET}/o?name={q(name)}", b"seed " + name.encode())
        warm = Counts()
        stop = threading.Event()
        threads = [threading.Thread(target=worker, args=(port, stop, i, warm, names), daemon=True)
                   for i in range(workers)]
        for t in threads:
            t.start()
        time.sleep(min(20, seconds / 10))
        stop.set()
        for t in threads:
            t.join()
        before = rss_kib(proc.pid)
        print(f"[{label}] RSS after seeding 2000 objects and a warm-up: {before / 1024:.1f} MiB", flush=True)
        counts = Counts()
        stop = threading.Event()
        threads = [threading.Thread(target=worker, args=(port, stop, 1000 + i, counts, names), daemon=True)
                   for i in range(workers)]
        started = time.time()
        for t in threads:
            t.start()
        samples = []
        while time.time() - started < seconds:
            time.sleep(sample_every)
            if proc.poll() is not None:
                raise SystemExit(f"[{label}] silo serve died")
            samples.append((time.time() - started, rss_kib(proc.pid)))
            print(f"[{label}] t={samples[-1][0]:6.0f}s RSS {samples[-1][1] / 1024:7.1f} MiB  requests "
                  f"{sum(counts.by_kind.values())}", flush=True)
        stop.set()
        for t in threads:
            t.join()
        after = rss_kib(proc.pid)
        total = sum(counts.by_kind.values())
        patches = counts.by_kind.get("patch", 0)
        peak = max([s[1] for s in samples] + [after])
        print(f"[{label}] {seconds} s, {total} requests {dict(sorted(counts.by_kind.items()))}, "
              f"{len(counts.server_errors)} 5xx", flush=True)
        print(f"[{label}] RSS before {before / 1024:.1f} MiB, after {after / 1024:.1f} MiB, peak {peak / 1024:.1f} MiB; "
              f"growth {(after - before) / 1024:+.1f} MiB, {(after - before) / max(patches, 1) * 1000 / 1024:+.2f} MiB "
              f"per 1000 PATCHes", flush=True)
        return counts.server_errors
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except Exception:
            proc.kill()
        shutil.rmtree(data, ignore_errors=True)


def attack(binary, rounds, label):
    """The issue's reproduction: each round PATCHes ~1 MiB of new custom metadata keys onto one object and reads it
    back. Reports the RSS growth per round (the fix refuses the PATCH with 400, so nothing accumulates)."""
    data = tempfile.mkdtemp(prefix="silo-soak-")
    proc, port, _ = start_silo(binary, "--data", data, "--threads", "4")
    try:
        request(port, "POST", f"/v0/b/{BUCKET}/o?name=victim", b"v")
        before = rss_kib(proc.pid)
        statuses = {}
        for index in range(rounds):
            metadata = {f"r{index}k{k}": "x" * 1000 for k in range(1000)}
            status, _, _ = request(port, "PATCH", f"/v0/b/{BUCKET}/o/victim", json.dumps({"metadata": metadata}).encode(),
                                   {"Content-Type": "application/json"})
            request(port, "GET", f"/v0/b/{BUCKET}/o/victim")
            statuses[status] = statuses.get(status, 0) + 1
        after = rss_kib(proc.pid)
        print(f"[{label} attack] {rounds} rounds of a ~1 MiB PATCH + GET: statuses {statuses}; RSS {before / 1024:.1f} → "
              f"{after / 1024:.1f} MiB, {(after - before) / rounds / 1024:+.2f} MiB per round", flush=True)
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except Exception:
            proc.kill()
        shutil.rmtree(data, ignore_errors=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", default=".build/release/silo")
    parser.add_argument("--seconds", type=int, default=600)
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument("--sample-every", type=float, default=30)
    parser.add_argument("--reference", help="another silo binary to run the same churn against first")
    parser.add_argument("--reference-seconds", type=int, default=60)
    parser.add_argument("--attack-rounds", type=int, default=0,
                        help="also run the issue's 1 MiB-PATCH reproduction this many rounds (on both binaries)")
    args = parser.parse_args()
    errors = []
    if args.attack_rounds:
        if args.reference:
            attack(args.reference, args.attack_rounds, "reference")
        attack(args.binary, args.attack_rounds, "silo")
    if args.reference:
        errors += phase(args.reference, args.reference_seconds, args.workers, "reference", min(args.sample_every, 10))
    errors += phase(args.binary, args.seconds, args.workers, "silo", args.sample_every)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
