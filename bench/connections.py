#!/usr/bin/env python3
"""10,000 concurrent connections: an idle and slow crowd beside 64 active clients, against `silo serve` and nginx in
the same run.

For each server (Silo on SQLite + disk, then nginx serving the same files), each round:
  1. 64 active clients (wrk, one thread) GET a 1 KiB object for --seconds: p50 and p99 with no crowd;
  2. a crowd opens from 127.0.0.2 and up (--per-address connections per source address, so Silo's per-client limit,
     256 by default, holds): first --idle keep-alive connections that each made one 1 KiB GET and then wait, then
     --slow-downloads that each read a large object at --rate bytes/s (receive buffer 8 KiB, like a phone on a slow
     link), then --slow-uploads that each trickle a 64 MiB PUT/POST body at --rate bytes/s;
  3. the server's RSS (VmRSS of the process and its children) is read before the crowd and after each part of it,
     which gives KiB per idle, per slow-download and per slow-upload connection;
  4. the same 64 active clients again, with the crowd in place: p50 and p99;
  5. the crowd closes; the number of its connections the server had closed meanwhile is reported (should be 0).

Silo runs with --max-connections raised above the crowd and --idle-timeout 600 (nginx: keepalive_timeout 600s),
so that the idle crowd stays for the whole run on both. Servers run on CPU 0, wrk and the crowd on CPU 1 (taskset),
as in bench/lib.sh. Loopback only, bounded in time and count; stops what it starts.

  bench/connections.py --binary .build/release/silo [--rounds 2] [--seconds 10] [--idle 9000]
                       [--slow-downloads 500] [--slow-uploads 500] [--out bench/results/connections.md]

Needs `ulimit -n` above the crowd (the script raises its soft limit to the hard one) and nginx and wrk on PATH.
Standard library only.
"""
import argparse
import os
import re
import resource
import selectors
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
from silo_process import request  # noqa: E402

BUCKET = "conn.appspot.com"
SMALL = 1024
SLOW_OBJECT = 64 << 20
UPLOAD_BODY = 64 << 20


def raise_fd_limit():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return hard


def rss_kib(pid):
    """VmRSS of a process and its direct children (nginx's workers)."""
    total = 0
    pids = [pid]
    try:
        out = subprocess.run(["ps", "-o", "pid=", "--ppid", str(pid)], capture_output=True, text=True).stdout
        pids += [int(p) for p in out.split()]
    except OSError:
        pass
    for p in pids:
        try:
            with open(f"/proc/{p}/status") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1])
        except OSError:
            pass
    return total


def settle_rss(pid, seconds=1.5):
    """RSS once it has stopped moving (the last of a few samples)."""
    time.sleep(seconds)
    return rss_kib(pid)


# ---- the crowd (a child process, pinned to the load CPU, with its own descriptors) -----------------------------------

