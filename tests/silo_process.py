"""Shared by the Python tests: start `silo serve` on a free loopback port and talk HTTP to it (standard library)."""
import http.client
import re
import subprocess
import threading
import time


def start_silo(binary, *args, timeout=60, cwd=None):
    """Starts `silo serve --port 0 ARGS` (in directory `cwd`, if given); returns (process, port, banner text). Output
    is drained in the background so the server never blocks on a full pipe. Raises if the server exits or announces
    no port in time."""
    proc = subprocess.Popen([binary, "serve", "--port", "0", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, cwd=cwd)
    banner = []
    deadline = time.time() + timeout
    while time.time() < deadline:
        line = proc.stdout.readline()
        if not line:
            if proc.poll() is not None:
                raise RuntimeError("silo serve exited during startup: " + proc.stderr.read()[-2000:])
            continue
        banner.append(line)
        m = re.search(r"http://127\.0\.0\.1:(\d+)", line)
        if m:
            # The rest of the banner ends with the useEmulator line.
            for _ in range(12):
                banner.append(proc.stdout.readline())
                if "useEmulator" in banner[-1]:
                    break
            threading.Thread(target=proc.stdout.read, daemon=True).start()
            threading.Thread(target=proc.stderr.read, daemon=True).start()
            return proc, int(m.group(1)), "".join(banner)
    proc.kill()
    raise RuntimeError("silo serve did not announce its port: " + "".join(banner))


def request(port, method, path, body=b"", headers=None, timeout=30):
    """One request on a fresh connection; returns (status, headers as a dict, body bytes)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        r = conn.getresponse()
        return r.status, dict(r.getheaders()), r.read()
    finally:
        conn.close()
