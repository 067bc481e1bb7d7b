#!/usr/bin/env python3
"""How Silo's costs grow with the number of objects in a bucket (run through bench/scale.sh).

For each size it seeds one bucket with app-shaped names through the v0 upload API (the product's own write path:
real uploads, each a blob, a hash and a committed row), restarts the server on that data, and measures:
  - time from `silo serve` to a 200 from /healthz, and RSS when idle;
  - p50/p99 of a 1 KiB GET (`alt=media`) and of getMetadata on random names: "cold" is the first run after the
    restart over every name (Silo's caches hold none of them; the kernel's page cache is not dropped, which needs
    root), "warm" a run over 1,000 names that an earlier run has read;
  - p99 of a GCS JSON list of 1,000 results with a prefix and a delimiter, at the start, in the middle and on the
    last page (`startOffset`);
  - p99 of a 1 KiB upload to a new name and of a delete;
  - RSS under load (the highest sample during the reads);
  - bytes on disk per object: blobs, and metadata (SQLite file and WAL, or PostgreSQL's relations);
  - for each latency figure, what the server read from and wrote to the block device per request
    (`/proc/PID/io` read_bytes and write_bytes, which count only what reached the device, not page-cache hits):
    the cause of a figure that grows with the count when the store outgrows the memory that caches it.

`--data DIR` keeps the seeded store in DIR across runs (it records how many objects it holds), and `--seed-only`
stops after seeding: so a large store can be seeded while the machine does other work, and measured later on a
quiet one. The seeding is the same real uploads either way.

Names: one in ten is `avatars/aNNNNNNNN.jpg`; the rest are `users/uNNNNNNN/photos/NNNNNNNN.jpg`, about five per
user, so a delimited list of `users/` has a prefix per user and pages through all of them.

Load comes from wrk (one thread, on its own CPU when there are two). Prints a Markdown table per store and writes
the results as JSON (--json) for bench/scale_plot.py. Loopback only; every server started is stopped.
"""

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

BUCKET = "scale.appspot.com"
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def name_lua() -> str:
    """The name of object i, in Lua (wrk's scripts) and below in Python: the same function."""
    return """
local function name_of(i)
  if i % 10 == 0 then return string.format("avatars%%2Fa%08d.jpg", i) end
  return string.format("users%%2Fu%07d%%2Fphotos%%2F%08d.jpg", math.floor(i / 5), i)
end
"""


def name_of(i: int) -> str:
    if i % 10 == 0:
        return f"avatars/a{i:08d}.jpg"
    return f"users/u{i // 5:07d}/photos/{i:08d}.jpg"


REPORT_LUA = """
done = function(summary, latency, requests)
  io.write(string.format("RESULT %d %d %.0f %.0f %d\\n", summary.requests, summary.duration,
    latency:percentile(50), latency:percentile(99), summary.errors.status + summary.errors.connect +
    summary.errors.read + summary.errors.write + summary.errors.timeout))
end
"""


class MemoryBound:
    """`--memory-mib`: the measured server's memory, page cache included, bounded by a cgroup (v1 memory
    controller; needs root), with the page cache dropped before each start. So a store that fits this machine's
    memory is read as one that does not: 10⁶ objects (1.9 GB) in 256 MiB behave as 10⁷ in 24 GB did, in minutes of
    seeding instead of hours. Only the measured starts are bounded, not seeding."""

    ROOT = "/sys/fs/cgroup/memory"

    def __init__(self, mib: int):
        self.path = os.path.join(self.ROOT, f"silo-scale-{os.getpid()}")
        os.makedirs(self.path, exist_ok=True)
        self.write("memory.limit_in_bytes", str(mib << 20))

    def write(self, name: str, value: str):
        with open(os.path.join(self.path, name), "w") as f:
            f.write(value)

    def enter(self):
        """In the child between fork and exec: the server starts inside the group."""
        self.write("cgroup.procs", str(os.getpid()))

    @staticmethod
    def drop_page_cache():
        os.sync()
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3")

    def close(self):
        try:
            os.rmdir(self.path)
        except OSError:
            pass


