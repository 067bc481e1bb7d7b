"""Helpers for the hostile-input suite: a raw HTTP/1.1 client that keeps the server's exact bytes, a strict response
parser, secured `silo serve` instances with a canary object, and the bookkeeping behind the summary table.
Standard library only; loopback only; every wait is bounded."""
import json
import os
import re
import secrets
import select
import shutil
import socket
import subprocess
import tempfile
import threading
import time
import urllib.parse

BUCKET = "demo.appspot.com"
PROJECT = "demo-project"
ADMIN_KEY = "hostile-admin-key-" + "0123456789abcdef"

# Users' own folders, public reads, a create-only folder: the rules most checks run under.
MAIN_RULES = """rules_version = '2';
service firebase.storage {
  match /b/{bucket}/o {
    match /public/{all=**} {
      allow read;
    }
    match /users/{uid}/{all=**} {
      allow read, write: if request.auth != null && request.auth.uid == uid;
    }
    match /once/{file} {
      allow read;
      allow create: if resource == null;
    }
  }
}
"""

# ---------------------------------------------------------------------------------------------------------------
# Every response the suite sees, for check 10 (no 5xx anywhere).

_lock = threading.Lock()
current_check = ["setup"]
five_xx = []          # (check, what, status)
response_count = [0]


def record_status(status, what):
    if status is None:
        return
    with _lock:
        response_count[0] += 1
        if status >= 500:
            five_xx.append((current_check[0], what, status))


# ---------------------------------------------------------------------------------------------------------------
# Strict response parsing.

TOKEN = rb"[!#$%&'*+.^_`|~0-9A-Za-z-]+"
HEADER_LINE = re.compile(rb"(" + TOKEN + rb"):[ \t]*(.*?)[ \t]*\Z", re.S)
STATUS_LINE = re.compile(rb"HTTP/1\.[01] (\d{3})(?: ([^\r\n\x00]*))?\Z")


class Response:
    def __init__(self, status, reason, headers, raw_head, body, issues):
        self.status = status
        self.reason = reason
        self.headers = headers          # [(name, value)] as sent, latin-1 decoded
        self.raw_head = raw_head
        self.body = body
        self.issues = issues            # framing or header-syntax problems found in the raw bytes
        self.elapsed = None
        self.error = None

    def header(self, name):
        name = name.lower()
        for k, v in self.headers:
            if k.lower() == name:
                return v
        return None

    def header_all(self, name):
        name = name.lower()
        return [v for k, v in self.headers if k.lower() == name]

    def json(self):
        try:
            return json.loads(self.body)
        except Exception:
            return None

    def error_code(self):
        """The `error.code` of the API's error JSON, or None."""
        j = self.json()
        if isinstance(j, dict) and isinstance(j.get("error"), dict):
            return j["error"].get("code")
        return None

    def short(self):
        if self.status is None:
            return f"no response ({self.error})"
        body = self.body[:100]
        return f"{self.status} {body!r}" + (f" issues={self.issues}" if self.issues else "")

    def head_text(self, limit=600):
        return self.raw_head[:limit].decode("latin-1")


class NoResponse(Response):
    def __init__(self, error):
        super().__init__(None, None, [], b"", b"", [])
        self.error = error