def crowd_main(args):
    """Runs as `connections.py --crowd-worker`: opens the crowd in parts on command from stdin and keeps the slow
    clients going. Each line it prints is `ready PART OPEN CLOSED`; `stop` (or end of input) ends it."""
    raise_fd_limit()
    sel = selectors.DefaultSelector()
    port, host_header = args.port, f"127.0.0.1:{args.port}"
    conns = {}  # fd -> dict(kind, sock, need, got, closed)
    closed_by_server = {"idle": 0, "download": 0, "upload": 0}
    address_index = [0, 0]  # which source address, how many on it

    def source():
        if address_index[1] >= args.per_address:
            address_index[0] += 1
            address_index[1] = 0
        address_index[1] += 1
        n = address_index[0] + 2
        return f"127.0.{n // 256}.{n % 256}" if n >= 256 else f"127.0.0.{n}"

    def connect(kind, small_rcvbuf=False):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        if small_rcvbuf:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8192)
        s.bind((source(), 0))
        s.connect(("127.0.0.1", port))
        s.setblocking(False)
        c = {"kind": kind, "sock": s, "head": b"", "need": None, "got": 0, "closed": False}
        conns[s.fileno()] = c
        if kind != "download":  # slow readers are read on their tick only (they are always readable)
            sel.register(s, selectors.EVENT_READ, c)
        return c

    def on_readable(c, budget=65536):
        try:
            data = c["sock"].recv(budget)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:
            if not c["closed"]:
                c["closed"] = True
                closed_by_server[c["kind"]] += 1
                if c["kind"] != "download":
                    sel.unregister(c["sock"])
            return
        if c["need"] is None:
            c["head"] += data
            end = c["head"].find(b"\r\n\r\n")
            if end < 0:
                return
            m = re.search(rb"(?i)content-length:\s*(\d+)", c["head"][:end])
            c["need"] = int(m.group(1)) if m else 0
            c["got"] = len(c["head"]) - end - 4
            c["status"] = c["head"][9:12]
            c["head"] = b""
        else:
            c["got"] += len(data)

    def pump(seconds):
        deadline = time.monotonic() + seconds
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return
            for key, _ in sel.select(timeout=min(left, 0.05)):
                on_readable(key.data)

    downloads, uploads = [], []
    tick = 0.25
    per_tick = max(1, int(args.rate * tick))
    filler = b"x" * per_tick

    def slow_tick():
        for c in downloads:
            if not c["closed"]:
                on_readable(c, per_tick)
        for c in uploads:
            if c["closed"]:
                continue
            try:
                c["sock"].send(filler)
            except (BlockingIOError, InterruptedError):
                pass
            except OSError:
                c["closed"] = True
                closed_by_server["upload"] += 1

    def report(part):
        open_count = sum(1 for c in conns.values() if not c["closed"])
        print(f"ready {part} {open_count} {sum(closed_by_server.values())}", flush=True)

    import threading
    commands = []
    threading.Thread(target=lambda: [commands.append(line.strip()) for line in sys.stdin] or commands.append("stop"),
                     daemon=True).start()
    next_tick = time.monotonic()
    while True:
        if commands:
            cmd = commands.pop(0)
            if cmd == "stop":
                break
            part, count = cmd.split()
            count = int(count)
            if part == "idle":
                batch = []
                for i in range(count):
                    c = connect("idle")
                    c["sock"].send(f"GET {args.small_path} HTTP/1.1\r\nHost: {host_header}\r\n\r\n".encode())
                    batch.append(c)
                    if i % 200 == 199:
                        pump(0.01)
                deadline = time.monotonic() + 60
                while time.monotonic() < deadline and any(
                        not c["closed"] and (c["need"] is None or c["got"] < c["need"]) for c in batch):
                    pump(0.1)
                bad = sum(1 for c in batch if c.get("status") != b"200")
                if bad:
                    print(f"warning {bad} idle connections got no 200", flush=True)
            elif part == "download":
                for i in range(count):
                    c = connect("download", small_rcvbuf=True)
                    c["sock"].send(f"GET {args.slow_path} HTTP/1.1\r\nHost: {host_header}\r\n\r\n".encode())
                    downloads.append(c)
                pump(1)
            elif part == "upload":
                for i in range(count):
                    c = connect("upload")
                    c["sock"].send(
                        f"{args.upload_method} {args.upload_path.format(i=i)} HTTP/1.1\r\nHost: {host_header}\r\n"
                        f"Content-Type: application/octet-stream\r\nContent-Length: {UPLOAD_BODY}\r\n\r\n".encode())
                    uploads.append(c)
                pump(1)
            report(part)
        now = time.monotonic()
        if now >= next_tick:
            slow_tick()
            next_tick = now + tick
        pump(min(tick, max(0.0, next_tick - time.monotonic())))
    report("stop")
    for c in conns.values():
        try:
            c["sock"].close()
        except OSError:
            pass


