#!/usr/bin/env python3
"""Crash test for `silo serve`: durability across kill -9.

Each round starts the server on a persistent data directory, runs concurrent uploads and overwrites (media,
multipart and resumable) against a small set of names, kills the server with SIGKILL at a random moment, restarts
it and checks that:
  * every readable object is exactly one of the versions written under its name (no torn or mixed bytes), and its
    md5Hash/size metadata matches the bytes served;
  * every acknowledged upload is there: the name exists with a generation at least the acknowledged one;
  * beside them, many concurrent 1 KiB uploads to names of their own (--small-writers; the server commits such
    uploads in groups, one WAL fsync for all that are ready together): every acknowledged one is there with its
    bytes, and one that was not acknowledged is either there with its bytes or absent;
  * after the restart's first maintenance pass (in the background, once it serves), the blob folder holds exactly
    one file per live object larger than 4 KiB (no orphans; smaller ones are rows of the metadata store,
    `--inline-limit`);
  * resumable uploads the kill interrupted (in a chunk or in finalize) are retried after the restart as a client
    does (query the session, send what it lacks, finalize): the retry answers 200 with the bytes it sent — or, if
    the first finalize had committed and a later upload replaced it since, with the live version — never a 5xx.
Bounded in time and count; talks to 127.0.0.1 only. Exit status 0 on success. Standard library only.
"""
import argparse
import base64
import hashlib
import http.client
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

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from silo_process import request, start_silo, wait_for_maintenance_pass  # noqa: E402


BUCKET = "crash.appspot.com"
# `silo serve --inline-limit`'s default: objects up to this size are rows of the metadata store, not blob files.
INLINE_LIMIT = 4096
NAMES = [f"crash/obj-{i:02d}" for i in range(16)] + ["crash/deep/a b/ü", "crash/x+y"]


def q(name):
    return urllib.parse.quote(name, safe="")


class Ledger:
    def __init__(self):
        self.lock = threading.Lock()
        self.attempted = {}   # name -> set of md5 hex of every version ever sent
        self.acked = {}       # name -> highest acknowledged generation
        self.open_sessions = 0  # resumable starts attempted and not finalized (their blobs stay until expiry)
        self.acknowledged = 0   # uploads answered 200
        self.interrupted = []   # (session path, name, data) of resumable uploads cut by the kill
        self.retried = {"final": 0, "resumed": 0, "replaced": 0, "failed": 0}
        self.small = {}         # name -> (md5 hex, acknowledged generation or 0) of the small uploads not yet verified
        self.small_live = 0     # small objects verified present (each name is written once, and never deleted)
        self.small_acknowledged = 0

    def attempt(self, name, digest):
        with self.lock:
            self.attempted.setdefault(name, set()).add(digest)

    def session(self, delta):
        with self.lock:
            self.open_sessions += delta

    def ack(self, name, generation):
        with self.lock:
            self.acked[name] = max(self.acked.get(name, 0), generation)
            self.acknowledged += 1


def upload(port, name, data, mode, ledger):
    if mode == "media":
        return request(port, "POST", f"/v0/b/{BUCKET}/o?name={q(name)}", data)
    if mode == "multipart":
        boundary = "crashboundary%d" % random.randrange(1 << 30)
        meta = json.dumps({"name": name, "contentType": "application/x-crash"}).encode()
        body = (b"--" + boundary.encode() + b"\r\nContent-Type: application/json\r\n\r\n" + meta + b"\r\n--" +
                boundary.encode() + b"\r\nContent-Type: application/octet-stream\r\n\r\n" + data + b"\r\n--" +
                boundary.encode() + b"--")
        return request(port, "POST", f"/v0/b/{BUCKET}/o?name={q(name)}", body,
                       {"X-Goog-Upload-Protocol": "multipart", "Content-Type": f"multipart/related; boundary={boundary}"})
    ledger.session(+1)
    status, headers, _ = request(port, "POST", f"/v0/b/{BUCKET}/o?name={q(name)}", b"",
                                 {"X-Goog-Upload-Protocol": "resumable", "X-Goog-Upload-Command": "start"})
    if status != 200:
        return status, headers, b""
    url = urllib.parse.urlsplit(headers["X-Goog-Upload-URL"])
    path = url.path + "?" + url.query
    chunk = 262144
    offset = 0
    try:
        while offset + chunk < len(data):
            status, headers, body = request(port, "POST", path, data[offset:offset + chunk],
                                            {"X-Goog-Upload-Command": "upload", "X-Goog-Upload-Offset": str(offset)})
            if status != 200:
                return status, headers, body
            offset += chunk
        result = request(port, "POST", path, data[offset:],
                         {"X-Goog-Upload-Command": "upload, finalize", "X-Goog-Upload-Offset": str(offset)})
    except (OSError, http.client.HTTPException):
        # The kill cut this upload: after the restart the client picks it up where the server says it is.
        with ledger.lock:
            ledger.interrupted.append((path, name, data))
        raise
    if result[0] == 200:
        ledger.session(-1)
    return result