def _parse_one(buf, pos, closed, head_request=False):
    """One response starting at buf[pos]; returns (Response, next position) or None when incomplete."""
    end = buf.find(b"\r\n\r\n", pos)
    if end < 0:
        if closed and pos < len(buf):
            return Response(None, None, [], bytes(buf[pos:]), b"", ["truncated head"]), len(buf)
        return None
    raw_head = bytes(buf[pos:end])
    issues = []
    lines = raw_head.split(b"\r\n")
    m = STATUS_LINE.match(lines[0])
    status = int(m.group(1)) if m else None
    reason = m.group(2).decode("latin-1") if m and m.group(2) else ""
    if not m:
        issues.append(f"bad status line {lines[0][:80]!r}")
    headers = []
    for line in lines[1:]:
        if b"\r" in line or b"\n" in line or b"\x00" in line:
            issues.append(f"bare CR/LF/NUL inside header line {line[:100]!r}")
        hm = HEADER_LINE.match(line)
        if not hm:
            issues.append(f"malformed header line {line[:100]!r}")
            continue
        headers.append((hm.group(1).decode("latin-1"), hm.group(2).decode("latin-1")))
    resp = Response(status, reason, headers, raw_head, b"", issues)
    start = end + 4
    lengths = resp.header_all("content-length")
    te = resp.header("transfer-encoding")
    if len(set(lengths)) > 1:
        issues.append(f"conflicting Content-Length {lengths}")
    if head_request or status in (204, 304) or (status is not None and 100 <= status < 200):
        return resp, start
    if te is not None and "chunked" in te.lower():
        body = bytearray()
        i = start
        while True:
            lf = buf.find(b"\r\n", i)
            if lf < 0:
                return None if not closed else (_truncated(resp, body, "truncated chunked body"), len(buf))
            size_text = bytes(buf[i:lf]).split(b";")[0].strip()
            try:
                size = int(size_text, 16)
            except ValueError:
                issues.append(f"bad chunk size {size_text[:40]!r}")
                return resp, len(buf)
            if size == 0:
                # Trailer lines (none expected) up to the empty line.
                p = lf + 2
                while True:
                    t = buf.find(b"\r\n", p)
                    if t < 0:
                        return None if not closed else (_truncated(resp, body, "truncated trailer"), len(buf))
                    if t == p:
                        resp.body = bytes(body)
                        return resp, t + 2
                    p = t + 2
            if len(buf) < lf + 2 + size + 2:
                return None if not closed else (_truncated(resp, body, "truncated chunk"), len(buf))
            body += buf[lf + 2:lf + 2 + size]
            if buf[lf + 2 + size:lf + 4 + size] != b"\r\n":
                issues.append("chunk not followed by CRLF")
            i = lf + 4 + size
    if lengths:
        try:
            n = int(lengths[0])
        except ValueError:
            issues.append(f"bad Content-Length {lengths[0]!r}")
            return resp, len(buf)
        if len(buf) - start < n:
            if closed:
                return _truncated(resp, bytes(buf[start:]), f"body shorter than Content-Length {n}"), len(buf)
            return None
        resp.body = bytes(buf[start:start + n])
        return resp, start + n
    # Delimited by close.
    if not closed:
        return None
    resp.body = bytes(buf[start:])
    return resp, len(buf)


def _truncated(resp, body, what):
    resp.body = bytes(body)
    resp.issues.append(what)
    return resp


def parse_all(buf, closed, head_requests=()):
    """Every complete response in buf; returns (final responses, interim 1xx responses, bytes left over)."""
    out, interim = [], []
    pos = 0
    index = 0
    while pos < len(buf):
        r = _parse_one(buf, pos, closed, head_request=index in head_requests)
        if r is None:
            break
        resp, pos = r
        if resp.status is not None and 100 <= resp.status < 200:
            interim.append(resp)
            continue
        out.append(resp)
        index += 1
    return out, interim, bytes(buf[pos:])


# ---------------------------------------------------------------------------------------------------------------
# A raw connection: bytes go out exactly as given; a reader thread keeps everything the server sends.

class Conn:
    def __init__(self, port, source=None, timeout=10.0):
        self.port = port
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.settimeout(timeout)
        if source:
            self.sock.bind((source, 0))
        self.sock.connect(("127.0.0.1", port))
        self.sock.settimeout(0.2)
        self.buf = bytearray()
        self.closed = False
        self.reset = False
        self.closed_at = None
        self.send_error = None
        self.last_data = time.time()
        self._stop = False
        self._cond = threading.Condition()
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self):
        while not self._stop:
            try:
                chunk = self.sock.recv(1 << 16)
            except socket.timeout:
                continue
            except (ConnectionResetError, OSError):
                with self._cond:
                    self.reset = True
                    self.closed = True
                    self.closed_at = time.time()
                    self._cond.notify_all()
                return
            with self._cond:
                if not chunk:
                    self.closed = True
                    self.closed_at = time.time()
                    self._cond.notify_all()
                    return
                self.buf += chunk
                self.last_data = time.time()
                self._cond.notify_all()

    def send(self, data, pieces=1 << 16):
        """Sends data; a server that already answered and closed is not an error (returns False)."""
        view = memoryview(data)
        try:
            self.sock.settimeout(10)
            for i in range(0, len(view), pieces):
                self.sock.sendall(view[i:i + pieces])
            return True
        except (BrokenPipeError, ConnectionResetError, socket.timeout, OSError) as e:
            self.send_error = e
            return False
        finally:
            self.sock.settimeout(0.2)

    def responses(self, count=1, timeout=10.0, linger=0.0, head_requests=()):
        """Waits for `count` complete responses (or close, or timeout), then `linger` seconds for anything more."""
        deadline = time.time() + timeout
        with self._cond:
            while True:
                done, _, _ = parse_all(self.buf, self.closed, head_requests)
                if len(done) >= count or self.closed or time.time() >= deadline:
                    break
                self._cond.wait(min(0.05, max(0.0, deadline - time.time())))
            if linger and not self.closed:
                end = time.time() + linger
                while time.time() < end and not self.closed:
                    self._cond.wait(0.05)
            done, interim, rest = parse_all(self.buf, self.closed, head_requests)
        return done, interim, rest

    def wait_closed(self, timeout):
        deadline = time.time() + timeout
        with self._cond:
            while not self.closed and time.time() < deadline:
                self._cond.wait(0.05)
            return self.closed

    def close(self):
        self._stop = True
        try:
            self.sock.close()
        except OSError:
            pass


