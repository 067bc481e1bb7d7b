#!/usr/bin/env python3
"""Black-box checks of the `silo` client commands that need real signals and processes: Ctrl-C (SIGINT) during a
download cancels cleanly (exit 130, the partial file kept) and re-running the same `cp` resumes; and
`silo serve --import DIR --export-on-exit` loads an export and writes it back on SIGTERM with download tokens kept.
127.0.0.1 only, bounded in time. Prints 'N passed, N failed'."""
import argparse
import glob
import hashlib
import http.client
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from silo_process import start_silo  # noqa: E402


results = []


def check(name, ok, detail=""):
    results.append(ok)
    print(("ok   " if ok else "FAIL ") + name + ("" if ok else f": {detail}"), flush=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", default=".build/release/silo")
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="silo-cli-test-")
    proc, port, _ = start_silo(args.binary, "--data", os.path.join(work, "data"))
    endpoint = f"http://127.0.0.1:{port}"
    try:
        big = os.path.join(work, "big.bin")
        with open(big, "wb") as f:
            for _ in range(48):
                f.write(os.urandom(1 << 20))
        up = subprocess.run([args.binary, "cp", big, "gs://cli.appspot.com/big.bin", "--endpoint", endpoint],
                            capture_output=True, text=True, timeout=120)
        check("cp uploads a 48 MiB file", up.returncode == 0, up.stderr)

        # Ctrl-C mid-download: wait until the partial file has bytes, then SIGINT.
        dest = os.path.join(work, "back.bin")
        down = subprocess.Popen([args.binary, "cp", "gs://cli.appspot.com/big.bin", dest, "--endpoint", endpoint],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.time() + 30
        while time.time() < deadline:
            parts = glob.glob(dest + ".*.part")
            if parts and os.path.getsize(parts[0]) > 0:
                break
            if down.poll() is not None:
                break
            time.sleep(0.005)
        interrupted = down.poll() is None
        if interrupted:
            down.send_signal(signal.SIGINT)
        out, err = down.communicate(timeout=30)
        parts = glob.glob(dest + ".*.part")
        if interrupted:
            check("SIGINT during a download exits 130", down.returncode == 130, (down.returncode, err))
            check("no stack trace on Ctrl-C", "Fatal error" not in err and "Stack dump" not in err, err[-300:])
            check("the partial file is kept", len(parts) == 1 and 0 < os.path.getsize(parts[0]) < 48 << 20,
                  [(p, os.path.getsize(p)) for p in parts])
        else:
            check("the download was slow enough to interrupt", False, "finished before SIGINT could be sent")
        again = subprocess.run([args.binary, "cp", "gs://cli.appspot.com/big.bin", dest, "--endpoint", endpoint],
                               capture_output=True, text=True, timeout=120)
        same = os.path.exists(dest) and hashlib.md5(open(dest, "rb").read()).digest() == hashlib.md5(open(big, "rb").read()).digest()
        check("re-running cp resumes and the file is identical", again.returncode == 0 and same, again.stderr)
        check("no partial file is left", not glob.glob(dest + ".*.part"))

        # Export, then a fresh server that imports it and exports again on exit.
        conn = http.client.HTTPConnection("127.0.0.1", port)
        conn.request("GET", "/v0/b/cli.appspot.com/o/big.bin")
        token = json.loads(conn.getresponse().read())["downloadTokens"]
        export = os.path.join(work, "export")
        ex = subprocess.run([args.binary, "export", export, "--endpoint", endpoint], capture_output=True, text=True,
                            timeout=120)
        check("silo export writes the emulator layout", ex.returncode == 0
              and os.path.exists(os.path.join(export, "firebase-export-metadata.json")), ex.stderr)
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)

        proc, port, _ = start_silo(args.binary, "--data", os.path.join(work, "data2"), "--import", export, "--export-on-exit")
        imported = None
        for _ in range(100):
            conn = http.client.HTTPConnection("127.0.0.1", port)
            conn.request("GET", "/v0/b/cli.appspot.com/o/big.bin")
            r = conn.getresponse()
            body = r.read()
            if r.status == 200:
                imported = json.loads(body)
                break
            time.sleep(0.1)
        check("serve --import loads the export with its download token",
              imported is not None and token in imported.get("downloadTokens", ""), imported)
        conn = http.client.HTTPConnection("127.0.0.1", port)
        conn.request("POST", "/v0/b/cli.appspot.com/o?name=added.txt", body=b"added after import")
        conn.getresponse().read()
        proc.send_signal(signal.SIGTERM)
        check("serve exits 0 after exporting", proc.wait(timeout=60) == 0)
        names = []
        for path in glob.glob(os.path.join(export, "storage_export", "metadata", "**", "*.json"), recursive=True):
            names.append(json.load(open(path))["name"])
        check("--export-on-exit wrote the new object back", "added.txt" in names and "big.bin" in names, names)

        # As the emulator: --export-on-exit on a directory that does not exist yet starts empty and creates it.
        fresh = os.path.join(work, "fresh-export")
        proc, port, _ = start_silo(args.binary, "--data", os.path.join(work, "data3"), "--import", fresh,
                                   "--export-on-exit")
        conn = http.client.HTTPConnection("127.0.0.1", port)
        conn.request("POST", "/v0/b/cli.appspot.com/o?name=first.txt", body=b"first")
        conn.getresponse().read()
        proc.send_signal(signal.SIGTERM)
        check("serve --import MISSING --export-on-exit starts and exits 0", proc.wait(timeout=60) == 0)
        names = [json.load(open(p))["name"] for p in
                 glob.glob(os.path.join(fresh, "storage_export", "metadata", "**", "*.json"), recursive=True)]
        check("--export-on-exit created the missing directory with the object", names == ["first.txt"], names)
    finally:
        if proc.poll() is None:
            proc.kill()
        shutil.rmtree(work, ignore_errors=True)
    failed = results.count(False)
    print(f"{len(results) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