class Crowd:
    def __init__(self, script, port, small_path, slow_path, upload_method, upload_path, per_address, rate, cpu):
        cmd = ["taskset", "-c", cpu, sys.executable, script, "--crowd-worker", "--port", str(port),
               "--small-path", small_path, "--slow-path", slow_path, "--upload-method", upload_method,
               "--upload-path", upload_path, "--per-address", str(per_address), "--rate", str(rate)]
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def open(self, part, count, timeout=180):
        self.proc.stdin.write(f"{part} {count}\n")
        self.proc.stdin.flush()
        deadline = time.time() + timeout
        while time.time() < deadline:
            line = self.proc.stdout.readline()
            if not line:
                raise RuntimeError("the crowd process exited")
            if line.startswith("warning"):
                print("  crowd:", line.strip(), file=sys.stderr)
            if line.startswith("ready"):
                _, _, open_count, closed = line.split()
                return int(open_count), int(closed)
        raise RuntimeError(f"the crowd did not open {part} in time")

    def stop(self):
        try:
            self.proc.stdin.write("stop\n")
            self.proc.stdin.flush()
            line = self.proc.stdout.readline()
            self.proc.wait(timeout=60)
            if line.startswith("ready"):
                _, _, open_count, closed = line.split()
                return int(open_count), int(closed)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.kill()
        return None, None


# ---- servers ------------------------------------------------------------------------------------------------------

def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def wait_port(port, timeout=30):
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"nothing listens on {port}")


def start_silo(binary, work, cpu, crowd_size):
    data = os.path.join(work, "silo-data")
    rules = os.path.join(work, "public.rules")
    with open(rules, "w") as f:
        f.write("rules_version = '2';\nservice firebase.storage {\n  match /b/{bucket}/o {\n"
                "    match /{allPaths=**} { allow read, write: if true; }\n  }\n}\n")
    port = free_port()
    log = open(os.path.join(work, "silo.log"), "w")
    proc = subprocess.Popen(
        ["taskset", "-c", cpu, binary, "serve", "--port", str(port), "--data", data, "--rules", rules,
         "--create-buckets-on-upload", "true", "--max-connections", str(crowd_size + 1000),
         "--idle-timeout", "600"], stdout=log, stderr=subprocess.STDOUT)
    wait_port(port)
    return proc, port


def start_nginx(work, cpu, root, crowd_size):
    d = os.path.join(work, "nginx")
    os.makedirs(os.path.join(d, "tmp"), exist_ok=True)
    port = free_port()
    conf = os.path.join(d, "nginx.conf")
    with open(conf, "w") as f:
        f.write(f"""daemon off;
worker_processes 1;
worker_rlimit_nofile {crowd_size * 2 + 2000};
pid {d}/nginx.pid;
error_log {d}/error.log warn;
events {{ worker_connections {crowd_size + 2000}; }}
http {{
    access_log off;
    sendfile on;
    tcp_nopush on;
    tcp_nodelay on;
    keepalive_requests 1000000;
    keepalive_timeout 600s;
    client_body_timeout 600s;
    send_timeout 600s;
    open_file_cache max=1000 inactive=60s;
    client_body_temp_path {d}/tmp/body;
    proxy_temp_path {d}/tmp/proxy;
    fastcgi_temp_path {d}/tmp/fastcgi;
    uwsgi_temp_path {d}/tmp/uwsgi;
    scgi_temp_path {d}/tmp/scgi;
    default_type application/octet-stream;
    server {{
        listen 127.0.0.1:{port} backlog=4096;
        root {root};
        location /dav/ {{
            dav_methods PUT;
            create_full_put_path on;
            client_max_body_size 0;
        }}
    }}
}}
""")
    proc = subprocess.Popen(["taskset", "-c", cpu, "nginx", "-p", d, "-c", conf])
    wait_port(port)
    return proc, port