def build_request(method, target, headers=(), body=b"", port=None, host=True, length=True, version="HTTP/1.1"):
    """Request bytes. headers: list of (name, value) (str or bytes); Host and Content-Length are added unless
    told not to."""
    def b(x):
        return x if isinstance(x, bytes) else str(x).encode("utf-8")
    out = [b(method) + b" " + b(target) + b" " + b(version)]
    names = {b(k).lower() for k, _ in headers}
    if host and b"host" not in names:
        out.append(b"Host: 127.0.0.1:" + b(port))
    for k, v in headers:
        out.append(b(k) + b": " + b(v))
    if length and b"content-length" not in names and b"transfer-encoding" not in names and (
            body or method in ("POST", "PUT", "PATCH")):
        out.append(b"Content-Length: " + b(len(body)))
    return b"\r\n".join(out) + b"\r\n\r\n" + b(body)


def hdrs(headers):
    if headers is None:
        return []
    if isinstance(headers, dict):
        return list(headers.items())
    return list(headers)


def request(port, method, target, body=b"", headers=None, timeout=10.0, source=None, what=None, close=True):
    """One request on a fresh connection; returns a Response (status None when nothing came back)."""
    h = hdrs(headers)
    if close and not any(k.lower() == "connection" for k, _ in h):
        h.append(("Connection", "close"))
    started = time.time()
    try:
        conn = Conn(port, source=source, timeout=timeout)
    except OSError as e:
        r = NoResponse(f"connect failed: {e}")
        r.elapsed = time.time() - started
        return r
    try:
        conn.send(build_request(method, target, h, body, port=port))
        done, _, _ = conn.responses(1, timeout=timeout)
    finally:
        conn.close()
    elapsed = time.time() - started
    if not done:
        r = NoResponse("closed without an answer" if conn.closed else f"no answer within {timeout:.0f} s")
        r.elapsed = elapsed
        return r
    r = done[0]
    r.elapsed = elapsed
    record_status(r.status, what or f"{method} {target[:80]}")
    return r


# ---------------------------------------------------------------------------------------------------------------
# Addresses.

def q(name):
    return urllib.parse.quote(name, safe="")


def v0_object(name, query=""):
    return f"/v0/b/{BUCKET}/o/{q(name)}" + (f"?{query}" if query else "")


def gcs_object(name, query=""):
    return f"/storage/v1/b/{BUCKET}/o/{q(name)}" + (f"?{query}" if query else "")


def path_of(url):
    """The path and query of an absolute URL the server handed out."""
    p = urllib.parse.urlsplit(url)
    return p.path + ("?" + p.query if p.query else "")


BOUNDARY = "hostile-boundary-4711"


def multipart_body(meta, data, media_type="application/octet-stream"):
    meta_bytes = meta if isinstance(meta, (bytes, bytearray)) else json.dumps(meta).encode()
    return (f"--{BOUNDARY}\r\nContent-Type: application/json; charset=utf-8\r\n\r\n".encode() + meta_bytes
            + f"\r\n--{BOUNDARY}\r\nContent-Type: {media_type}\r\n\r\n".encode() + data
            + f"\r\n--{BOUNDARY}--".encode())