def retry_interrupted(port, ledger):
    """Finishes the uploads the kill cut, as a client would after reconnecting; returns the problems seen."""
    problems = []
    with ledger.lock:
        pending, ledger.interrupted = ledger.interrupted, []
    for path, name, data in pending:
        status, headers, _ = request(port, "POST", path, b"", {"X-Goog-Upload-Command": "query"})
        if status >= 500:
            problems.append(f"{name}: query after restart answered {status}")
            continue
        state = headers.get("X-Goog-Upload-Status")
        if state == "active":
            received = int(headers.get("X-Goog-Upload-Size-Received", "0"))
            status, _, body = request(port, "POST", path, data[received:],
                                      {"X-Goog-Upload-Command": "upload, finalize",
                                       "X-Goog-Upload-Offset": str(received)})
            kind = "resumed"
        else:
            status, _, body = request(port, "POST", path, b"", {"X-Goog-Upload-Command": "finalize"})
            kind = "final"
        if status != 200:
            ledger.retried["failed"] += 1
            if status >= 500:
                problems.append(f"{name}: retried finalize answered {status}")
            continue
        meta = json.loads(body)
        if base64.b64decode(meta["md5Hash"]).hex() == hashlib.md5(data).hexdigest():
            ledger.retried[kind] += 1
            ledger.ack(name, int(meta["generation"]))
            ledger.session(-1)
        else:
            # The first finalize committed, and another writer's upload replaced it before the kill.
            ledger.retried["replaced"] += 1
            ledger.session(-1)
    return problems


def writer(port, ledger, stop, rng):
    while not stop.is_set():
        name = rng.choice(NAMES)
        data = os.urandom(rng.choice([0, 1, 100, 4096, 70000, 300000, 1100000]))
        ledger.attempt(name, hashlib.md5(data).hexdigest())
        try:
            status, _, body = upload(port, name, data, rng.choice(["media", "multipart", "resumable"]), ledger)
        except (OSError, http.client.HTTPException):
            continue
        if status == 200:
            meta = json.loads(body)
            if base64.b64decode(meta["md5Hash"]).hex() != hashlib.md5(data).hexdigest():
                raise SystemExit(f"server acknowledged {name} with a wrong md5")
            ledger.ack(name, int(meta["generation"]))


def small_writer(port, ledger, stop, prefix):
    """1 KiB media uploads, each to a new name, as fast as the server answers them."""
    n = 0
    while not stop.is_set():
        n += 1
        name = f"{prefix}/{n}"
        data = os.urandom(1024)
        with ledger.lock:
            ledger.small[name] = (hashlib.md5(data).hexdigest(), 0)
        try:
            status, _, body = request(port, "POST", f"/v0/b/{BUCKET}/o?name={q(name)}", data)
        except (OSError, http.client.HTTPException):
            continue
        if status == 200:
            meta = json.loads(body)
            if base64.b64decode(meta["md5Hash"]).hex() != hashlib.md5(data).hexdigest():
                raise SystemExit(f"server acknowledged {name} with a wrong md5")
            with ledger.lock:
                ledger.small[name] = (ledger.small[name][0], int(meta["generation"]))
                ledger.small_acknowledged += 1


def verify_small(port, ledger):
    """Checks the small uploads since the last check; returns the problems seen."""
    problems = []
    with ledger.lock:
        pending, ledger.small = ledger.small, {}
    for name, (digest, acked) in pending.items():
        status, _, body = request(port, "GET", f"/v0/b/{BUCKET}/o/{q(name)}")
        if status == 404:
            if acked:
                problems.append(f"{name}: acknowledged small upload (generation {acked}) lost")
            continue
        if status != 200:
            problems.append(f"{name}: metadata status {status}")
            continue
        ledger.small_live += 1
        meta = json.loads(body)
        if acked and int(meta["generation"]) != acked:
            problems.append(f"{name}: generation {meta['generation']}, acknowledged {acked}")
        status, _, data = request(port, "GET", f"/v0/b/{BUCKET}/o/{q(name)}?alt=media")
        if status != 200 or hashlib.md5(data).hexdigest() != digest:
            problems.append(f"{name}: small upload reads back as status {status}, other bytes")
    return problems