def stop(proc):
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=40)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def wrk(url, seconds, cpu, connections=64):
    out = subprocess.run(["taskset", "-c", cpu, "wrk", "-t1", f"-c{connections}", f"-d{seconds}s", "--timeout", "10s",
                          "--latency", url], capture_output=True, text=True, check=True).stdout

    def ms(v):
        m = re.match(r"([\d.]+)(us|ms|s|m)", v)
        n, unit = float(m.group(1)), m.group(2)
        return n / 1000 if unit == "us" else n if unit == "ms" else n * 1000 if unit == "s" else n * 60000

    p50 = ms(re.search(r"^\s*50%\s+(\S+)", out, re.M).group(1))
    p99 = ms(re.search(r"^\s*99%\s+(\S+)", out, re.M).group(1))
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    sock_errors = re.search(r"Socket errors: (.*)", out)
    return {"p50": p50, "p99": p99, "rps": rps, "non2xx": int(errors.group(1)) if errors else 0,
            "socket_errors": sock_errors.group(1) if sock_errors else ""}


def run_one(name, proc, port, paths, args, script):
    """One server, one round: no-crowd wrk, crowd in three parts with RSS after each, wrk with the crowd."""
    pid = proc.pid
    small_url = f"http://127.0.0.1:{port}{paths['small']}"
    wrk(small_url, 2, args.load_cpu)  # warm-up
    base = wrk(small_url, args.seconds, args.load_cpu)
    rss0 = settle_rss(pid)
    crowd = Crowd(script, port, paths["small"], paths["slow"], paths["upload_method"], paths["upload"],
                  args.per_address, args.rate, args.load_cpu)
    try:
        t0 = time.time()
        idle_open, _ = crowd.open("idle", args.idle)
        rss1 = settle_rss(pid)
        down_open, _ = crowd.open("download", args.slow_downloads)
        rss2 = settle_rss(pid)
        uploads_started = time.time()
        up_open, _ = crowd.open("upload", args.slow_uploads)
        rss3 = settle_rss(pid)
        opened = time.time() - t0
        loaded = wrk(small_url, args.seconds, args.load_cpu)
        # The uploads' buffers fill as their bytes trickle in: RSS again once each has sent --hold seconds' worth.
        time.sleep(max(0.0, args.hold - (time.time() - uploads_started)))
        rss4 = rss_kib(pid)
        held = time.time() - uploads_started
    finally:
        still_open, closed = crowd.stop()
    total = args.idle + args.slow_downloads + args.slow_uploads
    row = {
        "server": name, "base": base, "loaded": loaded, "rss0": rss0, "rss1": rss1, "rss2": rss2, "rss3": rss3,
        "rss4": rss4, "open": up_open, "total": total, "closed": closed, "still_open": still_open,
        "opened_s": opened,
        "idle_kib": (rss1 - rss0) / max(1, args.idle),
        "down_kib": (rss2 - rss1) / max(1, args.slow_downloads),
        "up_kib": (rss3 - rss2) / max(1, args.slow_uploads),
        "up_late_kib": (rss4 - rss2) / max(1, args.slow_uploads), "held_s": held,
    }
    print(f"  {name}: no crowd p50 {base['p50']:.2f} ms p99 {base['p99']:.2f} ms ({base['rps']:.0f} req/s); "
          f"with {up_open}/{total} open: p50 {loaded['p50']:.2f} ms p99 {loaded['p99']:.2f} ms "
          f"({loaded['rps']:.0f} req/s); RSS {rss0} → {rss1} → {rss2} → {rss3} KiB "
          f"→ {rss4} KiB after {held:.0f} s (idle {row['idle_kib']:.1f}, slow download {row['down_kib']:.1f}, "
          f"slow upload {row['up_kib']:.1f} then {row['up_late_kib']:.1f} KiB each); closed by the server during the run: {closed}", file=sys.stderr)
    return row


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--binary", default=".build/release/silo")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument("--idle", type=int, default=9000)
    ap.add_argument("--slow-downloads", type=int, default=500)
    ap.add_argument("--slow-uploads", type=int, default=500)
    ap.add_argument("--per-address", type=int, default=100)
    ap.add_argument("--rate", type=int, default=4096, help="bytes/s of each slow client")
    ap.add_argument("--hold", type=int, default=45,
                    help="seconds after the uploads start at which RSS is read again (their buffers fill slowly)")
    ap.add_argument("--server-cpu", default="0")
    ap.add_argument("--load-cpu", default="1" if os.cpu_count() >= 2 else "0")
    ap.add_argument("--only", choices=["silo", "nginx"])
    ap.add_argument("--out", default="bench/results/connections.md")
    # The crowd worker's own arguments.
    ap.add_argument("--crowd-worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--port", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--small-path", help=argparse.SUPPRESS)
    ap.add_argument("--slow-path", help=argparse.SUPPRESS)
    ap.add_argument("--upload-method", help=argparse.SUPPRESS)
    ap.add_argument("--upload-path", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.crowd_worker:
        crowd_main(args)
        return
    total = args.idle + args.slow_downloads + args.slow_uploads
    hard = raise_fd_limit()
    if hard < total + 1000:
        sys.exit(f"the descriptor limit ({hard}) is below the crowd ({total}) plus a margin: raise `ulimit -Hn`")
    script = os.path.abspath(__file__)
    work = tempfile.mkdtemp(prefix="silo-conns-")
    os.chmod(work, 0o755)
    root = os.path.join(work, "www")
    os.makedirs(os.path.join(root, "dav"))
    small = os.urandom(SMALL)
    with open(os.path.join(root, "small.bin"), "wb") as f:
        f.write(small)
    slow = os.urandom(1 << 20) * (SLOW_OBJECT >> 20)
    with open(os.path.join(root, "slow.bin"), "wb") as f:
        f.write(slow)
    rows = []
    procs = []
    try:
        for rnd in range(1, args.rounds + 1):
            print(f"round {rnd}", file=sys.stderr)
            if args.only != "silo":
                proc, port = start_nginx(work, args.server_cpu, root, total)
                procs.append(proc)
                paths = {"small": "/small.bin", "slow": "/slow.bin", "upload_method": "PUT",
                         "upload": "/dav/up-{i}.bin"}
                rows.append(dict(run_one("nginx", proc, port, paths, args, script), round=rnd))
                stop(proc)
                shutil.rmtree(os.path.join(root, "dav"), ignore_errors=True)
                os.makedirs(os.path.join(root, "dav"))
            if args.only != "nginx":
                shutil.rmtree(os.path.join(work, "silo-data"), ignore_errors=True)
                proc, port = start_silo(args.binary, work, args.server_cpu, total)
                procs.append(proc)
                base = f"/v0/b/{BUCKET}/o"
                for name, body in (("small.bin", small), ("slow.bin", slow)):
                    status, _, text = request(port, "POST", f"{base}?name={name}", body,
                                              {"Content-Type": "application/octet-stream"}, timeout=120)
                    assert status == 200, (status, text[:200])
                paths = {"small": f"{base}/small.bin?alt=media", "slow": f"{base}/slow.bin?alt=media",
                         "upload_method": "POST", "upload": base + "?name=up-{i}.bin"}
                rows.append(dict(run_one("silo", proc, port, paths, args, script), round=rnd))
                stop(proc)
    finally:
        for proc in procs:
            stop(proc)
        shutil.rmtree(work, ignore_errors=True)
    write_report(args, rows, total)


def write_report(args, rows, total):
    lines = [
        f"# {total:,} concurrent connections: an idle and slow crowd beside 64 active clients "
        f"({time.strftime('%Y-%m-%dT%H:%MZ', time.gmtime())}, {os.cpu_count()} cores)",
        "",
        "Reproduce:",
        "",
        "```",
        "swift build -c release --product silo",
        f"bench/connections.py --binary .build/release/silo --rounds {args.rounds} --seconds {args.seconds} "
        f"--idle {args.idle} --slow-downloads {args.slow_downloads} --slow-uploads {args.slow_uploads} "
        f"--rate {args.rate} --hold {args.hold}",
        "```",
        "",
        f"Crowd: {args.idle:,} keep-alive connections that made one 1 KiB GET and wait; {args.slow_downloads} slow "
        f"downloads of a 64 MiB object read at {args.rate // 1024} KiB/s (8 KiB receive buffer); {args.slow_uploads} "
        f"uploads trickling a 64 MiB body at {args.rate // 1024} KiB/s (Silo: v0 media upload; nginx: WebDAV PUT). "
        f"{args.per_address} connections per source address, 127.0.0.2 and up. Active: wrk, 1 thread, 64 "
        f"connections from 127.0.0.1, 1 KiB GET (Silo: v0 `alt=media` through the rules engine; nginx: static file), "
        f"{args.seconds} s per figure. Server on CPU {args.server_cpu}, wrk and crowd on CPU {args.load_cpu}; the "
        f"machine's cores are shared with other work, so compare within a row. RSS is VmRSS (the process and its "
        f"children), read 1.5 s after each part of the crowd opened, and again at the end, {args.hold} s after the "
        f"uploads began (an upload's buffers fill as its bytes trickle in).",
        "",
        "| round | server | p50 no crowd (ms) | p99 no crowd (ms) | p50 crowd (ms) | p99 crowd (ms) | p99 ratio "
        "(goal ≤ 2) | req/s no crowd / crowd | RSS before crowd (MiB) | KiB per idle conn | KiB per slow download "
        "| KiB per slow upload at 1.5 s / at the end | RSS with crowd at the end (MiB) | crowd open / closed by server |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        b, lo = r["base"], r["loaded"]
        lines.append(
            f"| {r['round']} | {r['server']} | {b['p50']:.2f} | {b['p99']:.2f} | {lo['p50']:.2f} | {lo['p99']:.2f} | "
            f"{lo['p99'] / b['p99']:.2f} | {b['rps']:.0f} / {lo['rps']:.0f} | {r['rss0'] / 1024:.1f} | "
            f"{r['idle_kib']:.1f} | {r['down_kib']:.1f} | {r['up_kib']:.1f} / {r['up_late_kib']:.1f} | "
            f"{r['rss4'] / 1024:.1f} | "
            f"{r['open']:,} of {r['total']:,} / {r['closed']} |")
    lines.append("")
    by_round = {}
    for r in rows:
        by_round.setdefault(r["round"], {})[r["server"]] = r
    if any(len(v) == 2 for v in by_round.values()):
        lines += ["Silo against nginx in the same round (ratio Silo / nginx):", "",
                  "| round | p99 crowd | KiB per idle conn | RSS with crowd |", "|---|---|---|---|"]
        for rnd, v in sorted(by_round.items()):
            if len(v) != 2:
                continue
            s, n = v["silo"], v["nginx"]
            lines.append(f"| {rnd} | {s['loaded']['p99'] / n['loaded']['p99']:.2f} | "
                         f"{s['idle_kib'] / max(0.1, n['idle_kib']):.2f} | {s['rss4'] / n['rss4']:.2f} |")
        lines.append("")
    os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
    # Sections written by hand below the tables (from the first `## ` heading on) are kept.
    existing = ""
    if os.path.exists(args.out):
        with open(args.out) as f:
            text = f.read()
        if "\n## " in text:
            existing = "\n" + text[text.index("\n## ") + 1:]
    with open(args.out, "w") as f:
        f.write("\n".join(lines) + existing)
    print("\n".join(lines))


if __name__ == "__main__":
    main()