def blob_files(data_dir):
    """{relative path: size} of every file under DATA/blobs."""
    root = os.path.join(data_dir, "blobs")
    out = {}
    for d, _, files in os.walk(root):
        for f in files:
            p = os.path.join(d, f)
            try:
                out[os.path.relpath(p, root)] = os.path.getsize(p)
            except OSError:
                pass
    return out


def blob_growth(before, after):
    """How the blob files changed: (new files, files that grew, bytes added), described."""
    new = {k: v for k, v in after.items() if k not in before}
    grown = {k: (before[k], v) for k, v in after.items() if k in before and v > before[k]}
    added = sum(new.values()) + sum(v - b for b, v in grown.values())
    return new, grown, added


def describe_growth(before, after):
    new, grown, added = blob_growth(before, after)
    if not new and not grown:
        return None
    return (f"blobs: {len(before)}→{len(after)} files, +{added} bytes"
            + (f" (new: {sorted(new.values())[:6]})" if new else "") + (f" (grown: {len(grown)})" if grown else ""))


# ---------------------------------------------------------------------------------------------------------------
# Servers.

class FlagUnsupported(Exception):
    def __init__(self, flag, stderr):
        super().__init__(f"silo serve does not accept {flag}")
        self.flag = flag
        self.stderr = stderr


