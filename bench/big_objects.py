#!/usr/bin/env python3
"""Big objects: one 16 GiB object through a GCS JSON resumable upload (in chunks, as google-cloud-storage sends
them) and a ranged parallel download, against a 256 MiB object the same way in the same run; then a compose of 32
parts into one object. The server's RSS (VmRSS) is sampled every 0.2 s throughout and reported per phase: it must
stay flat (the 16 GiB phases no higher than the 256 MiB ones).

The data is generated, not stored on the client: block k (8 MiB) of an object is a fixed random 8 MiB block whose
first 16 bytes are (seed, k), so every block differs and every downloaded block is compared with what it must be
(and the server's MD5 with the one computed while sending, when --md5 is given). Each phase runs in its own data
directory, deleted afterwards, so the disk never holds more than the object at hand (compose: the parts and the
result).

  bench/big_objects.py --binary .build/release/silo [--size-gib 16] [--reference-mib 256] [--chunk-mib 100]
                       [--ranges 8] [--parts 32] [--part-mib 256] [--rounds 2] [--out bench/results/big_objects.md]

Server on CPU 0, the client on CPU 1 (taskset), as in bench/lib.sh. SQLite + disk by default; with --metadata and
--blobs (URLs, as `silo serve` takes them) another store pair. Loopback only; stops what it starts. Standard
library only.
"""
import argparse
import hashlib
import http.client
import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

BLOCK = 8 << 20
BUCKET = "big-objects"
MIB = 1 << 20


class Generator:
    """Block k of the object with this seed: BASE with (seed, k) in its first 16 bytes."""
    base = os.urandom(BLOCK)

    def __init__(self, seed):
        self.seed = seed

    def block(self, k, into=None):
        b = into if into is not None else bytearray(BLOCK)
        b[:] = self.base
        b[0:16] = struct.pack("<QQ", self.seed, k)
        return b