def verify(port, ledger, data_dir):
    problems = verify_small(port, ledger)
    live = ledger.small_live
    # The small writers' 1 KiB objects are inline: only larger live objects are files.
    stored = 0
    for name in NAMES:
        status, _, body = request(port, "GET", f"/v0/b/{BUCKET}/o/{q(name)}")
        acked = ledger.acked.get(name)
        if status == 404:
            if acked:
                problems.append(f"{name}: acknowledged generation {acked} lost")
            continue
        if status != 200:
            problems.append(f"{name}: metadata status {status}")
            continue
        live += 1
        meta = json.loads(body)
        if int(meta["size"]) > INLINE_LIMIT:
            stored += 1
        if acked and int(meta["generation"]) < acked:
            problems.append(f"{name}: generation {meta['generation']} older than acknowledged {acked}")
        status, _, data = request(port, "GET", f"/v0/b/{BUCKET}/o/{q(name)}?alt=media")
        digest = hashlib.md5(data).hexdigest()
        if status != 200:
            problems.append(f"{name}: download status {status}")
        elif digest not in ledger.attempted.get(name, set()):
            problems.append(f"{name}: bytes are none of the versions written (torn?)")
        elif base64.b64decode(meta["md5Hash"]).hex() != digest or int(meta["size"]) != len(data):
            problems.append(f"{name}: metadata does not describe the bytes served")
    # The restart's first maintenance pass runs in the background, once the server serves: it has to be done.
    wait_for_maintenance_pass(port)
    blobs = sum(len(files) for _, _, files in os.walk(os.path.join(data_dir, "blobs")))
    # Unfinished resumable sessions keep their blob until they expire; nothing else may stay.
    if not stored <= blobs <= stored + ledger.open_sessions:
        problems.append(f"{blobs} blob files for {stored} live objects past {INLINE_LIMIT} bytes "
                        f"and at most {ledger.open_sessions} open sessions")
    return problems, live


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", default=".build/release/silo")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--writers", type=int, default=8)
    parser.add_argument("--small-writers", type=int, default=16,
                        help="threads uploading 1 KiB objects to names of their own, beside the writers")
    parser.add_argument("--seed", type=int, default=int(time.time()))
    parser.add_argument("--corrupt-one-blob", action="store_true",
                        help="self-check: flip a byte in one blob between rounds; the test must then fail")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    data_dir = tempfile.mkdtemp(prefix="silo-crash-")
    ledger = Ledger()
    failures = 0
    started = time.time()
    try:
        for round_number in range(1, args.rounds + 1):
            proc, port, _ = start_silo(args.binary, "--data", data_dir)
            if round_number > 1:
                retry_problems = retry_interrupted(port, ledger)
                problems, live = verify(port, ledger, data_dir)
                problems = retry_problems + problems
                print(f"round {round_number - 1}: {live} objects checked, {len(problems)} problems", flush=True)
                for p in problems:
                    print("  " + p, flush=True)
                failures += len(problems)
            stop = threading.Event()
            threads = [threading.Thread(target=writer, args=(port, ledger, stop, random.Random(rng.random())), daemon=True)
                       for _ in range(args.writers)]
            threads += [threading.Thread(target=small_writer, args=(port, ledger, stop, f"small/{round_number}/{i}"),
                                         daemon=True) for i in range(args.small_writers)]
            for t in threads:
                t.start()
            time.sleep(rng.uniform(0.3, 2.0))
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            stop.set()
            for t in threads:
                t.join(timeout=15)
            if args.corrupt_one_blob and round_number == args.rounds:
                for root, _, files in os.walk(os.path.join(data_dir, "blobs")):
                    sizes = [(os.path.getsize(os.path.join(root, f)), os.path.join(root, f)) for f in files]
                    victim = next((path for size, path in sizes if size > 0), None)
                    if victim:
                        with open(victim, "r+b") as f:
                            byte = f.read(1)
                            f.seek(0)
                            f.write(bytes([byte[0] ^ 0xFF]))
                        break
        proc, port, _ = start_silo(args.binary, "--data", data_dir)
        problems = retry_interrupted(port, ledger)
        verified, live = verify(port, ledger, data_dir)
        problems += verified
        print(f"round {args.rounds}: {live} objects checked, {len(problems)} problems", flush=True)
        for p in problems:
            print("  " + p, flush=True)
        failures += len(problems)
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=30)
        if code != 0:
            print(f"server exited {code} after SIGTERM", flush=True)
            failures += 1
    finally:
        shutil.rmtree(data_dir, ignore_errors=True)
    acked = sum(1 for v in ledger.acked.values() if v)
    print(f"crash test: {args.rounds} kill -9 rounds, seed {args.seed}, {ledger.acknowledged} uploads acknowledged "
          f"across {acked} names and {ledger.small_acknowledged} small uploads to names of their own, "
          f"interrupted resumable uploads retried after restart: {ledger.retried}, "
          f"{time.time() - started:.1f}s")
    print(f"{args.rounds - min(failures, args.rounds)} passed, {min(failures, args.rounds)} failed" if failures else
          f"{args.rounds} passed, 0 failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