class Silo:
    """A `silo serve --port 0` with its own data directory; secured by default (rules, HS256 secret, admin key).
    start() uploads the canary; verify() says whether it, and the server, survived."""

    binary = None
    work_root = None
    common_args = []   # added to every server (--serve-args), e.g. --inline-limit 0

    def __init__(self, name, secured=True, rules=MAIN_RULES, extra=()):
        self.name = name
        self.dir = tempfile.mkdtemp(prefix=f"{name}-", dir=Silo.work_root)
        self.data = os.path.join(self.dir, "data")
        self.secured = secured
        self.extra = list(extra)
        self.args = ["--data", self.data, "--threads", "8"]
        self.secret_file = os.path.join(self.dir, "secret")
        with open(self.secret_file, "w") as f:
            f.write(secrets.token_hex(32) + "\n")
        if secured:
            self.rules_file = os.path.join(self.dir, "storage.rules")
            with open(self.rules_file, "w") as f:
                f.write(rules)
            admin_file = os.path.join(self.dir, "admin-keys")
            with open(admin_file, "w") as f:
                f.write("# hostile suite\n" + ADMIN_KEY + "\n")
            # A secured server serves the buckets it is given (created at startup); uploads do not create them.
            self.args += ["--rules", self.rules_file, "--auth-secret", self.secret_file,
                          "--admin-key-file", admin_file, "--project", PROJECT, "--bucket", BUCKET]
        self.args += Silo.common_args + self.extra
        self.proc = None
        self.port = None
        self._tokens = {}
        self.canary = None
        self.stderr_path = os.path.join(self.dir, "stderr.txt")

    # -- life cycle

    def start(self, canary=True):
        err = open(self.stderr_path, "w")
        self.proc = subprocess.Popen([Silo.binary, "serve", "--port", "0", *self.args], stdout=subprocess.PIPE,
                                     stderr=err, text=True)
        err.close()
        deadline = time.time() + 30
        banner = []
        while time.time() < deadline:
            ready, _, _ = select.select([self.proc.stdout], [], [], 0.2)
            if not ready:
                if self.proc.poll() is not None:
                    break
                continue
            line = self.proc.stdout.readline()
            if not line:
                if self.proc.poll() is not None:
                    break
                continue
            banner.append(line)
            m = re.search(r"http://127\.0\.0\.1:(\d+)", line)
            if m:
                self.port = int(m.group(1))
                threading.Thread(target=self.proc.stdout.read, daemon=True).start()
                break
        if self.port is None:
            code = self.proc.wait(timeout=10) if self.proc.poll() is None else self.proc.returncode
            stderr = self.stderr_text()
            for flag in self.extra:
                if flag.startswith("--") and flag in stderr:
                    raise FlagUnsupported(flag, stderr.strip())
            raise RuntimeError(f"silo serve did not start (exit {code}): {stderr[-600:]} {''.join(banner)[-400:]}")
        # The banner is printed once the listener is open.
        for _ in range(50):
            r = request(self.port, "GET", "/", timeout=2, what="GET / (startup)")
            if r.status == 200:
                break
            time.sleep(0.05)
        if canary:
            self.put_canary()
        return self

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)

    def cleanup(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def stderr_text(self):
        try:
            with open(self.stderr_path, errors="replace") as f:
                return f.read()
        except OSError:
            return ""

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    # -- credentials

    def token(self, uid, secret_file=None):
        key = (uid, secret_file)
        if key not in self._tokens:
            out = subprocess.run([Silo.binary, "token", "--uid", uid, "--auth-secret", secret_file or self.secret_file,
                                  "--project", PROJECT], capture_output=True, text=True, timeout=20)
            if out.returncode != 0:
                raise RuntimeError(f"silo token failed: {out.stderr}")
            self._tokens[key] = out.stdout.strip()
        return self._tokens[key]

    def foreign_token(self, uid):
        """A well-formed token signed with a secret this server does not know (must be 401)."""
        path = os.path.join(self.dir, "other-secret")
        if not os.path.exists(path):
            with open(path, "w") as f:
                f.write(secrets.token_hex(32) + "\n")
        return self.token(uid, secret_file=path)

    def auth(self, uid):
        return ("Authorization", "Firebase " + self.token(uid))

    @staticmethod
    def admin():
        return ("Authorization", "Bearer " + ADMIN_KEY)

    # -- requests

    def req(self, method, target, body=b"", headers=(), timeout=10.0, what=None, source=None):
        return request(self.port, method, target, body, hdrs(headers), timeout=timeout, what=what, source=source)

    def conn(self, source=None, timeout=10.0):
        return Conn(self.port, source=source, timeout=timeout)

    def blobs(self):
        return blob_files(self.data)

    # -- the canary

    CANARY = "canary/keep-me.bin"

    def put_canary(self):
        data = secrets.token_bytes(3000)
        meta = {"name": self.CANARY, "contentType": "application/x-canary", "cacheControl": "private, max-age=7",
                "contentLanguage": "en", "metadata": {"canary": "yes", "suite": "hostile"}}
        r = self.req("POST", f"/v0/b/{BUCKET}/o?name={q(self.CANARY)}", multipart_body(meta, data),
                     [self.admin(), ("X-Goog-Upload-Protocol", "multipart"),
                      ("Content-Type", f"multipart/related; boundary={BOUNDARY}")], what="canary upload")
        if r.status != 200:
            raise RuntimeError(f"canary upload failed: {r.short()}")
        m = self.req("GET", v0_object(self.CANARY), headers=[self.admin()], what="canary metadata").json()
        self.canary = (data, m)

    CANARY_FIELDS = ("name", "bucket", "generation", "metageneration", "contentType", "size", "md5Hash", "crc32c",
                     "cacheControl", "contentLanguage", "metadata", "downloadTokens", "etag")

    def verify(self):
        """Problems found: the process, `GET /`, the canary's metadata and bytes. Empty when all is well."""
        problems = []
        if not self.alive():
            code = self.proc.returncode if self.proc else None
            return [f"server process exited (code {code}); stderr tail: {self.stderr_text()[-300:]!r}"]
        # Connections the check opened may take a moment to be noticed as closed.
        for attempt in range(5):
            r = self.req("GET", "/", timeout=5, what="GET / (verify)")
            if r.status == 200:
                break
            time.sleep(0.3)
        if r.status != 200 or (r.json() or {}).get("emulator") != "storage":
            problems.append(f"GET / answered {r.short()}")
        if self.canary is None:
            return problems
        data, meta = self.canary
        m = self.req("GET", v0_object(self.CANARY), headers=[self.admin()], what="canary metadata (verify)")
        now = m.json() if m.status == 200 else None
        if now is None:
            problems.append(f"canary metadata: {m.short()}")
        else:
            changed = [k for k in self.CANARY_FIELDS if now.get(k) != meta.get(k)]
            if changed:
                problems.append("canary metadata changed: " + ", ".join(
                    f"{k} {meta.get(k)!r}→{now.get(k)!r}" for k in changed))
        d = self.req("GET", v0_object(self.CANARY, "alt=media"), headers=[self.admin()], what="canary media (verify)")
        if d.status != 200 or d.body != data:
            problems.append(f"canary bytes: {d.status}, {len(d.body)} bytes, equal={d.body == data}")
        return problems
