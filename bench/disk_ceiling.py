#!/usr/bin/env python3
"""The disk's own ceiling for small durable writes, as bench/small_uploads.sh reports it beside Silo's upload rate.

Each operation is what a durable 1 KiB upload to a file of its own needs from the file system: create a new file
in a two-level directory tree (the blob store's layout, blobs/ab/cd/<id>), write 1 KiB, fdatasync it, close it, and
fsync its directory. THREADS threads do this at once for SECONDS; prints one line: operations/s, p50 and p99 in
microseconds. The file system folds concurrent fsyncs into one journal commit, so the rate grows with threads up to
what the device allows: that is the figure a server that makes concurrent uploads durable together can reach.

Usage: bench/disk_ceiling.py DIR THREADS SECONDS   (DIR: a fresh directory on the file system under test)
"""
import os
import sys
import threading
import time


def main() -> None:
    root, threads, seconds = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
    body = os.urandom(1024)
    # 256 first-level directories, made up front as the blob store has them after its first uploads.
    for a in range(256):
        os.makedirs(os.path.join(root, f"{a:02x}"), exist_ok=True)
    latencies: list[list[float]] = [[] for _ in range(threads)]
    deadline = time.monotonic() + seconds

    def work(index: int) -> None:
        mine = latencies[index]
        n = 0
        while True:
            start = time.monotonic()
            if start >= deadline:
                return
            n += 1
            name = os.urandom(8).hex()
            directory = os.path.join(root, name[:2], name[2:4])
            os.makedirs(directory, exist_ok=True)
            fd = os.open(os.path.join(directory, name), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            try:
                os.write(fd, body)
                os.fdatasync(fd)
            finally:
                os.close(fd)
            dfd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
            try:
                os.fsync(dfd)
            finally:
                os.close(dfd)
            mine.append(time.monotonic() - start)

    began = time.monotonic()
    workers = [threading.Thread(target=work, args=(i,)) for i in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    elapsed = time.monotonic() - began
    every = sorted(x for mine in latencies for x in mine)
    if not every:
        raise SystemExit("no operation finished")

    def pct(p: float) -> float:
        return every[min(len(every) - 1, int(len(every) * p / 100))] * 1e6

    print(f"{len(every) / elapsed:.0f} {pct(50):.0f} {pct(99):.0f}")


if __name__ == "__main__":
    main()