class Server:
    def __init__(self, binary, data, extra, env, memory=None):
        self.binary, self.data, self.extra, self.env = binary, data, extra, env
        self.memory = memory
        self.process = None
        self.port = None

    def start(self, pinned: bool = True) -> float:
        """Starts `silo serve`; returns the seconds until /healthz answered 200. `pinned`: on CPU 0 only, apart from
        the load generator, for measurements; seeding runs unpinned, on every core, to go faster."""
        self.port = free_port()
        log = open(os.path.join(self.data, "..", f"silo-{self.port}.log"), "w")
        bound = self.memory if pinned else None
        if bound:
            bound.drop_page_cache()
        started = time.monotonic()
        self.process = subprocess.Popen(
            (taskset("server") if pinned else []) + [self.binary, "serve", "--port", str(self.port), "--data", self.data,
                                 "--create-buckets-on-upload", "true", "--max-connections-per-client", "1000"]
            + self.extra, stdout=log, stderr=subprocess.STDOUT, env=self.env,
            preexec_fn=bound.enter if bound else None)
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/healthz", timeout=1) as answer:
                    if answer.status == 200:
                        return time.monotonic() - started
            except OSError:
                pass
            if self.process.poll() is not None:
                sys.exit(f"silo serve exited ({self.process.returncode}); see {log.name}")
            if time.monotonic() - started > 120:
                sys.exit("silo serve not ready in 120 s")
            time.sleep(0.01)

    def settle(self, started: float) -> float:
        """Waits for the first maintenance pass after the start (`silo_maintenance_passes_total`: it collects the
        previous phase's garbage in the background once the server serves), so that reads are measured on the
        server at rest rather than beside that pass. Returns the seconds from `started` until it ended."""
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/metrics", timeout=10) as answer:
                found = re.search(rb"^silo_maintenance_passes_total (\d+)", answer.read(), re.M)
            if found and int(found.group(1)) >= 1:
                return time.monotonic() - started
            time.sleep(0.05)
        sys.exit("no maintenance pass ended within 600 s of the start")

    def metadata_lookups(self) -> tuple:
        """(hits, misses) of the metadata record cache so far (`silo_cache_lookups_total{cache="metadata"}`)."""
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/metrics", timeout=10) as answer:
            text = answer.read()
        counts = {result: int(value) for result, value in re.findall(
            rb'^silo_cache_lookups_total\{cache="metadata",result="(hit|miss)"\} (\d+)', text, re.M)}
        return counts.get(b"hit", 0), counts.get(b"miss", 0)

    def io_bytes(self) -> tuple:
        """(read_bytes, write_bytes) the server caused at the block device so far (/proc/PID/io)."""
        with open(f"/proc/{self.process.pid}/io") as io:
            fields = dict(line.split(": ") for line in io.read().splitlines())
        return int(fields["read_bytes"]), int(fields["write_bytes"])

    def rss_kib(self) -> int:
        with open(f"/proc/{self.process.pid}/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        return 0

    def stop(self):
        if self.process and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process = None

    @property
    def base(self):
        return f"http://127.0.0.1:{self.port}"


def cpu_times():
    """(steal, total) jiffies of all CPUs from /proc/stat: on a virtual machine, time the host gave to others."""
    with open("/proc/stat") as stat:
        fields = [int(x) for x in stat.readline().split()[1:]]
    return fields[7] if len(fields) > 7 else 0, sum(fields[:8])


def free_port() -> int:
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def taskset(role: str) -> list:
    if (os.cpu_count() or 1) < 2 or not shutil.which("taskset"):
        return []
    return ["taskset", "-c", "0" if role == "server" else "1"]


def wrk(work, script: str, url: str, seconds: float, connections: int, server=None, timeout="10s"):
    """Runs wrk with `script` (plus the reporter); returns (requests, p50 µs, p99 µs, errors, peak RSS KiB)."""
    path = os.path.join(work, "load.lua")
    with open(path, "w") as f:
        f.write(name_lua() + script + REPORT_LUA)
    process = subprocess.Popen(
        taskset("load") + ["wrk", "-t1", f"-c{connections}", f"-d{max(1, round(seconds))}s", f"--timeout={timeout}", "-s", path,
                           url], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    peak = 0
    while process.poll() is None:
        if server:
            peak = max(peak, server.rss_kib())
        time.sleep(0.2)
    out = process.stdout.read()
    match = re.search(r"^RESULT (\d+) (\d+) (\d+) (\d+) (\d+)$", out, re.M)
    if not match:
        sys.exit(f"wrk printed no result:\n{out}")
    requests, _, p50, p99, errors = map(int, match.groups())
    if errors:
        print(f"wrk: {errors} of {requests} requests failed ({url})", file=sys.stderr)
    # A few failures in a run are reported, not fatal (a name a cut-off delete removed); more mean a broken run.
    if not requests or errors > requests // 1000:
        sys.exit(f"wrk: {requests} requests, {errors} errors for {url} with\n{script}\n{out}")
    return requests, p50, p99, errors, peak


def each_name(server, method: str, start: int, count: int, connections: int, body=None, ok=(200,)):
    """Sends `method` for objects start..<start+count through v0 on `connections` keep-alive connections, each
    taking the next index (wrk cannot stop after a count: Debian's wrk ignores thread:stop). Returns (seconds,
    sorted per-request seconds); exits if any answer is not in `ok`."""
    import http.client
    import threading
    from urllib.parse import quote

    lock = threading.Lock()
    state = {"next": start, "times": [], "failed": []}

    def sender():
        connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=120)
        while True:
            with lock:
                i = state["next"]
                state["next"] += 1
            if i >= start + count:
                break
            name = quote(name_of(i), safe="")
            path = f"/v0/b/{BUCKET}/o?name={name}" if method == "POST" else f"/v0/b/{BUCKET}/o/{name}"
            begun = time.monotonic()
            connection.request(method, path, body, {"Content-Type": "image/jpeg"} if body else {})
            answer = connection.getresponse()
            answer.read()
            with lock:
                state["times"].append(time.monotonic() - begun)
                if answer.status not in ok:
                    state["failed"].append((i, answer.status))
        connection.close()

    started = time.monotonic()
    threads = [threading.Thread(target=sender) for _ in range(min(connections, max(count, 1)))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if state["failed"]:
        sys.exit(f"{method}: {len(state['failed'])} of {count} failed, first {state['failed'][0]}")
    return time.monotonic() - started, sorted(state["times"])


def seed(work, server, start: int, count: int, connections: int):
    """Uploads objects start..<start+count through v0 (1 KiB each). Returns objects/s."""
    seconds, _ = each_name(server, "POST", start, count, connections, body=b"x" * 1024)
    return count / max(seconds, 1e-9)


def random_reads(count: int, query: str, hot: int = 0) -> str:
    hot = min(hot, count)
    pick = f"math.random(0, {hot - 1}) * {count // hot}" if hot else f"math.random(0, {count - 1})"
    return f"""
math.randomseed(os.time())
request = function()
  return wrk.format("GET", "/v0/b/{BUCKET}/o/" .. name_of({pick}) .. "{query}")
end
"""


def delete_p99(server, start: int, count: int, connections: int) -> int:
    """p99 (µs) of v0 deletes of objects start..<start+count, `connections` at a time."""
    _, times = each_name(server, "DELETE", start, count, connections, ok=(200, 204))
    return round(times[min(len(times) - 1, int(len(times) * 0.99))] * 1e6)


def list_p99(server, start_offset: str, seconds: float) -> tuple:
    """(p99 µs, pages) of sequential GCS JSON list pages: up to 200 requests or `seconds`, at least 5. Sequential,
    not wrk: a page that takes seconds must still be timed, not dropped for not finishing inside the run."""
    import http.client
    url = (f"/storage/v1/b/{BUCKET}/o?prefix=users%2F&delimiter=%2F&maxResults=1000&startOffset={start_offset}")
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=600)
    times = []
    started = time.monotonic()
    while len(times) < 5 or (len(times) < 200 and time.monotonic() - started < seconds):
        begun = time.monotonic()
        connection.request("GET", url)
        answer = connection.getresponse()
        page = json.loads(answer.read())
        if answer.status != 200 or len(page.get("prefixes", [])) + len(page.get("items", [])) == 0:
            sys.exit(f"list {url}: {answer.status} {str(page)[:200]}")
        times.append(time.monotonic() - begun)
    connection.close()
    times.sort()
    return round(times[min(len(times) - 1, int(len(times) * 0.99))] * 1e6), len(times)


def disk_bytes(path: str) -> int:
    total = 0
    for directory, _, files in os.walk(path):
        for file in files:
            try:
                total += os.lstat(os.path.join(directory, file)).st_blocks * 512
            except FileNotFoundError:
                pass
    return total


def measure(args, work, store, size, server, seconds):
    row = {"store": store, "objects": size}
    steal_before, total_before = cpu_times()
    started = time.monotonic()
    row["startup_s"] = server.start()
    if args.settle:
        row["settle_s"] = server.settle(started)
    time.sleep(1)
    row["rss_idle_kib"] = server.rss_kib()
    # A tail over a few seconds moves with one stall of the machine, so the reads run `--repeat` times, each after
    # a restart (cold must mean cold), and the row keeps the median of each figure; "runs" keeps them all.
    runs = {}
    for repeat in range(args.repeat):
        if repeat:
            server.stop()
            started = time.monotonic()
            server.start()
            if args.settle:
                server.settle(started)
            time.sleep(1)
        for label, query in (("get", "?alt=media"), ("meta", "")):
            for temperature, hot in (("cold", 0), ("warm", 1000)):
                if hot:  # read the hot set once so it is cached
                    wrk(work, random_reads(size, query, hot), server.base, 2, 8)
                hits_before, misses_before = server.metadata_lookups()
                io_before = server.io_bytes()
                requests, p50, p99, errors, peak = wrk(work, random_reads(size, query, hot), server.base, seconds,
                                                       args.connections, server)
                record_io(runs, f"{label}_{temperature}", server, io_before, requests, repeated=True)
                hits, misses = server.metadata_lookups()
                hits, misses = hits - hits_before, misses - misses_before
                # Which share of the reads reached the store: a store the record cache holds whole (10,000
                # records) is read cold only until each name was asked once, so "cold" there is mostly hits.
                runs.setdefault(f"{label}_{temperature}_miss_pct", []).append(
                    round(100 * misses / max(hits + misses, 1), 1))
                runs.setdefault(f"{label}_{temperature}_p50_us", []).append(p50)
                runs.setdefault(f"{label}_{temperature}_p99_us", []).append(p99)
                row["rss_load_kib"] = max(row.get("rss_load_kib", 0), peak)
                if errors:
                    sys.exit(f"{label} {temperature}: {errors} errors")
    for key, values in runs.items():
        row[key] = sorted(values)[len(values) // 2]
    row["runs"] = runs
    users = size // 5
    for label, offset in (("start", ""), ("middle", f"users%2Fu{users // 2:07d}"),
                          ("last", f"users%2Fu{max(0, users - 1000):07d}")):
        io_before = server.io_bytes()
        row[f"list_{label}_p99_us"], pages = list_p99(server, offset, seconds)
        record_io(row, f"list_{label}", server, io_before, pages)
    upload = f"""
math.randomseed(os.time())
local body = string.rep("y", 1024)
request = function()
  return wrk.format("POST", "/v0/b/{BUCKET}/o?name=new%2F" .. math.random(1, 1000000000) .. "-" .. os.clock(),
    {{["Content-Type"] = "image/jpeg"}}, body)
end
"""
    io_before = server.io_bytes()
    requests, _, row["upload_p99_us"], _, _ = wrk(work, upload, server.base, seconds, 16)
    record_io(row, "upload", server, io_before, requests)
    # Deletes of seeded names from the end, each exactly once and a bounded count (wrk cannot stop after a count,
    # and a fast machine ran out of names within its run), on 16 keep-alive connections.
    deleted = min(2000, size // 5)
    io_before = server.io_bytes()
    row["delete_p99_us"] = delete_p99(server, size - deleted, deleted, 16)
    record_io(row, "delete", server, io_before, deleted)
    # Upload the deleted names again, so the next size starts complete: wrk counts the answers it read, and up to a
    # connection's worth of deletes more may have been sent when it stopped.
    seed(work, server, size - deleted, deleted, 16)
    server.stop()
    steal_after, total_after = cpu_times()
    # A tail measured while the host took a third of the CPU time away is the host's figure as much as Silo's.
    row["steal_pct"] = 100 * (steal_after - steal_before) / max(total_after - total_before, 1)
    return row


def record_io(into, label, server, before, requests, repeated=False):
    """Device KiB read and written per request since `before`, into `into`: a row, or (`repeated`) the lists of
    the repeated runs, whose medians the row gets."""
    read, written = server.io_bytes()
    figures = {f"{label}_read_kib_per_req": round((read - before[0]) / 1024 / max(requests, 1), 2),
               f"{label}_write_kib_per_req": round((written - before[1]) / 1024 / max(requests, 1), 2)}
    for key, value in figures.items():
        if repeated:
            into.setdefault(key, []).append(value)
        else:
            into[key] = value


def metadata_bytes(store, data, env):
    if store == "sqlite":
        return sum(os.path.getsize(os.path.join(data, f)) for f in os.listdir(data) if f.startswith("metadata.sqlite"))
    query = "select sum(pg_total_relation_size(oid)) from pg_class where relkind = 'r' and relnamespace = 'public'::regnamespace"
    out = subprocess.run(["psql", env["SILO_TEST_POSTGRES_URL"], "-tAc", query], capture_output=True, text=True,
                         check=True)
    return int(out.stdout.strip() or 0)


def run_store(args, store):
    env = dict(os.environ)
    results = []
    work = args.data or tempfile.mkdtemp(prefix="silo-scale-")
    marker = os.path.join(work, "seeded")
    memory = None
    try:
        data = os.path.join(work, "data")
        os.makedirs(data, exist_ok=True)
        extra = []
        if store == "postgres":
            extra = ["--metadata", env["SILO_TEST_POSTGRES_URL"], "--blobs", env["SILO_TEST_S3_URL"]]
        memory = MemoryBound(args.memory_mib) if args.memory_mib else None
        server = Server(args.binary, data, extra + args.serve_args.split(), env, memory)
        seeded = int(open(marker).read()) if args.data and os.path.exists(marker) else 0
        for size in sorted(args.sizes):
            if size < seeded:
                sys.exit(f"{work} holds {seeded} objects, more than {size}: use another --data directory")
            rate = None
            if size > seeded:
                server.start(pinned=False)
                # In steps, each recorded, so an interrupted seeding resumes where it stopped.
                started, first = time.monotonic(), seeded
                while seeded < size:
                    step = min(size - seeded, 100_000)
                    seed(work, server, seeded, step, args.seed_connections)
                    seeded += step
                    with open(marker, "w") as f:
                        f.write(str(seeded))
                rate = (size - first) / max(time.monotonic() - started, 1e-9)
                server.stop()
                print(f"{store}: seeded up to {size} objects", file=sys.stderr)
            if args.seed_only:
                continue
            # On disk, measured before any delete (whose garbage waits for a later collection).
            if store == "sqlite":
                blob_bytes = disk_bytes(os.path.join(data, "blobs")) / size
            else:
                blob_bytes = disk_bytes(env["SEAWEEDFS_DIR"]) / size if "SEAWEEDFS_DIR" in env else None
            metadata = metadata_bytes(store, data, env) / size
            row = measure(args, work, store, size, server, args.seconds)
            row.update(seed_rate=round(rate) if rate else None, blob_bytes_per_object=blob_bytes,
                       metadata_bytes_per_object=metadata)
            results.append(row)
            print(json.dumps(row), file=sys.stderr)
    finally:
        # Also when a figure fails (sys.exit): no server outlives the run.
        if "server" in locals():
            server.stop()
        if memory:
            memory.close()
        if not args.data:
            shutil.rmtree(work, ignore_errors=True)
    return results


COLUMNS = [
    ("objects", "objects", "{:,}"), ("startup_s", "ready (s)", "{:.2f}"), ("settle_s", "first pass done (s)", "{:.2f}"),
    ("rss_idle_kib", "RSS idle (MiB)", "mib"), ("rss_load_kib", "RSS load (MiB)", "mib"),
    ("get_cold_p50_us", "GET cold p50", "ms"), ("get_cold_p99_us", "GET cold p99", "ms"),
    ("get_warm_p50_us", "GET warm p50", "ms"), ("get_warm_p99_us", "GET warm p99", "ms"),
    ("meta_cold_p50_us", "meta cold p50", "ms"), ("meta_cold_p99_us", "meta cold p99", "ms"),
    ("meta_warm_p50_us", "meta warm p50", "ms"), ("meta_warm_p99_us", "meta warm p99", "ms"),
    ("meta_cold_miss_pct", "meta cold: store reads %", "{:.0f}"),
    ("list_start_p99_us", "list start p99", "ms"), ("list_middle_p99_us", "list middle p99", "ms"),
    ("list_last_p99_us", "list last p99", "ms"), ("upload_p99_us", "upload p99", "ms"),
    ("delete_p99_us", "delete p99", "ms"),
    ("get_cold_read_kib_per_req", "GET cold: device KiB read/req", "{:.2f}"),
    ("meta_cold_read_kib_per_req", "meta cold: device KiB read/req", "{:.2f}"),
    ("upload_read_kib_per_req", "upload: device KiB read/req", "{:.2f}"),
    ("upload_write_kib_per_req", "upload: device KiB written/req", "{:.2f}"),
    ("delete_read_kib_per_req", "delete: device KiB read/req", "{:.2f}"),
    ("list_middle_read_kib_per_req", "list middle: device KiB read/page", "{:.2f}"),
    ("blob_bytes_per_object", "blob B/obj", "{:,.0f}"),
    ("metadata_bytes_per_object", "metadata B/obj", "{:,.0f}"), ("steal_pct", "CPU steal %", "{:.0f}"),
]


def cell(value, style):
    if value is None:
        return "–"
    if style == "ms":
        return f"{value / 1000:.2f}"
    if style == "mib":
        return f"{value / 1024:.0f}"
    return style.format(value)


def table(rows):
    lines = ["| " + " | ".join(title for _, title, _ in COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    for row in rows:
        lines.append("| " + " | ".join(cell(row.get(key), style) for key, _, style in COLUMNS) + " |")
    smallest = rows[0]
    ratios = ["| ratio largest/smallest |"]
    largest = rows[-1]
    for key, _, style in COLUMNS[1:]:
        a, b = largest.get(key), smallest.get(key)
        ratios.append(f" {a / b:.2f} |" if a is not None and b else " – |")
    lines.append("".join(ratios))
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--binary", default=os.path.join(ROOT, ".build/release/silo"))
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--store", choices=["sqlite", "postgres"], default="sqlite")
    parser.add_argument("--seconds", type=float, default=5)
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--seed-connections", type=int, default=32)
    parser.add_argument("--repeat", type=int, default=3,
                        help="runs of the read figures, each after a restart; the table has their medians")
    parser.add_argument("--serve-args", default="", help="more `silo serve` flags, e.g. \"--inline-limit 0\"")
    parser.add_argument("--no-settle", dest="settle", action="store_false",
                        help="measure right after /healthz answers, beside the first maintenance pass")
    parser.add_argument("--json", help="append the rows to this JSON file (a list)")
    parser.add_argument("--data", help="keep the seeded store in this directory, and reuse what it holds")
    parser.add_argument("--seed-only", action="store_true", help="seed up to the largest size, measure nothing")
    parser.add_argument("--memory-mib", type=int,
                        help="bound the measured server's memory, page cache included (a cgroup; root), and drop "
                             "the page cache before each start: a store larger than memory, at a size that seeds "
                             "in minutes")
    args = parser.parse_args()
    rows = run_store(args, args.store)
    if args.seed_only:
        return
    print(f"\n### {args.store}, {args.connections} connections, {args.seconds:g} s per figure (times in ms)\n")
    print(table(rows))
    if args.json:
        existing = json.load(open(args.json)) if os.path.exists(args.json) else []
        json.dump(existing + rows, open(args.json, "w"), indent=1)


if __name__ == "__main__":
    main()
