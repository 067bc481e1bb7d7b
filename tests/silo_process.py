"""Shared by the Python tests: start `silo serve` on a free loopback port and talk HTTP to it (standard library)."""
import http.client
import os
import re
import subprocess
import threading
import time


def start_silo(binary, *args, timeout=60, cwd=None, stderr=None):
    """Starts `silo serve --port 0 ARGS` (in directory `cwd`, if given); returns (process, port, banner text). Output
    is drained in the background so the server never blocks on a full pipe (`stderr`: a file to write the log to
    instead). Raises if the server exits or announces no port in time."""
    proc = subprocess.Popen([binary, "serve", "--port", "0", *args], stdout=subprocess.PIPE,
                            stderr=stderr or subprocess.PIPE, text=True, cwd=cwd)
    banner = []
    deadline = time.time() + timeout
    while time.time() < deadline:
        line = proc.stdout.readline()
        if not line:
            if proc.poll() is not None:
                raise RuntimeError("silo serve exited during startup: " + (proc.stderr.read()[-2000:] if proc.stderr else ""))
            continue
        banner.append(line)
        m = re.search(r"https?://127\.0\.0\.1:(\d+)", line)
        if m:
            # The rest of the banner ends with the useEmulator line.
            for _ in range(12):
                banner.append(proc.stdout.readline())
                if "useEmulator" in banner[-1]:
                    break
            threading.Thread(target=proc.stdout.read, daemon=True).start()
            if proc.stderr:
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


def wait_for_maintenance_pass(port, passes=1, timeout=60, headers=None):
    """Waits until the server has finished `passes` maintenance passes (`silo_maintenance_passes_total` in /metrics):
    the first runs in the background once the server is serving, and collects what a crash left behind."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        status, _, body = request(port, "GET", "/metrics", headers=headers)
        m = re.search(rb"^silo_maintenance_passes_total (\d+)", body, re.M) if status == 200 else None
        if m and int(m.group(1)) >= passes:
            return
        time.sleep(0.1)
    raise RuntimeError(f"no maintenance pass finished within {timeout} s")


def make_ca_and_cert(folder, serial=None, name="server", ca=None):
    """A throwaway CA (made unless `ca` = (ca_crt, ca_key) is given) and a server certificate for localhost /
    127.0.0.1 signed by it, with the openssl command line; returns (ca_crt, crt, key). `serial`: the certificate's
    serial number (an int), so a test can tell which certificate it was served."""
    if ca is None:
        ca = os.path.join(folder, "ca.crt"), os.path.join(folder, "ca.key")
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj",
                        "/CN=Silo test CA", "-keyout", ca[1], "-out", ca[0]], check=True, capture_output=True)
    ca_crt, ca_key = ca
    key, csr, crt = (os.path.join(folder, name + ext) for ext in (".key", ".csr", ".crt"))
    ext = os.path.join(folder, name + ".ext")
    with open(ext, "w") as f:
        f.write("subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=CA:FALSE\n")
    run = lambda *a: subprocess.run(a, check=True, capture_output=True)  # noqa: E731
    run("openssl", "req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=localhost", "-keyout", key, "-out", csr)
    signing = ["-set_serial", str(serial)] if serial is not None else ["-CAcreateserial"]
    run("openssl", "x509", "-req", "-in", csr, "-CA", ca_crt, "-CAkey", ca_key, *signing, "-days", "2",
        "-extfile", ext, "-out", crt)
    return ca_crt, crt, key
