#!/usr/bin/env python3
"""Black-box checks of the `silo serve` binary: startup banner, refusing a non-loopback address, --bucket,
persistence across restarts, a SIGTERM that drains an upload in flight and exits 0, and no descriptor leak.
Standard library only; 127.0.0.1 only; bounded in time. Prints 'N passed, N failed'."""
import argparse
import http.client
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from silo_process import request as silo_request, start_silo  # noqa: E402


results = []


def check(name, condition, detail=""):
    results.append((name, bool(condition)))
    print(("ok   " if condition else "FAIL ") + name + ("" if condition else f": {detail}"), flush=True)


def request(port, method, path, body=b"", headers=None):
    status, _, data = silo_request(port, method, path, body, headers)
    return status, data


def fd_count(pid):
    return len(os.listdir(f"/proc/{pid}/fd"))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", default=".build/release/silo")
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="silo-serve-test-")
    data = os.path.join(work, "data")
    try:
        refused = subprocess.run([args.binary, "serve", "--host", "0.0.0.0", "--port", "0", "--data", data],
                                 capture_output=True, text=True, timeout=20)
        check("non-loopback bind without --insecure-allow-all exits 64", refused.returncode == 64, refused.stderr)
        check("the refusal says why", "rules" in refused.stderr, refused.stderr)
        usage = subprocess.run([args.binary, "serve", "--bogus"], capture_output=True, text=True, timeout=20)
        check("an unknown option exits 64 with a one-line reason", usage.returncode == 64 and "--bogus" in usage.stderr, usage.stderr)

        proc, port, banner = start_silo(args.binary, "--data", data, "--bucket", "only.appspot.com")
        check("banner gives the useEmulator call", f'useEmulator(withHost: "127.0.0.1", port: {port})' in banner, banner)
        check("banner says every request is allowed", "every request is allowed" in banner, banner)
        status, _ = request(port, "POST", "/v0/b/only.appspot.com/o?name=a.txt", b"persist me")
        check("upload to the served bucket", status == 200, status)
        status, _ = request(port, "POST", "/v0/b/other.appspot.com/o?name=a.txt", b"x")
        check("--bucket refuses other buckets with 404", status == 404, status)
        baseline = fd_count(proc.pid)
        for i in range(200):
            request(port, "GET", "/v0/b/only.appspot.com/o/a.txt?alt=media")
            request(port, "GET", "/v0/b/only.appspot.com/o/missing")
        check("descriptors do not grow over 400 requests", fd_count(proc.pid) <= baseline + 2, (baseline, fd_count(proc.pid)))

        # SIGTERM while a slow upload is in flight: the upload completes, then the process exits 0.
        outcome = {}

        def slow_upload():
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            body = b"x" * (4 << 20)
            conn.putrequest("POST", "/v0/b/only.appspot.com/o?name=slow.bin")
            conn.putheader("Content-Length", str(len(body)))
            conn.endheaders()
            for i in range(0, len(body), 1 << 20):
                conn.send(body[i:i + (1 << 20)])
                time.sleep(0.3)
            outcome["status"] = conn.getresponse().status

        t = threading.Thread(target=slow_upload)
        t.start()
        time.sleep(0.4)
        proc.send_signal(signal.SIGTERM)
        t.join(timeout=30)
        code = proc.wait(timeout=30)
        check("an upload in flight at SIGTERM completes", outcome.get("status") == 200, outcome)
        check("SIGTERM exits 0", code == 0, code)

        # Rules: a file that does not compile refuses to start, with FILE:LINE:COL diagnostics.
        bad = os.path.join(work, "bad.rules")
        with open(bad, "w") as f:
            f.write("rules_version = '2';\nservice firebase.storage {\n  match /b/{bucket}/o {\n    allow read: if ;\n  }\n}\n")
        refused = subprocess.run([args.binary, "serve", "--port", "0", "--data", data, "--rules", bad],
                                 capture_output=True, text=True, timeout=20)
        check("rules that do not compile refuse to start", refused.returncode != 0, refused.returncode)
        check("the refusal gives FILE:LINE:COL", re.search(re.escape(bad) + r":4:\d+: ", refused.stderr) is not None,
              refused.stderr)

        # Rules reload when the file changes and on SIGHUP; a broken file keeps the rules loaded before.
        rules = os.path.join(work, "storage.rules")
        deny = "rules_version = '2';\nservice firebase.storage {\n  match /b/{bucket}/o/{p=**} {\n    allow read;\n  }\n}\n"
        allow = deny.replace("allow read;", "allow read, write;")
        with open(rules, "w") as f:
            f.write(deny)
        proc, port, banner = start_silo(args.binary, "--data", data, "--rules", rules)
        status, _ = request(port, "POST", "/v0/b/only.appspot.com/o?name=r.txt", b"x")
        check("rules deny a write they do not allow", status == 403, status)
        time.sleep(1.1)  # a new mtime second, whatever the filesystem's timestamp granularity
        with open(rules, "w") as f:
            f.write(allow)
        for _ in range(50):
            status, _ = request(port, "POST", "/v0/b/only.appspot.com/o?name=r.txt", b"x")
            if status == 200:
                break
            time.sleep(0.1)
        check("a changed rules file is picked up without a restart", status == 200, status)
        with open(bad) as src, open(rules, "w") as f:
            f.write(src.read())
        proc.send_signal(signal.SIGHUP)
        time.sleep(1.5)
        status, _ = request(port, "POST", "/v0/b/only.appspot.com/o?name=r2.txt", b"x")
        check("a broken rules file keeps the rules loaded before", status == 200, status)
        proc.send_signal(signal.SIGTERM)
        check("exits 0 after reloads", proc.wait(timeout=30) == 0)

        proc, port, _ = start_silo(args.binary, "--data", data)
        status, body = request(port, "GET", "/v0/b/only.appspot.com/o/a.txt?alt=media")
        check("data survives a restart", status == 200 and body == b"persist me", (status, body[:40]))
        status, _ = request(port, "GET", "/v0/b/only.appspot.com/o/slow.bin")
        check("the drained upload is there after restart", status == 200, status)
        proc.send_signal(signal.SIGINT)
        check("SIGINT exits 0", proc.wait(timeout=30) == 0)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    failed = sum(1 for _, ok in results if not ok)
    print(f"{len(results) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