class RSSSampler(threading.Thread):
    """VmRSS of the server every 0.2 s, tagged with the phase running."""

    def __init__(self, pid):
        super().__init__(daemon=True)
        self.pid, self.phase, self.samples, self.running = pid, "idle", [], True

    def run(self):
        while self.running:
            try:
                with open(f"/proc/{self.pid}/status") as f:
                    for line in f:
                        if line.startswith("VmRSS:"):
                            self.samples.append((self.phase, int(line.split()[1])))
            except OSError:
                return
            time.sleep(0.2)

    def stats(self, phase):
        """(min, max, last, count, max over the first quarter, max over the last quarter) of a phase."""
        values = [v for p, v in self.samples if p == phase]
        if not values:
            return (0, 0, 0, 0, 0, 0)
        quarter = max(1, len(values) // 4)
        return (min(values), max(values), values[-1], len(values), max(values[:quarter]), max(values[-quarter:]))


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Server:
    def __init__(self, args, work, name):
        self.data = os.path.join(work, name)
        self.port = free_port()
        extra = []
        if args.metadata:
            extra += ["--metadata", args.metadata]
        if args.blobs:
            extra += ["--blobs", args.blobs]
        self.log = open(self.data + ".log", "w")
        self.proc = subprocess.Popen(
            ["taskset", "-c", args.server_cpu, args.binary, "serve", "--port", str(self.port), "--data", self.data,
             *extra], stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.time() + 60
        while time.time() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                break
            except OSError:
                if self.proc.poll() is not None:
                    raise RuntimeError("silo exited at startup")
                time.sleep(0.1)
        self.sampler = RSSSampler(self.proc.pid)
        self.sampler.start()
        status, body = self.json("POST", "/storage/v1/b?project=bench", {"name": BUCKET})
        assert status == 200, (status, body)

    def conn(self, timeout=600):
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)

    def json(self, method, path, value=None):
        c = self.conn()
        try:
            body = json.dumps(value).encode() if value is not None else None
            c.request(method, path, body=body, headers={"Content-Type": "application/json"} if body else {})
            r = c.getresponse()
            data = r.read()
            return r.status, (json.loads(data) if data.strip() else None)
        finally:
            c.close()

    def stop(self):
        self.sampler.running = False
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()

    def disk_bytes(self):
        out = subprocess.run(["du", "-sb", self.data], capture_output=True, text=True).stdout
        return int(out.split()[0]) if out else 0


def resumable_upload(server, name, size, gen, chunk, md5=False):
    """GCS JSON API resumable upload in `chunk`-byte requests (a multiple of 256 KiB, as the API requires), the last
    one naming the total. Returns (seconds, object resource, md5 hex or None)."""
    assert chunk % (256 << 10) == 0
    q = urllib.parse.quote(name, safe="")
    c = server.conn()
    c.request("POST", f"/upload/storage/v1/b/{BUCKET}/o?uploadType=resumable&name={q}",
              body=json.dumps({"name": name}).encode(), headers={"Content-Type": "application/json",
                                                                  "X-Upload-Content-Length": str(size)})
    r = c.getresponse()
    r.read()
    assert r.status == 200, r.status
    location = urllib.parse.urlsplit(r.getheader("Location"))
    session_path = location.path + "?" + location.query
    hasher = hashlib.md5() if md5 else None
    buffer = bytearray(BLOCK)
    t0 = time.perf_counter()
    offset, resource = 0, None
    while offset < size:
        length = min(chunk, size - offset)
        last = offset + length == size
        c.putrequest("PUT", session_path, skip_accept_encoding=True)
        c.putheader("Content-Length", str(length))
        c.putheader("Content-Range", f"bytes {offset}-{offset + length - 1}/{size if last else '*'}")
        c.endheaders()
        sent = 0
        while sent < length:
            # The generated block this byte falls in (chunks need not be multiples of a block).
            at = offset + sent
            block = gen.block(at // BLOCK, buffer)
            piece = memoryview(block)[at % BLOCK:min(BLOCK, at % BLOCK + length - sent)]
            c.sock.sendall(piece)
            if hasher:
                hasher.update(piece)
            sent += len(piece)
        r = c.getresponse()
        data = r.read()
        if last:
            assert r.status == 200, (r.status, data[:300])
            resource = json.loads(data)
        else:
            assert r.status == 308, (r.status, data[:300])
            assert r.getheader("Range") == f"bytes=0-{offset + length - 1}", r.getheader("Range")
        offset += length
    seconds = time.perf_counter() - t0
    c.close()
    return seconds, resource, hasher.hexdigest() if hasher else None


def media_upload(server, name, size, gen):
    q = urllib.parse.quote(name, safe="")
    c = server.conn()
    c.putrequest("POST", f"/upload/storage/v1/b/{BUCKET}/o?uploadType=media&name={q}", skip_accept_encoding=True)
    c.putheader("Content-Type", "application/octet-stream")
    c.putheader("Content-Length", str(size))
    c.endheaders()
    buffer = bytearray(BLOCK)
    for k in range(size // BLOCK):
        c.sock.sendall(gen.block(k, buffer))
    r = c.getresponse()
    data = r.read()
    c.close()
    assert r.status == 200, (r.status, data[:300])
    return json.loads(data)


def ranged_download(server, name, size, expected, ranges):
    """`ranges` parallel GETs (`alt=media`, `Range: bytes=a-b`), each on its own connection, every 8 MiB block
    compared with `expected(offset)` (the block that must start at that offset). Returns (seconds, mismatches)."""
    q = urllib.parse.quote(name, safe="")
    per = -(-size // ranges // BLOCK) * BLOCK
    mismatches = []
    errors = []

    def worker(first):
        last = min(size, first + per) - 1
        try:
            c = server.conn()
            c.request("GET", f"/storage/v1/b/{BUCKET}/o/{q}?alt=media", headers={"Range": f"bytes={first}-{last}"})
            r = c.getresponse()
            assert r.status == 206, r.status
            buf = bytearray(BLOCK)
            want = bytearray(BLOCK)
            view = memoryview(buf)
            offset = first
            while offset <= last:
                n = min(BLOCK, last + 1 - offset)
                got = 0
                while got < n:
                    k = r.readinto(view[got:n])
                    if not k:
                        raise RuntimeError(f"short body at {offset + got}")
                    got += k
                expected(offset, want)
                if view[:n] != memoryview(want)[:n]:
                    mismatches.append(offset)
                offset += n
            r.read()
            c.close()
        except Exception as e:  # reported after the join
            errors.append(repr(e))

    threads = [threading.Thread(target=worker, args=(first,)) for first in range(0, size, per)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    seconds = time.perf_counter() - t0
    if errors:
        raise RuntimeError("download failed: " + "; ".join(errors))
    return seconds, mismatches


def object_round(args, work, size, seed, label):
    """Upload and download one object of `size` bytes in a fresh server; returns the figures."""
    server = Server(args, work, f"data-{label}")
    gen = Generator(seed)
    try:
        server.sampler.phase = "warm"
        time.sleep(1)
        server.sampler.phase = "upload"
        up_s, resource, md5 = resumable_upload(server, f"{label}.bin", size, gen, args.chunk_mib * MIB, args.md5)
        assert int(resource["size"]) == size, resource
        if md5:
            import base64
            assert base64.b64decode(resource["md5Hash"]).hex() == md5, (resource["md5Hash"], md5)
        disk = server.disk_bytes()
        server.sampler.phase = "download"
        down_s, bad = ranged_download(server, f"{label}.bin", size,
                                      lambda offset, into: gen.block(offset // BLOCK, into), args.ranges)
        server.sampler.phase = "after"
        time.sleep(0.5)
        return {"label": label, "size": size, "up_s": up_s, "down_s": down_s, "bad": len(bad), "disk": disk,
                "md5": md5 is not None,
                "rss": {p: server.sampler.stats(p) for p in ("warm", "upload", "download", "after")}}
    finally:
        server.stop()
        shutil.rmtree(server.data, ignore_errors=True)


def compose_round(args, work):
    server = Server(args, work, "data-compose")
    part_size = args.part_mib * MIB
    try:
        server.sampler.phase = "parts"
        t0 = time.perf_counter()
        for i in range(args.parts):
            media_upload(server, f"part-{i:02d}", part_size, Generator(100 + i))
        parts_s = time.perf_counter() - t0
        server.sampler.phase = "compose"
        body = {"sourceObjects": [{"name": f"part-{i:02d}"} for i in range(args.parts)],
                "destination": {"contentType": "application/octet-stream"}}
        t0 = time.perf_counter()
        status, resource = server.json("POST", f"/storage/v1/b/{BUCKET}/o/composed.bin/compose", body)
        compose_s = time.perf_counter() - t0
        assert status == 200, (status, resource)
        total = part_size * args.parts
        assert int(resource["size"]) == total, resource
        server.sampler.phase = "download"

        def expected(offset, into):
            Generator(100 + offset // part_size).block((offset % part_size) // BLOCK, into)

        down_s, bad = ranged_download(server, "composed.bin", total, expected, args.ranges)
        server.sampler.phase = "after"
        # The disk's own pace in the same run: compose is a kernel copy and an fsync, so it goes no faster.
        reference = os.path.join(server.data, "dd-reference")
        t0 = time.perf_counter()
        subprocess.run(["dd", "if=/dev/zero", f"of={reference}", "bs=1M", "count=1024", "conv=fsync", "status=none"],
                       check=True)
        dd_mibs = 1024 / (time.perf_counter() - t0)
        os.unlink(reference)
        return {"parts": args.parts, "part_size": part_size, "total": total, "parts_s": parts_s,
                "compose_s": compose_s, "down_s": down_s, "dd_mibs": dd_mibs, "bad": len(bad), "crc32c": resource.get("crc32c"),
                "components": resource.get("componentCount"),
                "rss": {p: server.sampler.stats(p) for p in ("parts", "compose", "download", "after")}}
    finally:
        server.stop()
        shutil.rmtree(server.data, ignore_errors=True)


def mibs(size, seconds):
    return size / MIB / seconds


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--binary", default=".build/release/silo")
    ap.add_argument("--size-gib", type=float, default=16)
    ap.add_argument("--reference-mib", type=int, default=256)
    ap.add_argument("--chunk-mib", type=int, default=100, help="resumable chunk (google-cloud-storage's default: 100 MiB)")
    ap.add_argument("--ranges", type=int, default=8)
    ap.add_argument("--parts", type=int, default=32)
    ap.add_argument("--part-mib", type=int, default=256)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--md5", action="store_true", help="also hash on the client and compare with the server's MD5")
    ap.add_argument("--metadata")
    ap.add_argument("--blobs")
    ap.add_argument("--skip-compose", action="store_true")
    ap.add_argument("--server-cpu", default="0")
    ap.add_argument("--load-cpu", default="1" if os.cpu_count() >= 2 else "0")
    ap.add_argument("--out", default="bench/results/big_objects.md")
    args = ap.parse_args()
    os.sched_setaffinity(0, {int(c) for c in args.load_cpu.split(",")})
    size = int(args.size_gib * (1 << 30)) // BLOCK * BLOCK
    ref = args.reference_mib * MIB
    need = max(size, args.parts * args.part_mib * MIB * 2) + (4 << 30)
    free = shutil.disk_usage(tempfile.gettempdir()).free
    if free < need:
        sys.exit(f"{free >> 30} GiB free on the temp disk, {need >> 30} GiB needed")
    work = tempfile.mkdtemp(prefix="silo-big-")
    rows, composes = [], []
    try:
        for rnd in range(1, args.rounds + 1):
            for label, n, seed in (("ref", ref, 2000 + rnd), ("big", size, 1000 + rnd)):
                row = object_round(args, work, n, seed, label)
                row["round"] = rnd
                rows.append(row)
                print(f"round {rnd} {label} {n / MIB:.0f} MiB: upload {mibs(n, row['up_s']):.0f} MiB/s, download "
                      f"{mibs(n, row['down_s']):.0f} MiB/s, bad blocks {row['bad']}, RSS {row['rss']}",
                      file=sys.stderr)
            if not args.skip_compose:
                comp = compose_round(args, work)
                comp["round"] = rnd
                composes.append(comp)
                print(f"round {rnd} compose: {comp}", file=sys.stderr)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    write_report(args, rows, composes, size, ref)


def write_report(args, rows, composes, size, ref):
    cmd = (f"bench/big_objects.py --binary {args.binary} --size-gib {args.size_gib:g} --reference-mib "
           f"{args.reference_mib} --chunk-mib {args.chunk_mib} --ranges {args.ranges} --parts {args.parts} "
           f"--part-mib {args.part_mib} --rounds {args.rounds}" + (" --md5" if args.md5 else "")
           + (f" --metadata {args.metadata} --blobs {args.blobs}" if args.metadata else ""))
    mib = lambda kib: f"{kib / 1024:.1f}"  # noqa: E731
    lines = [
        f"# Big objects: {size >> 30} GiB against {ref >> 20} MiB, and compose "
        f"({time.strftime('%Y-%m-%dT%H:%MZ', time.gmtime())}, {os.cpu_count()} cores, "
        f"{'SQLite + disk' if not args.metadata else 'metadata ' + args.metadata.split(':')[0]})",
        "", "Reproduce:", "", "```", "swift build -c release --product silo", cmd, "```", "",
        f"Upload: GCS JSON API resumable session, {args.chunk_mib} MiB `PUT` chunks with `Content-Range` (the last "
        f"names the total), as google-cloud-storage sends them. Download: {args.ranges} parallel `Range` GETs "
        f"(`alt=media`), one connection each, every 8 MiB block compared with the generated data. Server on CPU "
        f"{args.server_cpu}, client on CPU {args.load_cpu}; each object in a fresh server and data directory. RSS: "
        f"the server's VmRSS sampled every 0.2 s; min / max over each phase.",
        "",
        "| round | object | upload MiB/s | download MiB/s | upload ratio to the small object (goal ≥ 0.9) | "
        "download ratio | RSS idle (MiB) | RSS upload min / max (MiB) | RSS download min / max (MiB) | "
        "RSS upload max, first / last quarter (MiB) | bytes on disk / size | blocks differing |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        small = next(x for x in rows if x["round"] == r["round"] and x["label"] == "ref")
        up, down = mibs(r["size"], r["up_s"]), mibs(r["size"], r["down_s"])
        up_ratio = up / mibs(small["size"], small["up_s"])
        down_ratio = down / mibs(small["size"], small["down_s"])
        rss = r["rss"]
        lines.append(
            f"| {r['round']} | {r['size'] / MIB:,.0f} MiB | {up:.0f} | {down:.0f} | {up_ratio:.2f} | "
            f"{down_ratio:.2f} | {mib(rss['warm'][1])} | {mib(rss['upload'][0])} / {mib(rss['upload'][1])} | "
            f"{mib(rss['download'][0])} / {mib(rss['download'][1])} | {mib(rss['upload'][4])} / "
            f"{mib(rss['upload'][5])} | {r['disk'] / r['size']:.3f} | {r['bad']} |")
    if composes:
        lines += ["", f"Compose: {args.parts} parts of {args.part_mib} MiB (GCS's limit is 32 sources per call) "
                  "uploaded with `uploadType=media`, composed with one `POST …/compose`, the result downloaded as "
                  "above and checked block by block.", "",
                  "| round | parts upload MiB/s | compose s (MiB/s) | `dd conv=fsync` 1 GiB, same disk (MiB/s) | "
                  "composite download MiB/s | RSS parts max (MiB) | RSS compose min / max (MiB) | RSS download max "
                  "(MiB) | componentCount | blocks differing |",
                  "|---|---|---|---|---|---|---|---|---|---|"]
        for c in composes:
            rss = c["rss"]
            lines.append(
                f"| {c['round']} | {mibs(c['total'], c['parts_s']):.0f} | {c['compose_s']:.1f} "
                f"({mibs(c['total'], c['compose_s']):.0f}) | {c['dd_mibs']:.0f} | {mibs(c['total'], c['down_s']):.0f} | "
                f"{mib(rss['parts'][1])} | {mib(rss['compose'][0])} / {mib(rss['compose'][1])} | "
                f"{mib(rss['download'][1])} | {c['components']} | {c['bad']} |")
    lines.append("")
    with open(args.out, "w") as f:
        f.write("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
