#!/usr/bin/env python3
"""Hostile-input suite: attacks a live `silo serve` on 127.0.0.1 the way a local attacker would (header injection
through metadata, writes without permission, size caps, slowloris, connection floods, request smuggling, malformed
input, JSON and rules bombs) and checks that the server stays up and loses nothing: every check's server gets a
canary object first and must still serve it, byte for byte, at the end.

    python3 tests/hostile/hostile_test.py --binary .build/release/silo [--only 1,6] [--json out.json]

Standard library only; loopback only; every load is bounded in count and time. Prints a table of checks and exits 1
if any check fails."""
import argparse
import json
import os
import re
import secrets
import shutil
import socket
import sys
import tempfile
import threading
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hostile_lib as L  # noqa: E402
from hostile_lib import (BUCKET, BOUNDARY, Silo, FlagUnsupported, build_request, describe_growth,  # noqa: E402
                         blob_growth, gcs_object, multipart_body, path_of, q, v0_object)

# ---------------------------------------------------------------------------------------------------------------
# Rows of the summary table.

ROWS = []


class Row:
    def __init__(self, key, title):
        self.key = key
        self.title = title
        self.failures = []
        self.notes = []
        ROWS.append(self)

    def fail(self, text):
        self.failures.append(text)
        return False

    def note(self, text):
        self.notes.append(text)

    def expect(self, condition, text):
        if not condition:
            self.fail(text)
        return bool(condition)

    @property
    def passed(self):
        return not self.failures

    def detail(self):
        if self.failures:
            more = f" (+{len(self.failures) - 1} more)" if len(self.failures) > 1 else ""
            lead = "; ".join(n for n in self.notes if n not in self.failures)
            return (lead + " — e.g. " if lead else "") + self.failures[0] + more
        return "; ".join(self.notes)


SURVIVAL = []   # (check, server name, problems)


class Context:
    """What one check has open: its rows and its servers (verified and stopped when the check ends)."""

    def __init__(self, number):
        self.number = number
        self.servers = []
        self.rows = []

    def row(self, key, title):
        r = Row(key, title)
        self.rows.append(r)
        return r

    def server(self, name, **kw):
        s = Silo(name, **kw)
        self.servers.append(s)
        return s.start()

    def finish(self):
        for s in self.servers:
            problems = s.verify() if s.port else []
            SURVIVAL.append((self.number, s.name, problems))
            if problems and self.rows:
                self.rows[-1].fail(f"{s.name} did not survive the check: {problems[0]}")
            s.stop()


def flag_server(ctx, row, name, flags, **kw):
    """A server started with flags the lead is adding; None (and a failed row) when this binary lacks them."""
    try:
        return ctx.server(name, extra=flags, **kw)
    except FlagUnsupported as e:
        ctx.servers.pop()
        row.fail(f"silo serve does not accept {e.flag} ({e.stderr.splitlines()[-1][:120] if e.stderr else 'exit 64'})")
        return None


# ---------------------------------------------------------------------------------------------------------------
# Shared expectations.

def expect_status(row, resp, statuses, what, json_error=False):
    statuses = (statuses,) if isinstance(statuses, int) else tuple(statuses)
    if resp.status not in statuses:
        return row.fail(f"{what}: expected {'/'.join(map(str, statuses))}, got {resp.short()}")
    if json_error and resp.error_code() != resp.status:
        return row.fail(f"{what}: {resp.status} but not the API's error JSON: {resp.body[:120]!r}")
    return True


def exists(srv, name):
    r = srv.req("GET", gcs_object(name), headers=[srv.admin()], what="exists?")
    return r.status == 200, r


def expect_absent(row, srv, name, what):
    there, r = exists(srv, name)
    if there:
        row.fail(f"{what}: the object was stored anyway (size {(r.json() or {}).get('size')})")


def download_check(srv, name, api="v0", exists=True):
    """Downloads `name` and then `GET /` on one keep-alive connection and reads the raw bytes: exactly two
    well-formed responses, no header line that an injection produced, no bytes left over. Returns problems."""
    target = (v0_object(name, "alt=media") if api == "v0"
              else f"/download/storage/v1/b/{BUCKET}/o/{q(name)}?alt=media")
    c = srv.conn()
    try:
        c.send(build_request("GET", target, [srv.admin()], port=srv.port)
               + build_request("GET", "/", [("Connection", "close")], port=srv.port))
        c.responses(2, timeout=5)
        c.wait_closed(1.0)
        done, _, rest = c.responses(2, timeout=0)
    finally:
        c.close()
    problems = []
    for r in done:
        L.record_status(r.status, f"{api} download {name}")
    if len(done) != 2:
        problems.append(f"{len(done)} responses on one keep-alive connection instead of 2"
                        + (f" (first: {done[0].status})" if done else ""))
    for i, r in enumerate(done):
        # What a lenient client would take for header lines: any CR, LF or NUL ends one.
        lenient = re.split(rb"\r\n|\n|\r|\x00", r.raw_head)
        injected = [ln for ln in lenient if ln.lower().startswith(b"x-injected")]
        if injected:
            at = r.raw_head.find(b"X-Injected")
            problems.append(f"response {i + 1} ({r.status}) has an injected header line: "
                            f"{r.raw_head[max(0, at - 60):at + 20]!r}")
        elif r.issues:
            problems.append(f"response {i + 1} ({r.status}) malformed: {r.issues[0]}")
    if done and exists and done[0].status not in (200, 206):
        problems.append(f"download answered {done[0].short()}")
    if len(done) >= 2 and (done[1].status != 200 or (done[1].json() or {}).get("emulator") != "storage"):
        problems.append(f"second response is not the GET / answer: {done[1].short()}")
    if rest:
        problems.append(f"{len(rest)} stray bytes after the responses: {rest[:80]!r}")
    return problems


# ---------------------------------------------------------------------------------------------------------------
# 1. Header injection through every metadata write.

FIELD_BASE = {"contentType": "text/plain", "contentDisposition": "attachment", "cacheControl": "no-cache",
              "contentLanguage": "en", "contentEncoding": "br"}
SEPARATORS = [("CRLF", "\r\n"), ("LF", "\n"), ("CR", "\r"), ("NUL", "\u0000")]


# A whole second response inside the value: a server that lets it through splits its answer in two.
SPLIT = "\r\nContent-Length: 0\r\n\r\nHTTP/1.1 200 OK\r\nX-Injected: yes"


def injections():
    for field, base in FIELD_BASE.items():
        for sep_name, sep in SEPARATORS:
            yield field, sep_name, base + sep + "X-Injected: yes"
        yield field, "a response split", base + SPLIT


def check_1(ctx):
    srv = ctx.server("c1-injection")
    alice = srv.auth("alice")
    admin = srv.admin()
    json_h = ("Content-Type", "application/json; charset=utf-8")
    a = ctx.row("1a", "header injection: v0 PATCH of each download-header field → 400")
    b = ctx.row("1b", "header injection: GCS PATCH and PUT → 400")
    c = ctx.row("1c", "header injection: v0 multipart and resumable-start metadata → 400, nothing stored")
    d = ctx.row("1d", "header injection: GCS multipart and resumable-start metadata → 400, nothing stored")
    e = ctx.row("1e", "header injection: copy / rewrite / compose destination metadata → 400")
    f = ctx.row("1f", "downloads never carry an injected header line; keep-alive gives exactly 2 clean responses")
    downloads = [0, 0, 0]   # downloads, with an injected line or malformed, split into more responses

    def downloaded(name, what, present=True):
        for api in ("v0", "gcs"):
            downloads[0] += 1
            problems = download_check(srv, name, api, exists=present)
            downloads[1] += bool(problems)
            downloads[2] += any("responses on one keep-alive connection" in p for p in problems)
            for p in problems:
                f.fail(f"after {what}, {api} download: {p}")

    # Positive control: a clean object through the same two-response reader.
    srv.req("POST", f"/v0/b/{BUCKET}/o?name={q('users/alice/clean.txt')}", b"clean", [alice])
    downloaded("users/alice/clean.txt", "a clean upload")

    for i, (field, sep, value) in enumerate(injections()):
        what = f"v0 PATCH {field} with {sep}"
        name = f"users/alice/inj-v0-{i}"
        up = srv.req("POST", f"/v0/b/{BUCKET}/o?name={q(name)}", b"payload", [alice])
        if up.status != 200:
            a.fail(f"setup upload for {what}: {up.short()}")
            continue
        r = srv.req("PATCH", v0_object(name), json.dumps({field: value}).encode(), [alice, json_h], what=what)
        expect_status(a, r, 400, what, json_error=True)
        downloaded(name, what)

    for method in ("PATCH", "PUT"):
        for i, (field, sep, value) in enumerate(injections()):
            what = f"GCS {method} {field} with {sep}"
            name = f"public/inj-gcs-{method}-{i}"
            up = srv.req("POST", f"/upload/storage/v1/b/{BUCKET}/o?uploadType=media&name={q(name)}", b"payload",
                         [admin, ("Content-Type", "text/plain")])
            if up.status != 200:
                b.fail(f"setup upload for {what}: {up.short()}")
                continue
            r = srv.req(method, gcs_object(name), json.dumps({field: value}).encode(), [admin, json_h], what=what)
            expect_status(b, r, 400, what, json_error=True)
            downloaded(name, what)

    mp_type = ("Content-Type", f"multipart/related; boundary={BOUNDARY}")
    for i, (field, sep, value) in enumerate(injections()):
        # v0 multipart
        name = f"users/alice/inj-mp-{i}"
        what = f"v0 multipart {field} with {sep}"
        r = srv.req("POST", f"/v0/b/{BUCKET}/o?name={q(name)}", multipart_body({"name": name, field: value}, b"data"),
                    [alice, ("X-Goog-Upload-Protocol", "multipart"), mp_type], what=what)
        if expect_status(c, r, 400, what, json_error=True):
            expect_absent(c, srv, name, what)
        else:
            downloaded(name, what, present=r.status == 200)
        # v0 resumable start
        name = f"users/alice/inj-rs-{i}"
        what = f"v0 resumable start {field} with {sep}"
        r = srv.req("POST", f"/v0/b/{BUCKET}/o?name={q(name)}", json.dumps({"name": name, field: value}).encode(),
                    [alice, json_h, ("X-Goog-Upload-Protocol", "resumable"), ("X-Goog-Upload-Command", "start"),
                     ("X-Goog-Upload-Header-Content-Length", "4")], what=what)
        if not expect_status(c, r, 400, what, json_error=True) and r.status == 200 and r.header("X-Goog-Upload-URL"):
            fin = srv.req("POST", path_of(r.header("X-Goog-Upload-URL")), b"data",
                          [alice, ("X-Goog-Upload-Command", "upload, finalize"), ("X-Goog-Upload-Offset", "0")],
                          what=what + " (finalize)")
            downloaded(name, what + " then finalize", present=fin.status == 200)
        # GCS multipart
        name = f"public/inj-gmp-{i}"
        what = f"GCS multipart {field} with {sep}"
        r = srv.req("POST", f"/upload/storage/v1/b/{BUCKET}/o?uploadType=multipart",
                    multipart_body({"name": name, field: value}, b"data"), [admin, mp_type], what=what)
        if expect_status(d, r, 400, what, json_error=True):
            expect_absent(d, srv, name, what)
        else:
            downloaded(name, what, present=r.status == 200)
        # GCS resumable start
        name = f"public/inj-grs-{i}"
        what = f"GCS resumable start {field} with {sep}"
        r = srv.req("POST", f"/upload/storage/v1/b/{BUCKET}/o?uploadType=resumable&name={q(name)}",
                    json.dumps({"name": name, field: value}).encode(), [admin, json_h], what=what)
        if not expect_status(d, r, 400, what, json_error=True) and r.status == 200 and r.header("Location"):
            fin = srv.req("PUT", path_of(r.header("Location")), b"data", [admin, ("Content-Range", "bytes 0-3/4")],
                          what=what + " (final PUT)")
            downloaded(name, what + " then the final PUT", present=fin.status == 200)

    source = "public/inj-source"
    srv.req("POST", f"/upload/storage/v1/b/{BUCKET}/o?uploadType=media&name={q(source)}", b"source bytes",
            [admin, ("Content-Type", "text/plain")])
    for i, (field, sep, value) in enumerate(injections()):
        for op in ("copyTo", "rewriteTo", "compose"):
            name = f"public/inj-{op}-{i}"
            what = f"{op} destination {field} with {sep}"
            if op == "compose":
                body = {"sourceObjects": [{"name": source}], "destination": {field: value}}
                target = gcs_object(name) + "/compose"
            else:
                body = {field: value}
                target = gcs_object(source) + f"/{op}/b/{BUCKET}/o/{q(name)}"
            r = srv.req("POST", target, json.dumps(body).encode(), [admin, json_h], what=what)
            if expect_status(e, r, 400, what, json_error=True):
                expect_absent(e, srv, name, what)
            else:
                downloaded(name, what, present=r.status == 200)
    f.note(f"{downloads[0]} downloads read raw, each followed by GET / on the same connection"
           + (f"; {downloads[1]} carried an injected or malformed header line, {downloads[2]} of them split into "
              "more responses than were asked for" if downloads[1] else ""))
    for row in (a, b, c, d, e):
        if row.passed:
            row.note("every attempt refused with 400 and the error JSON")
        else:
            refused = sum(1 for x in row.failures if "expected 400" in x)
            row.note(f"{refused} attempts not refused with 400")


# ---------------------------------------------------------------------------------------------------------------
# 2. Writes without permission store nothing; declared lengths; sessions per caller.

def upload_request(srv, proto, name, data, cred, api="v0"):
    """(request bytes of the head and body) for a media / multipart / resumable-start upload."""
    h = [cred] if cred else []
    if api == "v0":
        target = f"/v0/b/{BUCKET}/o?name={q(name)}"
        if proto == "multipart":
            h += [("X-Goog-Upload-Protocol", "multipart"), ("Content-Type", f"multipart/related; boundary={BOUNDARY}")]
            body = multipart_body({"name": name, "contentType": "application/octet-stream"}, data)
        elif proto == "resumable":
            h += [("X-Goog-Upload-Protocol", "resumable"), ("X-Goog-Upload-Command", "start"),
                  ("X-Goog-Upload-Header-Content-Length", str(len(data))), ("Content-Type", "application/json")]
            body = json.dumps({"name": name}).encode()
        else:
            h += [("Content-Type", "application/octet-stream")]
            body = data
    else:
        if proto == "multipart":
            target = f"/upload/storage/v1/b/{BUCKET}/o?uploadType=multipart"
            h += [("Content-Type", f"multipart/related; boundary={BOUNDARY}")]
            body = multipart_body({"name": name}, data)
        elif proto == "resumable":
            target = f"/upload/storage/v1/b/{BUCKET}/o?uploadType=resumable&name={q(name)}"
            h += [("X-Upload-Content-Length", str(len(data))), ("Content-Type", "application/json")]
            body = json.dumps({"name": name}).encode()
        else:
            target = f"/upload/storage/v1/b/{BUCKET}/o?uploadType=media&name={q(name)}"
            h += [("Content-Type", "application/octet-stream")]
            body = data
    return build_request("POST", target, h, body, port=srv.port)


def denied_upload(srv, row, what, raw, expected, pause_at=None):
    """Sends an upload that must be refused; snapshots the blob files while the body is still arriving (after
    `pause_at` bytes) and after the answer. Returns the response."""
    before = srv.blobs()
    c = srv.conn()
    mid = None
    try:
        if pause_at:
            c.send(raw[:pause_at])
            time.sleep(0.3)
            mid = srv.blobs()
            c.send(raw[pause_at:])
        else:
            c.send(raw)
        done, _, _ = c.responses(1, timeout=10)
    finally:
        c.close()
    r = done[0] if done else L.NoResponse("no answer")
    L.record_status(r.status, what)
    expect_status(row, r, expected, what, json_error=True)
    if mid is not None:
        g = describe_growth(before, mid)
        if g:
            row.fail(f"{what}: while the body was still arriving, {g}")
    g = describe_growth(before, srv.blobs())
    if g:
        row.fail(f"{what}: after the answer, {g}")
    return r


def check_2(ctx):
    srv = ctx.server("c2-unauthorized")
    a = ctx.row("2a", "v0 media/multipart/resumable-start without permission → 403 (401 bad token), no blob bytes")
    b = ctx.row("2b", "GCS uploads without the admin key → 401/403, no blob bytes")
    cr = ctx.row("2c", "resumable chunks past the declared length → 400/413, nothing committed")
    sr = ctx.row("2d", "too many resumable sessions from one caller → 429 (--max-sessions-per-caller 5)")
    data = secrets.token_bytes(512 * 1024)
    creds = [("anonymous", None, 403), ("bob's token", srv.auth("bob"), 403),
             ("a token signed with another secret", ("Authorization", "Firebase " + srv.foreign_token("alice")), 401),
             ("a malformed token", ("Authorization", "Firebase not.a.jwt"), 401)]
    names = []
    for n, (cred_name, cred, expected) in enumerate(creds):
        for proto in ("media", "multipart", "resumable"):
            name = f"users/alice/denied-{proto}-{n}"
            names.append(name)
            what = f"v0 {proto}{' start' if proto == 'resumable' else ''} as {cred_name}"
            raw = upload_request(srv, proto, name, data, cred)
            head_end = raw.find(b"\r\n\r\n") + 4
            r = denied_upload(srv, a, what, raw, expected, pause_at=None if proto == "resumable" else head_end + 256 * 1024)
            if proto == "resumable" and r.status == 200 and r.header("X-Goog-Upload-URL"):
                # The session exists: see what its chunks do.
                before = srv.blobs()
                fin = srv.req("POST", path_of(r.header("X-Goog-Upload-URL")), data,
                              ([cred] if cred else []) + [("X-Goog-Upload-Command", "upload, finalize"),
                                                          ("X-Goog-Upload-Offset", "0")], what=what + " (chunk)")
                a.fail(f"{what}: then 'upload, finalize' of 512 KiB answered {fin.status}; "
                       f"{describe_growth(before, srv.blobs()) or 'blobs unchanged'}")
    for name in names:
        expect_absent(a, srv, name, f"{name}")
    if a.passed:
        a.note("12 attempts refused; blob files unchanged during and after each body")

    gnames = []
    for cred_name, cred, expected in [("anonymous", None, 401), ("alice's token", srv.auth("alice"), 403)]:
        for proto in ("media", "multipart", "resumable"):
            name = f"public/gcs-denied-{proto}-{len(gnames)}"
            gnames.append(name)
            what = f"GCS {proto}{' start' if proto == 'resumable' else ''} as {cred_name}"
            raw = upload_request(srv, proto, name, data, cred, api="gcs")
            head_end = raw.find(b"\r\n\r\n") + 4
            denied_upload(srv, b, what, raw, expected, pause_at=None if proto == "resumable" else head_end + 256 * 1024)
    for name in gnames:
        expect_absent(b, srv, name, name)
    if b.passed:
        b.note("6 attempts refused; blob files unchanged")

    # 2c: a legitimately started session, then more bytes than it declared.
    alice = srv.auth("alice")
    before = srv.blobs()

    def v0_start(name, header="X-Goog-Upload-Header-Content-Length"):
        r = srv.req("POST", f"/v0/b/{BUCKET}/o?name={q(name)}", json.dumps({"name": name}).encode(),
                    [alice, ("X-Goog-Upload-Protocol", "resumable"), ("X-Goog-Upload-Command", "start"),
                     (header, "1000"), ("Content-Type", "application/json")], what="v0 resumable start (declared 1000)")
        if r.status != 200 or not r.header("X-Goog-Upload-URL"):
            cr.fail(f"start of a declared 1000-byte session: {r.short()}")
            return None
        return path_of(r.header("X-Goog-Upload-URL"))

    def chunk(url, command, offset, size, method="POST", what=""):
        return srv.req(method, url, secrets.token_bytes(size),
                       [alice, ("X-Goog-Upload-Command", command), ("X-Goog-Upload-Offset", str(offset))],
                       what=what)

    def not_longer(name, what):
        there, r = exists(srv, name)
        if there:
            size = int((r.json() or {}).get("size", -1))
            cr.fail(f"{what}: an object of {size} bytes was committed")

    url = v0_start("users/alice/over-a")
    if url:
        what = "'upload, finalize' of 3000 bytes into a 1000-byte session"
        r = chunk(url, "upload, finalize", 0, 3000, what=what)
        expect_status(cr, r, (400, 413), what)
        not_longer("users/alice/over-a", what)
    url = v0_start("users/alice/over-b")
    if url:
        what = "'upload' of 1500 bytes into a 1000-byte session"
        r = chunk(url, "upload", 0, 1500, what=what)
        expect_status(cr, r, (400, 413), what)
        qr = srv.req("POST", url, b"", [alice, ("X-Goog-Upload-Command", "query")], what="query")
        got = qr.header("X-Goog-Upload-Size-Received")
        if got is not None and got.isdigit() and int(got) > 1000:
            cr.fail(f"{what}: the session now reports {got} bytes received")
        fin = srv.req("POST", url, b"", [alice, ("X-Goog-Upload-Command", "finalize"),
                                         ("X-Goog-Upload-Offset", got or "0")], what="finalize")
        not_longer("users/alice/over-b", what + f" (then finalize: {fin.status})")
    url = v0_start("users/alice/over-c", header="X-Goog-Upload-Content-Length")
    if url:
        what = "iOS-style PUT 'upload' 800 bytes, then 'upload, finalize' of 400 more into a 1000-byte session"
        r1 = chunk(url, "upload", 0, 800, method="PUT", what=what)
        cr.expect(r1.status == 200, f"{what}: the first 800 bytes answered {r1.short()}")
        r = chunk(url, "upload, finalize", 800, 400, method="PUT", what=what)
        expect_status(cr, r, (400, 413), what)
        not_longer("users/alice/over-c", what)
    g = srv.req("POST", f"/upload/storage/v1/b/{BUCKET}/o?uploadType=resumable&name=public%2Fover-d",
                b'{"name":"public/over-d"}', [srv.admin(), ("X-Upload-Content-Length", "1000"),
                                               ("Content-Type", "application/json")], what="GCS resumable start")
    if g.status == 200 and g.header("Location"):
        what = "GCS PUT bytes 0-2999/3000 into a session declared at 1000"
        r = srv.req("PUT", path_of(g.header("Location")), secrets.token_bytes(3000),
                    [srv.admin(), ("Content-Range", "bytes 0-2999/3000")], what=what)
        expect_status(cr, r, (400, 413), what)
        not_longer("public/over-d", what)
    else:
        cr.fail(f"GCS resumable start declared 1000: {g.short()}")
    new, grown, _ = blob_growth(before, srv.blobs())
    big = [s for s in list(new.values()) + [v for _, v in grown.values()] if s > 1000]
    if big:
        cr.fail(f"bytes past the declared length reached the disk: blob files of {sorted(big)} bytes")
    if cr.passed:
        cr.note("4 overruns refused; no blob past 1000 bytes")

    # 2d: sessions per caller.
    lim = flag_server(ctx, sr, "c2-sessions", ["--max-sessions-per-caller", "5"])
    if lim is None:
        # What the default does, for the record.
        accepted = 0
        for i in range(30):
            r = srv.req("POST", f"/v0/b/{BUCKET}/o?name={q(f'users/alice/s-{i}')}", b"",
                        [alice, ("X-Goog-Upload-Protocol", "resumable"), ("X-Goog-Upload-Command", "start")],
                        what="session flood (default)")
            accepted += r.status == 200
        sr.fail(f"default binary: {accepted} of 30 sessions opened by one caller were accepted (no 429)")
        return
    la = lim.auth("alice")
    statuses = []
    for i in range(6):
        before = lim.blobs()
        r = lim.req("POST", f"/v0/b/{BUCKET}/o?name={q(f'users/alice/s-{i}')}", b"",
                    [la, ("X-Goog-Upload-Protocol", "resumable"), ("X-Goog-Upload-Command", "start")],
                    what=f"session {i + 1}")
        statuses.append(r.status)
        if i < 5:
            expect_status(sr, r, 200, f"session {i + 1} of 5")
        else:
            expect_status(sr, r, 429, "the 6th session from one caller", json_error=True)
            g = describe_growth(before, lim.blobs())
            if g:
                sr.fail(f"the refused 6th session still left {g}")
    r = lim.req("POST", f"/v0/b/{BUCKET}/o?name={q('users/bob/s-0')}", b"",
                [lim.auth("bob"), ("X-Goog-Upload-Protocol", "resumable"), ("X-Goog-Upload-Command", "start")],
                what="another caller's session")
    expect_status(sr, r, 200, "another caller's first session while alice is at her limit")
    if sr.passed:
        sr.note(f"statuses {statuses}; bob still served")


# ---------------------------------------------------------------------------------------------------------------
# 3. Size caps.

def big_metadata(kind):
    if kind == "one 9000-byte value":
        return {"k": "v" * 9000}
    return {f"key{i:04d}": "v" * 92 for i in range(100)}   # 100 × (7 + 92) ≈ 9.9 KB


def check_3(ctx):
    srv = ctx.server("c3-caps")
    alice, admin = srv.auth("alice"), srv.admin()
    json_h = ("Content-Type", "application/json")
    mp = [("X-Goog-Upload-Protocol", "multipart"), ("Content-Type", f"multipart/related; boundary={BOUNDARY}")]
    a = ctx.row("3a", "custom metadata > 8 KiB → 400 (v0 PATCH, uploads, GCS PATCH); 4 KiB still accepted")
    b = ctx.row("3b", "object > --max-object-size 1 MiB → 413 on every upload path, nothing committed")
    c = ctx.row("3c", "JSON body > 1 MiB → 413")
    d = ctx.row("3d", "request head > 64 KiB → 431")

    srv.req("POST", f"/v0/b/{BUCKET}/o?name={q('users/alice/meta')}", b"x", [alice])
    srv.req("POST", f"/upload/storage/v1/b/{BUCKET}/o?uploadType=media&name={q('public/meta')}", b"x", [admin])
    r = srv.req("PATCH", v0_object("users/alice/meta"), json.dumps({"metadata": {"k": "v" * 4000}}).encode(),
                [alice, json_h], what="4 KiB metadata")
    expect_status(a, r, 200, "v0 PATCH with 4 KiB of custom metadata (control)")
    gen_v0 = srv.req("GET", gcs_object("users/alice/meta"), headers=[admin]).json() or {}
    gen_gcs = srv.req("GET", gcs_object("public/meta"), headers=[admin]).json() or {}
    for kind in ("one 9000-byte value", "100 keys of 99 bytes"):
        meta = big_metadata(kind)
        r = srv.req("PATCH", v0_object("users/alice/meta"), json.dumps({"metadata": meta}).encode(), [alice, json_h],
                    what="v0 PATCH big metadata")
        expect_status(a, r, 400, f"v0 PATCH, custom metadata of {kind}", json_error=True)
        r = srv.req("PATCH", gcs_object("public/meta"), json.dumps({"metadata": meta}).encode(), [admin, json_h],
                    what="GCS PATCH big metadata")
        expect_status(a, r, 400, f"GCS PATCH, custom metadata of {kind}", json_error=True)
        name = f"users/alice/meta-mp-{len(kind)}"
        r = srv.req("POST", f"/v0/b/{BUCKET}/o?name={q(name)}", multipart_body({"name": name, "metadata": meta}, b"d"),
                    [alice] + mp, what="v0 multipart big metadata")
        expect_status(a, r, 400, f"v0 multipart upload, custom metadata of {kind}", json_error=True)
        expect_absent(a, srv, name, f"v0 multipart upload, custom metadata of {kind}")
        r = srv.req("POST", f"/v0/b/{BUCKET}/o?name={q(name)}", json.dumps({"name": name, "metadata": meta}).encode(),
                    [alice, json_h, ("X-Goog-Upload-Protocol", "resumable"), ("X-Goog-Upload-Command", "start")],
                    what="v0 resumable start big metadata")
        expect_status(a, r, 400, f"v0 resumable start, custom metadata of {kind}", json_error=True)
        gname = f"public/meta-gmp-{len(kind)}"
        r = srv.req("POST", f"/upload/storage/v1/b/{BUCKET}/o?uploadType=multipart",
                    multipart_body({"name": gname, "metadata": meta}, b"d"), [admin, mp[1]],
                    what="GCS multipart big metadata")
        expect_status(a, r, 400, f"GCS multipart upload, custom metadata of {kind}", json_error=True)
        expect_absent(a, srv, gname, f"GCS multipart upload, custom metadata of {kind}")
    now_v0 = srv.req("GET", gcs_object("users/alice/meta"), headers=[admin]).json() or {}
    now_gcs = srv.req("GET", gcs_object("public/meta"), headers=[admin]).json() or {}
    a.expect(now_v0.get("metageneration") == gen_v0.get("metageneration"),
             f"the v0 PATCH target changed: metageneration {gen_v0.get('metageneration')}→{now_v0.get('metageneration')}")
    a.expect(now_gcs.get("metageneration") == gen_gcs.get("metageneration"),
             f"the GCS PATCH target changed: metageneration {gen_gcs.get('metageneration')}→{now_gcs.get('metageneration')}")

    # 3c: JSON bodies past 1 MiB.
    huge = json.dumps({"metadata": {"k": "v" * (1536 * 1024)}}).encode()
    for what, method, target, extra in [
            ("v0 PATCH", "PATCH", v0_object("users/alice/meta"), [alice, json_h]),
            ("GCS PATCH", "PATCH", gcs_object("public/meta"), [admin, json_h]),
            ("v0 resumable start", "POST", f"/v0/b/{BUCKET}/o?name={q('users/alice/json-big')}",
             [alice, json_h, ("X-Goog-Upload-Protocol", "resumable"), ("X-Goog-Upload-Command", "start")]),
            ("GCS resumable start", "POST", f"/upload/storage/v1/b/{BUCKET}/o?uploadType=resumable&name=public%2Fjb",
             [admin, json_h]),
            ("GCS copyTo body", "POST", gcs_object("public/meta") + f"/copyTo/b/{BUCKET}/o/public%2Fjb2",
             [admin, json_h])]:
        r = srv.req(method, target, huge, extra, what=f"1.5 MiB JSON {what}")
        expect_status(c, r, 413, f"{what} with a 1.5 MiB JSON body")
    r = srv.req("POST", f"/v0/b/{BUCKET}/o?name={q('users/alice/json-mp')}", multipart_body(huge, b"d"),
                [alice] + mp, what="1.5 MiB multipart metadata")
    expect_status(c, r, 413, "v0 multipart with a 1.5 MiB metadata part")
    expect_absent(c, srv, "users/alice/json-mp", "v0 multipart with a 1.5 MiB metadata part")
    if c.passed:
        c.note("6 oversized JSON bodies refused with 413")

    # 3d: heads past 64 KiB.
    for what, raw in [
            ("one 70 KiB header", build_request("GET", "/", [("X-Big", "a" * (70 * 1024))], port=srv.port)),
            ("3000 headers (90 KB)", build_request("GET", "/", [(f"X-H{i}", "b" * 22) for i in range(3000)],
                                                   port=srv.port)),
            ("a 70 KiB request target", build_request("GET", "/?" + "c" * (70 * 1024), port=srv.port))]:
        conn = srv.conn()
        conn.send(raw)
        done, _, _ = conn.responses(1, timeout=5)
        conn.close()
        r = done[0] if done else L.NoResponse("closed without an answer" if conn.closed else "no answer")
        L.record_status(r.status, what)
        expect_status(d, r, (431, 414) if "target" in what else 431, what)
        ok = srv.req("GET", "/", timeout=3)
        d.expect(ok.status == 200, f"after {what}, GET / answered {ok.short()}")
    if d.passed:
        d.note("3 oversized heads refused")

    # 3b: the object size cap.
    cap = flag_server(ctx, b, "c3-object-size", ["--max-object-size", "1048576"])
    if cap is None:
        r = srv.req("POST", f"/v0/b/{BUCKET}/o?name={q('users/alice/big')}", secrets.token_bytes(3 << 20), [alice],
                    what="3 MiB media (default)")
        b.note(f"default binary: a 3 MiB v0 media upload answered {r.status}")
        return
    ca, cadm = cap.auth("alice"), cap.admin()
    mib = 1 << 20
    r = cap.req("POST", f"/v0/b/{BUCKET}/o?name={q('users/alice/exact')}", secrets.token_bytes(mib), [ca],
                what="1 MiB media")
    expect_status(b, r, 200, "v0 media of exactly 1 MiB (control)")
    over = secrets.token_bytes(mib + 1)
    cases = []
    name = "users/alice/over-media"
    cases.append(("v0 media of 1 MiB + 1", name, cap.req("POST", f"/v0/b/{BUCKET}/o?name={q(name)}", over, [ca])))
    name = "users/alice/over-mp"
    cases.append(("v0 multipart of 1 MiB + 1", name, cap.req("POST", f"/v0/b/{BUCKET}/o?name={q(name)}",
                                                                multipart_body({"name": name}, over), [ca] + mp)))
    name = "users/alice/over-chunked"
    chunked_body = b"".join(b"%x\r\n" % len(over[i:i + 65536]) + over[i:i + 65536] + b"\r\n"
                            for i in range(0, len(over), 65536)) + b"0\r\n\r\n"
    cases.append(("v0 media of 1 MiB + 1, chunked", name,
                  cap.req("POST", f"/v0/b/{BUCKET}/o?name={q(name)}", chunked_body,
                          [ca, ("Transfer-Encoding", "chunked")])))
    name = "users/alice/over-rs-declared"
    cases.append(("v0 resumable start declaring 2 MiB", name,
                  cap.req("POST", f"/v0/b/{BUCKET}/o?name={q(name)}", b"",
                          [ca, ("X-Goog-Upload-Protocol", "resumable"), ("X-Goog-Upload-Command", "start"),
                           ("X-Goog-Upload-Header-Content-Length", str(2 * mib))])))
    name = "users/alice/over-rs"
    st = cap.req("POST", f"/v0/b/{BUCKET}/o?name={q(name)}", b"",
                 [ca, ("X-Goog-Upload-Protocol", "resumable"), ("X-Goog-Upload-Command", "start")])
    if st.status == 200 and st.header("X-Goog-Upload-URL"):
        url = path_of(st.header("X-Goog-Upload-URL"))
        r1 = cap.req("POST", url, over[:512 * 1024], [ca, ("X-Goog-Upload-Command", "upload"),
                                                        ("X-Goog-Upload-Offset", "0")])
        b.expect(r1.status == 200, f"v0 resumable: the first 512 KiB answered {r1.short()}")
        cases.append(("v0 resumable chunks passing 1 MiB", name,
                      cap.req("POST", url, over[512 * 1024:] + b"x" * 1000,
                              [ca, ("X-Goog-Upload-Command", "upload, finalize"),
                               ("X-Goog-Upload-Offset", str(512 * 1024))])))
    else:
        b.fail(f"v0 resumable start without a declared length: {st.short()}")
    gm = ("Content-Type", f"multipart/related; boundary={BOUNDARY}")
    name = "public/over-gmedia"
    cases.append(("GCS media of 1 MiB + 1", name,
                  cap.req("POST", f"/upload/storage/v1/b/{BUCKET}/o?uploadType=media&name={q(name)}", over, [cadm])))
    name = "public/over-gmp"
    cases.append(("GCS multipart of 1 MiB + 1", name,
                  cap.req("POST", f"/upload/storage/v1/b/{BUCKET}/o?uploadType=multipart",
                          multipart_body({"name": name}, over), [cadm, gm])))
    name = "public/over-grs-declared"
    cases.append(("GCS resumable start declaring 2 MiB", name,
                  cap.req("POST", f"/upload/storage/v1/b/{BUCKET}/o?uploadType=resumable&name={q(name)}",
                          json.dumps({"name": name}).encode(),
                          [cadm, ("X-Upload-Content-Length", str(2 * mib)), ("Content-Type", "application/json")])))
    name = "public/over-grs"
    st = cap.req("POST", f"/upload/storage/v1/b/{BUCKET}/o?uploadType=resumable&name={q(name)}",
                 json.dumps({"name": name}).encode(), [cadm, ("Content-Type", "application/json")])
    if st.status == 200 and st.header("Location"):
        url = path_of(st.header("Location"))
        half = 512 * 1024
        r1 = cap.req("PUT", url, over[:half], [cadm, ("Content-Range", f"bytes 0-{half - 1}/*")])
        b.expect(r1.status == 308, f"GCS resumable: the first 512 KiB answered {r1.short()}")
        cases.append(("GCS resumable chunks passing 1 MiB", name,
                      cap.req("PUT", url, over[half:], [cadm, ("Content-Range", f"bytes {half}-{mib}/{mib + 1}")])))
    else:
        b.fail(f"GCS resumable start without a declared length: {st.short()}")
    for what, name, r in cases:
        L.record_status(r.status, what)
        expect_status(b, r, 413, what)
        there, _ = exists(cap, name)
        b.expect(not there, f"{what}: the object was committed")
    if b.passed:
        b.note(f"{len(cases)} oversized uploads refused with 413; exactly 1 MiB accepted")


# ---------------------------------------------------------------------------------------------------------------
# 4. Slowloris.

def slowloris(srv, row, count=16, seconds=7.0, bound=None):
    """`count` connections trickle a head one byte a second for up to `seconds`, while a normal client makes a
    request every 0.25 s on a new connection. Returns (close times of the slow connections, normal latencies)."""
    head = b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: " + b"s" * 200
    slow = []
    for i in range(count):
        s = socket.socket()
        s.bind((f"127.0.0.{3 + i % 4}", 0))
        s.settimeout(2)
        try:
            s.connect(("127.0.0.1", srv.port))
        except OSError as e:
            row.fail(f"slow connection {i} could not connect: {e}")
            continue
        s.setblocking(False)
        slow.append({"sock": s, "sent": 0, "start": time.time(), "closed": None, "got": b""})
    latencies, failures = [], []
    stop = threading.Event()

    def normal():
        while not stop.is_set():
            r = srv.req("GET", "/", timeout=5, source="127.0.0.1", what="normal client during slowloris")
            latencies.append(r.elapsed)
            if r.status != 200:
                failures.append(r.short())
            stop.wait(0.25)

    t = threading.Thread(target=normal, daemon=True)
    t.start()
    begin = time.time()
    next_byte = begin
    while time.time() - begin < seconds and any(c["closed"] is None for c in slow):
        now = time.time()
        for c in slow:
            if c["closed"] is not None:
                continue
            try:
                chunk = c["sock"].recv(4096)
                if chunk == b"":
                    c["closed"] = now - c["start"]
                else:
                    c["got"] += chunk
            except BlockingIOError:
                pass
            except OSError:
                c["closed"] = now - c["start"]
        if now >= next_byte:
            for c in slow:
                if c["closed"] is None and c["sent"] < len(head):
                    try:
                        c["sock"].send(head[c["sent"]:c["sent"] + 1])
                        c["sent"] += 1
                    except OSError:
                        c["closed"] = now - c["start"]
            next_byte += 1.0
        time.sleep(0.05)
    stop.set()
    t.join(timeout=10)
    for c in slow:
        status = L.parse_all(c["got"], True)[0]
        for r in status:
            L.record_status(r.status, "slowloris answer")
        c["sock"].close()
    return slow, latencies, failures


def check_4(ctx):
    row = ctx.row("4", "slowloris: a head trickled 1 byte/s is closed within --head-timeout 2; others served promptly")
    srv = flag_server(ctx, row, "c4-slowloris", ["--head-timeout", "2"])
    limited = srv is not None
    if srv is None:
        srv = ctx.server("c4-slowloris-default")
    slow, latencies, failures = slowloris(srv, row, seconds=7.0 if limited else 5.0)
    closed = [c["closed"] for c in slow if c["closed"] is not None]
    open_left = len(slow) - len(closed)
    worst = max(latencies) if latencies else None
    if limited:
        late = [round(x, 1) for x in closed if x > 4.5]
        row.expect(open_left == 0, f"{open_left} of {len(slow)} trickling connections still open after 7 s")
        row.expect(not late, f"trickling connections closed only after {late} s (head timeout 2 s)")
    else:
        row.note(f"default binary: {open_left} of {len(slow)} trickling connections still open after 5 s "
                 f"(the idle timeout, 60 s, is what bounds a head)")
        row.fail(row.notes[-1])
    row.expect(not failures, f"normal client failed during the trickle: {failures[:3]}")
    row.expect(worst is not None and worst < 1.0,
               f"normal client's slowest request took {worst and round(worst, 2)} s (bound 1 s)")
    row.note(f"{len(slow)} trickling connections, "
             + (f"closed after {min(closed):.1f}–{max(closed):.1f} s; " if closed else "none closed; ")
             + f"{len(latencies)} normal requests, slowest {worst and round(worst * 1000)} ms")


# ---------------------------------------------------------------------------------------------------------------
# 5. Connection floods.

def flood(srv, keepalive=100, silent=40):
    """Opens `keepalive` connections that each complete one request and stay open, and `silent` that never send
    anything, from many loopback addresses. Returns the open sockets and how many keep-alive requests were served."""
    socks = []
    served = 0
    for i in range(keepalive):
        try:
            c = srv.conn(source=f"127.0.0.{10 + i // 2}", timeout=3)
        except OSError:
            continue
        c.send(build_request("GET", "/", port=srv.port))
        socks.append(c)
    for c in socks:
        done, _, _ = c.responses(1, timeout=3)
        served += bool(done and done[0].status == 200)
        for r in done:
            L.record_status(r.status, "flood keep-alive request")
    for i in range(silent):
        try:
            socks.append(srv.conn(source=f"127.0.0.{70 + i // 2}", timeout=3))
        except OSError:
            pass
    return socks, served


def check_5(ctx):
    a = ctx.row("5a", "connection flood past --max-connections 64: a new client is still served")
    b = ctx.row("5b", "--max-connections-per-client 8: the 9th from 127.0.0.1 refused, 127.0.0.2 still served")
    srv = flag_server(ctx, a, "c5-flood", ["--max-connections", "64"])
    limited = srv is not None
    if srv is None:
        srv = ctx.server("c5-flood-default")
    socks, served = flood(srv)
    time.sleep(0.2)
    probes = [srv.req("GET", "/", timeout=5, source="127.0.0.200", what="new client after the flood")
              for _ in range(5)]
    bad = [p.short() for p in probes if p.status != 200]
    slowest = max(p.elapsed for p in probes)
    for c in socks:
        c.close()
    text = (f"{served}/100 keep-alive flood requests served, 40 silent connections; new client: "
            f"{5 - len(bad)}/5 served, slowest {round(slowest * 1000)} ms")
    if limited:
        a.expect(not bad, f"new client after the flood: {bad[:2]}")
        a.expect(slowest < 3.0, f"new client waited {slowest:.1f} s")
        a.note(text)
    else:
        a.note("default binary (limit 1024): " + text)

    srv2 = flag_server(ctx, b, "c5-per-client", ["--max-connections-per-client", "8"])
    if srv2 is None:
        busy = [srv.conn() for _ in range(8)]
        r = srv.req("GET", "/", timeout=3, what="9th connection (default)")
        b.note(f"default binary: with 8 connections open from 127.0.0.1 a 9th was answered {r.status}")
        for c in busy:
            c.close()
        return
    alice = srv2.auth("alice")
    busy = []
    for i in range(8):
        c = srv2.conn()
        # Busy, not idle: an upload whose body is still to come.
        c.send(build_request("POST", f"/v0/b/{BUCKET}/o?name={q(f'users/alice/busy-{i}')}", [alice,
                             ("Content-Length", "100000")], b"", port=srv2.port, length=False) + b"x" * 10)
        busy.append(c)
    time.sleep(0.3)
    ninth = srv2.conn()
    ninth.send(build_request("GET", "/", port=srv2.port))
    done, _, _ = ninth.responses(1, timeout=3)
    closed = ninth.wait_closed(0.5)
    ninth.close()
    for r in done:
        L.record_status(r.status, "9th connection") if r.status != 503 else None
    if done and done[0].status < 400:
        b.fail(f"the 9th concurrent connection from 127.0.0.1 was served: {done[0].short()}")
    elif not done and not closed:
        b.fail("the 9th concurrent connection from 127.0.0.1 was neither answered nor closed within 3.5 s")
    else:
        b.note("9th: " + (f"answered {done[0].status}" if done else "closed without an answer"))
    other = srv2.req("GET", "/", timeout=3, source="127.0.0.2", what="127.0.0.2 while 127.0.0.1 is at its limit")
    b.expect(other.status == 200 and other.elapsed < 1.0,
             f"127.0.0.2 while 127.0.0.1 holds 8: {other.short()} in {other.elapsed:.2f} s")
    for c in busy:
        c.close()
    time.sleep(0.3)
    again = srv2.req("GET", "/", timeout=3, what="127.0.0.1 after its connections closed")
    b.expect(again.status == 200, f"127.0.0.1 after its 8 connections closed: {again.short()}")
    for i in range(8):
        there, _ = exists(srv2, f"users/alice/busy-{i}")
        b.expect(not there, f"the aborted upload busy-{i} was committed")


# ---------------------------------------------------------------------------------------------------------------
# 6. Smuggling and framing.

SMUGGLED = b"GET /v0/b/" + BUCKET.encode() + b"/o/public%2Fsmuggled-marker HTTP/1.1\r\nHost: x\r\n\r\n"


def raw_case(srv, raw, expect=1, linger=0.5, pieces=1 << 16):
    c = srv.conn()
    try:
        c.send(raw, pieces=pieces)
        c.responses(expect, timeout=5, linger=linger)
        c.wait_closed(1.0)
        done, _, rest = c.responses(expect, timeout=0)
        # Bytes after the answers that do not parse as a response are garbage, not another response.
        garbage = b"".join(r.raw_head + r.body for r in done if r.status is None) + rest
        return [r for r in done if r.status is not None], c.closed, garbage
    finally:
        c.close()


def smuggled(done):
    return any(b"smuggled-marker" in r.body for r in done)


def check_6(ctx):
    srv = ctx.server("c6-framing")
    alice, bob = srv.auth("alice"), srv.auth("bob")
    a = ctx.row("6a", "framing and header ambiguities (CL+TE, CL×2, TE on 1.0, Host, obs-fold, CR, Authorization×2) → 400")
    b = ctx.row("6b", "bad chunked framing (size, huge size, extension and trailer floods) → 400 or closed, no 5xx")
    c = ctx.row("6c", "no desync: body bytes are never served as a request; a fresh connection works after each case")
    p = srv.port
    up = f"/v0/b/{BUCKET}/o?name={q('users/alice/smug')}"
    A = ("Authorization", alice[1])

    def head(lines, version="HTTP/1.1", target=up, method="POST"):
        return (f"{method} {target} {version}\r\n".encode() + b"".join(ln + b"\r\n" for ln in lines) + b"\r\n")

    host = b"Host: 127.0.0.1:%d" % p
    auth = b"Authorization: " + A[1].encode()
    cases = [
        ("Content-Length + Transfer-Encoding", head([host, auth, b"Content-Length: 5", b"Transfer-Encoding: chunked"])
         + b"0\r\n\r\n" + SMUGGLED),
        ("Transfer-Encoding + Content-Length", head([host, auth, b"Transfer-Encoding: chunked", b"Content-Length: 40"])
         + b"0\r\n\r\n" + SMUGGLED),
        ("two different Content-Length", head([host, auth, b"Content-Length: 5", b"Content-Length: 6"])
         + b"hello" + SMUGGLED),
        ("Transfer-Encoding on HTTP/1.0", head([host, auth, b"Transfer-Encoding: chunked"], version="HTTP/1.0")
         + b"5\r\nhello\r\n0\r\n\r\n" + SMUGGLED),
        ("HTTP/1.1 without Host", head([], method="GET", target="/")),
        ("two Host headers", head([host, b"Host: evil.example"], method="GET", target="/")),
        ("obs-fold header line", head([host, b"X-A: a", b" folded"], method="GET", target="/")),
        ("bare CR inside a header value", head([host, b"X-A: a\rb"], method="GET", target="/")),
        ("two Authorization headers", head([host, auth, b"Authorization: " + bob[1].encode()], method="GET",
                                           target=v0_object("users/alice/smug"))),
        ("Content-Length with a sign", head([host, auth, b"Content-Length: +5"]) + b"hello"),
        ("whitespace before the colon", head([host, auth, b"Transfer-Encoding : chunked", b"Content-Length: 5"])
         + b"hello"),
    ]
    for what, raw in cases:
        done, closed, rest = raw_case(srv, raw)
        for r in done:
            L.record_status(r.status, what)
        if smuggled(done) or len(done) > 1:
            c.fail(f"{what}: {len(done)} responses — the body was read as a request ({[r.status for r in done]})")
        if rest:
            c.fail(f"{what}: after the answer, {len(rest)} bytes that are not a response: {rest[:60]!r}")
        if not done:
            a.fail(f"{what}: no answer ({'closed' if closed else 'left open'})")
        elif done[0].status != 400:
            a.fail(f"{what}: answered {done[0].short()}")
        fresh = srv.req("GET", "/", timeout=3, what="fresh connection after a framing case")
        c.expect(fresh.status == 200, f"after {what}: a fresh connection got {fresh.short()}")

    chunk_head = head([host, auth, b"Transfer-Encoding: chunked"], target=up + "-chunk")
    chunk_cases = [
        ("invalid chunk size", chunk_head + b"zz\r\nhello\r\n0\r\n\r\n" + SMUGGLED),
        ("negative chunk size", chunk_head + b"-5\r\nhello\r\n0\r\n\r\n" + SMUGGLED),
        ("huge chunk size ffffffffffffffffff", chunk_head + b"ffffffffffffffffff\r\n" + b"a" * 1000 + SMUGGLED),
        ("chunk extension flood (200 KB)", chunk_head + b"5;" + b"e" * 200_000 + b"\r\nhello\r\n0\r\n\r\n" + SMUGGLED),
        ("many chunk extensions (200 KB)", chunk_head + b"5" + b";a=b" * 50_000 + b"\r\nhello\r\n0\r\n\r\n"),
        ("trailer flood (200 KB)", chunk_head + b"5\r\nhello\r\n0\r\n" + (b"X-T: " + b"t" * 995 + b"\r\n") * 200
         + b"\r\n" + SMUGGLED),
        ("chunk data longer than its size", chunk_head + b"3\r\nhello\r\n0\r\n\r\n" + SMUGGLED),
    ]
    for what, raw in chunk_cases:
        done, closed, rest = raw_case(srv, raw)
        for r in done:
            L.record_status(r.status, what)
        if smuggled(done) or len(done) > 1:
            c.fail(f"{what}: {len(done)} responses — bytes after the body were read as a request "
                   f"({[r.status for r in done]})")
        if rest:
            c.fail(f"{what}: after the answer, {len(rest)} bytes that are not a response: {rest[:60]!r}")
        if done and done[0].status != 400:
            b.fail(f"{what}: answered {done[0].short()}")
        elif not done and not closed:
            b.fail(f"{what}: neither answered nor closed")
        fresh = srv.req("GET", "/", timeout=3, what="fresh connection after a chunk case")
        c.expect(fresh.status == 200, f"after {what}: a fresh connection got {fresh.short()}")
    there, r = exists(srv, "users/alice/smug-chunk")
    if there:
        b.fail(f"a refused chunked body was committed ({(r.json() or {}).get('size')} bytes)")

    # Keep-alive: a body that looks like a request stays a body.
    probe = build_request("GET", "/", [("Connection", "close")], port=p)
    name = "users/alice/body-is-a-request"
    ka = [
        ("a media upload whose body is a request", 2,
         build_request("POST", f"/v0/b/{BUCKET}/o?name={q(name)}", [A], SMUGGLED, port=p) + probe, name),
        ("a chunked upload whose body is a request", 2,
         build_request("POST", f"/v0/b/{BUCKET}/o?name={q(name + '-chunked')}", [A, ("Transfer-Encoding", "chunked")],
                       b"%x\r\n" % len(SMUGGLED) + SMUGGLED + b"\r\n0\r\n\r\n", port=p) + probe, name + "-chunked"),
        ("a refused (anonymous) upload whose body is a request", 2,
         build_request("POST", f"/v0/b/{BUCKET}/o?name={q('users/alice/anon')}", [], SMUGGLED, port=p) + probe, None),
        ("a refused upload with Expect: 100-continue, body sent anyway", 2,
         build_request("POST", f"/v0/b/{BUCKET}/o?name={q('users/alice/anon2')}", [("Expect", "100-continue")],
                       SMUGGLED, port=p) + probe, None),
    ]
    for what, want, raw, stored in ka:
        done, closed, rest = raw_case(srv, raw, expect=want, linger=0.3)
        for r in done:
            L.record_status(r.status, what)
        statuses = [r.status for r in done]
        if rest:
            c.fail(f"{what}: after the answers, {len(rest)} bytes that are not a response: {rest[:60]!r}")
        if smuggled(done) or len(done) > want:
            c.fail(f"{what}: {len(done)} responses {statuses} — the body was served as a request")
        elif stored and statuses != [200, 200]:
            c.fail(f"{what}: expected [200, 200], got {statuses}")
        elif not stored and (not done or done[0].status != 403 or (len(done) == 2 and done[1].status != 200)):
            c.fail(f"{what}: expected 403 then (optionally) the GET / answer, got {statuses}")
        if stored:
            d = srv.req("GET", v0_object(stored, "alt=media"), headers=[srv.admin()])
            c.expect(d.body == SMUGGLED, f"{what}: the stored bytes differ from the body ({d.short()})")
    if a.passed:
        a.note(f"{len(cases)} ambiguous heads refused with 400")
    if b.passed:
        b.note(f"{len(chunk_cases)} chunk attacks refused")
    if c.passed:
        carried = sum(SMUGGLED in raw for _, raw in cases + chunk_cases)
        c.note(f"{carried} framing cases carried a smuggled request, none answered; "
               f"{len(ka)} keep-alive bodies that look like requests stayed bodies")


# ---------------------------------------------------------------------------------------------------------------
# 7. Malformed input.

BAD_ENCODINGS = [("%ZZ", "bad hex"), ("%4", "truncated escape"), ("%", "lone %"), ("%FF", "0xFF byte"),
                 ("%C0%AF", "overlong '/'"), ("%ED%A0%80", "UTF-16 surrogate"), ("%E2%82", "truncated sequence"),
                 ("%F4%90%80%80", "beyond U+10FFFF"), ("%00", "NUL"), ("%0D%0AX-Injected:%20yes", "CR LF")]


def check_7(ctx):
    srv = ctx.server("c7-malformed")
    alice = srv.auth("alice")
    a = ctx.row("7a", "invalid percent-encoding / UTF-8 in the path and in ?name= → 400, nothing stored")
    b = ctx.row("7b", "Range edge cases: 20-digit and past-the-end starts → 416; 20-digit end → 206 of everything")
    before = srv.blobs()
    count = 0
    prefix = "users%2Falice%2F"
    for enc, what in BAD_ENCODINGS:
        for where, method, target, body in [
                ("path upload", "POST", f"/v0/b/{BUCKET}/o/{prefix}bad{enc}", b"data"),
                ("?name= upload", "POST", f"/v0/b/{BUCKET}/o?name={prefix}bad{enc}", b"data"),
                ("path metadata GET", "GET", f"/v0/b/{BUCKET}/o/{prefix}bad{enc}", b""),
                ("GCS path GET", "GET", f"/storage/v1/b/{BUCKET}/o/bad{enc}", b""),
                ("GCS ?name= upload", "POST", f"/upload/storage/v1/b/{BUCKET}/o?uploadType=media&name=bad{enc}",
                 b"data")]:
            r = srv.req(method, target, body, [srv.admin() if "GCS" in where else alice], what=f"{where} {what}")
            count += 1
            expect_status(a, r, 400, f"{where} with {what} ({enc})")
    for raw_name, what in [(b"\xff\xfe", "raw 0xFF 0xFE bytes"), (b"\xc3\x28", "raw invalid 2-byte sequence")]:
        for target in [b"/v0/b/" + BUCKET.encode() + b"/o/" + prefix.encode() + raw_name,
                       b"/v0/b/" + BUCKET.encode() + b"/o?name=" + prefix.encode() + raw_name]:
            done, _, _ = raw_case(srv, build_request("POST", target, [alice, ("Connection", "close")], b"data",
                                                     port=srv.port), linger=0)
            r = done[0] if done else L.NoResponse("no answer")
            L.record_status(r.status, what)
            count += 1
            expect_status(a, r, 400, f"upload to {target[-30:]!r} ({what})")
    g = describe_growth(before, srv.blobs())
    if g:
        a.fail(f"malformed names left blob bytes: {g}")
    listing = srv.req("GET", f"/v0/b/{BUCKET}/o?prefix=users%2Falice%2F", headers=[alice]).json() or {}
    stored = [i.get("name") for i in listing.get("items", [])]
    a.expect(not stored, f"objects stored under malformed names: {stored[:5]!r}")
    if a.passed:
        a.note(f"{count} requests refused with 400; nothing stored")

    data = secrets.token_bytes(100)
    r = srv.req("POST", f"/upload/storage/v1/b/{BUCKET}/o?uploadType=media&name=public%2Frange.bin", data,
                [srv.admin()])
    for api, target in [("v0", v0_object("public/range.bin", "alt=media")),
                        ("GCS", f"/download/storage/v1/b/{BUCKET}/o/public%2Frange.bin?alt=media")]:
        for rng, want in [("bytes=99999999999999999999-", 416), ("bytes=999999999-", 416),
                          ("bytes=0-99999999999999999999", 206)]:
            r = srv.req("GET", target, headers=[srv.admin(), ("Range", rng)], what=f"{api} Range {rng}")
            if r.status != want:
                b.fail(f"{api} Range: {rng} on a 100-byte object: expected {want}, got {r.status} "
                       f"(Content-Range {r.header('Content-Range')!r}, {len(r.body)} bytes)")
            elif want == 416 and r.header("Content-Range") != "bytes */100":
                b.fail(f"{api} Range: {rng}: 416 with Content-Range {r.header('Content-Range')!r}")
            elif want == 206 and (r.body != data or r.header("Content-Range") != "bytes 0-99/100"):
                b.fail(f"{api} Range: {rng}: 206 with Content-Range {r.header('Content-Range')!r}, "
                       f"{len(r.body)} bytes, equal={r.body == data}")
    if b.passed:
        b.note("v0 and GCS downloads answer 416, 416, 206")


# ---------------------------------------------------------------------------------------------------------------
# 8. JSON bombs.

def bombs():
    yield "100k unclosed [", b"[" * 100_000, (400,)
    yield "100k nested arrays", b"[" * 100_000 + b"]" * 100_000, (400,)
    yield "50k nested objects", b'{"a":' * 50_000 + b"1" + b"}" * 50_000, (400,)
    yield "100k nested arrays in metadata", b'{"metadata":{"k":' + b"[" * 100_000 + b"]" * 100_000 + b"}}", (400,)
    yield "a 900 KiB contentType", json.dumps({"contentType": "a/" + "b" * (900 * 1024)}).encode(), (400,)
    yield "a 2 MiB string", json.dumps({"contentType": "a/" + "b" * (2 << 20)}).encode(), (413,)
    yield "a 300k-digit number", b'{"metadata":{"n":' + b"9" * 300_000 + b"}}", (400,)
    # Not a bomb: numbers are kept as their text (never converted to a double), and a read-only key such as `size`
    # is ignored, as GCS ignores it, so `{"size":1e999999}` is accepted. Left out on purpose.
    yield "duplicate keys", b'{"contentType":"a/b","contentType":"c/d"}', (400,)
    yield "duplicate metadata keys", b'{"metadata":{"k":"1","k":"2"}}', (400,)
    yield "50k metadata keys", json.dumps({"metadata": {f"k{i}": "" for i in range(50_000)}}).encode(), (400,)
    yield "invalid UTF-8 in a string", b'{"contentType":"a/\xff\xfe"}', (400,)
    yield "lone surrogate escape", b'{"contentType":"a/\\ud800"}', (400,)


def check_8(ctx):
    srv = ctx.server("c8-json")
    alice, admin = srv.auth("alice"), srv.admin()
    row = ctx.row("8", "JSON bombs in PATCH bodies and upload metadata → 400/413 within 2 s; nothing changes")
    json_h = ("Content-Type", "application/json")
    srv.req("POST", f"/v0/b/{BUCKET}/o?name={q('users/alice/j')}", b"x", [alice])
    srv.req("POST", f"/upload/storage/v1/b/{BUCKET}/o?uploadType=media&name={q('public/j')}", b"x", [admin])
    before = {n: srv.req("GET", gcs_object(n), headers=[admin]).json() or {} for n in ("users/alice/j", "public/j")}
    mp = ("Content-Type", f"multipart/related; boundary={BOUNDARY}")
    targets = [
        ("v0 PATCH", lambda body: ("PATCH", v0_object("users/alice/j"), body, [alice, json_h]), None),
        ("GCS PATCH", lambda body: ("PATCH", gcs_object("public/j"), body, [admin, json_h]), None),
        ("v0 multipart metadata", lambda body: ("POST", f"/v0/b/{BUCKET}/o?name={q('users/alice/jm')}",
                                                multipart_body(body, b"d"),
                                                [alice, ("X-Goog-Upload-Protocol", "multipart"), mp]),
         "users/alice/jm"),
        ("v0 resumable start", lambda body: ("POST", f"/v0/b/{BUCKET}/o?name={q('users/alice/jr')}", body,
                                             [alice, json_h, ("X-Goog-Upload-Protocol", "resumable"),
                                              ("X-Goog-Upload-Command", "start")]), None),
        ("GCS multipart metadata", lambda body: ("POST", f"/upload/storage/v1/b/{BUCKET}/o?uploadType=multipart"
                                                 "&name=public%2Fjgm", multipart_body(body, b"d"), [admin, mp]),
         "public/jgm"),
        ("GCS resumable start", lambda body: ("POST", f"/upload/storage/v1/b/{BUCKET}/o?uploadType=resumable"
                                              "&name=public%2Fjgr", body, [admin, json_h]), None),
    ]
    slowest = 0.0
    n = 0
    summary = {}
    for bomb, body, want in bombs():
        for where, make, stored in targets:
            method, target, payload, headers = make(body)
            allowed = want + ((413,) if len(payload) > (1 << 20) else ())
            r = srv.req(method, target, payload, headers, timeout=10, what=f"{bomb} → {where}")
            summary.setdefault(bomb, []).append(r.status)
            n += 1
            slowest = max(slowest, r.elapsed)
            expect_status(row, r, allowed, f"{where} with {bomb}")
            if r.elapsed > 2.0:
                row.fail(f"{where} with {bomb}: took {r.elapsed:.1f} s")
            if stored:
                there, _ = exists(srv, stored)
                if there:
                    row.fail(f"{where} with {bomb}: the upload was committed")
                    srv.req("DELETE", gcs_object(stored), headers=[admin])
        ping = srv.req("GET", "/", timeout=3, what="GET / after a JSON bomb")
        row.expect(ping.status == 200 and ping.elapsed < 1.0, f"after {bomb}: GET / {ping.short()} in {ping.elapsed:.2f} s")
    for name, was in before.items():
        now = srv.req("GET", gcs_object(name), headers=[admin]).json() or {}
        changed = [k for k in ("metageneration", "contentType", "cacheControl", "metadata") if now.get(k) != was.get(k)]
        row.expect(not changed, f"{name} changed under the bombs: " + ", ".join(
            f"{k} {str(was.get(k))[:40]!r}→{str(now.get(k))[:40]!r}" for k in changed))
    row.note(f"{n} bombs, slowest answer {slowest * 1000:.0f} ms")
    accepted = [f"{bomb} ({statuses.count(200)}/{len(statuses)})" for bomb, statuses in summary.items()
                if 200 in statuses]
    if accepted:
        row.note("accepted with 200: " + ", ".join(accepted))


# ---------------------------------------------------------------------------------------------------------------
# 9. Regex and rules bombs.

BOMB_RULES = """rules_version = '2';
service firebase.storage {
  match /b/{bucket}/o {
    function f0(x) { return x.size() > 0 && x.matches('(a|aa)*b'); }
""" + "".join(f"    function f{i}(x) {{ return f{i - 1}(x) || f{i - 1}(x + 'a'); }}\n" for i in range(1, 20)) + """
    match /regex-name/{file} {
      allow read, write: if request.resource.name.matches('(a+)+(b+)+(a|aa|aaa)*(.*a){12}c');
    }
    match /regex-meta/{file} {
      allow read, write: if request.resource.metadata.v.matches('((x+x+)+y)|(([a-z]*)*[0-9]{3}){8}');
    }
    match /regex-user/{file} {
      allow read, write: if request.resource.name.matches(request.resource.metadata.re);
    }
    match /deep/{file} {
      allow read, write: if f19(request.resource.name);
    }
  }
}
"""

USER_REGEXES = ["(a*)*$", "(a|a)*b", "((a{100}){100}){100}", "(((a{1000}){1000}){1000}){1000}",
                "(?:a?){1000}a{1000}", "(x+x+)+y", "(.*){100}b", "[", "a{99999999}", "(" * 500 + ")" * 500,
                "\\1", "(?=a)a", ".*" * 2000 + "b"]


RECURSIVE_RULES = [
    ("direct recursion", "rules_version = '2';\nservice firebase.storage {\n  match /b/{bucket}/o/{p=**} {\n"
     "    function r(x) { return r(x + 1); }\n    allow read, write: if r(0);\n  }\n}\n"),
    ("mutual recursion", "rules_version = '2';\nservice firebase.storage {\n  match /b/{bucket}/o/{p=**} {\n"
     "    function a(x) { return b(x); }\n    function b(x) { return a(x); }\n    allow read, write: if a(0);\n"
     "  }\n}\n"),
]


def check_9(ctx):
    row = ctx.row("9", "regex and rules bombs: each request decided (200/403) within 2 s, never a hang or 5xx")
    srv = ctx.server("c9-rules", rules=BOMB_RULES)
    alice = srv.auth("alice")
    mp = [("X-Goog-Upload-Protocol", "multipart"), ("Content-Type", f"multipart/related; boundary={BOUNDARY}")]
    a1000 = "a" * 1000
    attempts = []
    for name in ["regex-name/" + a1000, "regex-name/" + "ab" * 500, "regex-name/" + "a" * 500 + "b" * 400 + "a"]:
        attempts.append(("name regex on a 1 KB name", name, {}))
    for v in ["x" * 4000 + "z", "abc" * 1300, "a1" * 2000]:
        attempts.append(("metadata regex", "regex-meta/f", {"v": v}))
    for re_text in USER_REGEXES:
        attempts.append((f"caller-chosen regex {re_text[:30]!r}", "regex-user/" + a1000[:900], {"re": re_text}))
    control = ("control: a caller regex that matches", "regex-user/" + a1000[:900], {"re": "regex-user/a+"})
    attempts.append(control)
    attempts.append(("2^19 function fan-out", "deep/" + a1000[:900], {}))
    attempts.append(("2^19 function fan-out (short name)", "deep/x", {}))
    slowest = 0.0
    statuses = {}
    for what, name, meta in attempts:
        for cred in (alice, None):
            body = multipart_body({"name": name, "metadata": meta} if meta else {"name": name}, b"bomb")
            r = srv.req("POST", f"/v0/b/{BUCKET}/o?name={q(name)}", body, ([cred] if cred else []) + mp, timeout=8,
                        what=what)
            slowest = max(slowest, r.elapsed or 0)
            statuses[r.status] = statuses.get(r.status, 0) + 1
            who = "alice" if cred else "anonymous"
            if (what, name, meta) == control and r.status != 200:
                row.fail(f"{what} as {who}: expected 200, got {r.short()}")
            elif r.status not in (200, 403):
                row.fail(f"{what} as {who}: {r.short()} after {r.elapsed:.1f} s")
            elif r.elapsed > 2.0:
                row.fail(f"{what} as {who}: decided {r.status} only after {r.elapsed:.1f} s")
        g = srv.req("GET", v0_object(name), headers=[alice], timeout=8, what=what + " (read)")
        if g.status not in (200, 403, 404) or g.elapsed > 2.0:
            row.fail(f"{what}, metadata read: {g.short()} after {g.elapsed:.1f} s")
        ping = srv.req("GET", "/", timeout=3)
        if ping.status != 200 or ping.elapsed > 1.0:
            row.fail(f"after {what}: GET / {ping.short()} in {ping.elapsed:.2f} s")
    row.note(f"{len(attempts) * 2} uploads, slowest decision {slowest * 1000:.0f} ms, statuses {statuses}")
    for what, rules in RECURSIVE_RULES:
        path = os.path.join(srv.dir, "recursive.rules")
        with open(path, "w") as fh:
            fh.write(rules)
        started = time.time()
        try:
            out = L.subprocess.run([Silo.binary, "serve", "--port", "0", "--data", os.path.join(srv.dir, "rec"),
                                    "--rules", path], capture_output=True, text=True, timeout=5)
        except L.subprocess.TimeoutExpired:
            row.fail(f"{what}: silo serve started and kept running with these rules (expected a compile error)")
            continue
        took = time.time() - started
        if out.returncode <= 0 or "recurs" not in (out.stderr + out.stdout).lower():
            row.fail(f"{what}: silo serve exited {out.returncode} in {took:.1f} s: {out.stderr.strip()[-160:]!r}")
        else:
            why = out.stderr.strip().splitlines()[-1].split("recursive.rules:")[-1]
            row.note(f"{what}: refused at startup in {took:.1f} s ({why[:70]})")


# ---------------------------------------------------------------------------------------------------------------
# 10. Access decisions on the GCS JSON and XML APIs: each generation by its own ACL, writes decided again when they
# commit, ACLs only to who may read them, no credential at rest.

SA_WRITER = "hostile-writer@hostile.iam.gserviceaccount.com"
SA_CREATOR = "hostile-creator@hostile.iam.gserviceaccount.com"


def b64url(data):
    import base64
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


class ServiceAccount:
    """A service account key made with openssl, and the token-request assertions google-auth signs with it."""

    def __init__(self, directory, email):
        self.email = email
        self.pem = os.path.join(directory, email.split("@")[0] + ".pem")
        out = L.subprocess.run(["openssl", "genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048",
                                "-out", self.pem], capture_output=True, text=True, timeout=60)
        if out.returncode != 0:
            raise RuntimeError(f"openssl genpkey failed: {out.stderr}")
        with open(self.pem) as f:
            pem = f.read()
        self.key_file = os.path.join(directory, email.split("@")[0] + ".json")
        with open(self.key_file, "w") as f:
            json.dump({"type": "service_account", "project_id": "hostile", "private_key_id": "k-" + email[:8],
                       "private_key": pem, "client_email": email, "client_id": "1",
                       "token_uri": "https://oauth2.googleapis.com/token"}, f)

    def jwt(self, claims):
        head = b64url(json.dumps({"alg": "RS256", "typ": "JWT", "kid": "k-" + self.email[:8]}).encode())
        body = b64url(json.dumps(claims).encode())
        signed = L.subprocess.run(["openssl", "dgst", "-sha256", "-sign", self.pem], input=f"{head}.{body}".encode(),
                                  capture_output=True, timeout=30)
        return f"{head}.{body}.{b64url(signed.stdout)}"

    def token(self, srv):
        now = int(time.time())
        assertion = self.jwt({"iss": self.email, "aud": "https://oauth2.googleapis.com/token", "iat": now,
                              "exp": now + 3600, "scope": "https://www.googleapis.com/auth/devstorage.full_control"})
        r = srv.req("POST", "/token", f"grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion="
                    f"{assertion}".encode(), [("Content-Type", "application/x-www-form-urlencoded")],
                    what="token request")
        if r.status != 200:
            raise RuntimeError(f"token request for {self.email} failed: {r.short()}")
        return ("Authorization", "Bearer " + r.json()["access_token"])


def gcs_upload(srv, name, data, cred, query=""):
    return srv.req("POST", f"/upload/storage/v1/b/{BUCKET}/o?uploadType=media&name={q(name)}"
                   + (f"&{query}" if query else ""), data, [cred] if cred else [], what=f"GCS upload {name}")


def bind(srv, bindings):
    policy = {"bindings": [{"role": role, "members": members} for role, members in bindings]}
    r = srv.req("PUT", f"/storage/v1/b/{BUCKET}/iam", json.dumps(policy).encode(),
                [srv.admin(), ("Content-Type", "application/json")], what="set IAM policy")
    if r.status != 200:
        raise RuntimeError(f"setting the IAM policy failed: {r.short()}")


def admin_bytes(srv, name, generation=None):
    query = "alt=media" + (f"&generation={generation}" if generation else "")
    return srv.req("GET", gcs_object(name, query), headers=[srv.admin()], what="admin read").body


def raced(srv, method, target, body, headers, meanwhile):
    """Sends the head with Expect: 100-continue; once the server has decided access (its 100), runs `meanwhile`,
    then the body. Returns the final response (or the early one, without running `meanwhile`)."""
    conn = srv.conn()
    try:
        conn.send(build_request(method, target, list(headers) + [("Expect", "100-continue"),
                                                                 ("Content-Length", str(len(body)))],
                                port=srv.port))
        deadline = time.time() + 10
        while time.time() < deadline:
            done, interim, _ = conn.responses(1, timeout=0.2)
            if done:
                L.record_status(done[0].status, f"{method} {target[:60]} (early)")
                return done[0]
            if interim:
                break
        meanwhile()
        conn.send(body)
        done, _, _ = conn.responses(1, timeout=10)
        r = done[0] if done else L.NoResponse("no answer after the body")
        L.record_status(r.status, f"{method} {target[:60]}")
        return r
    finally:
        conn.close()


def check_10(ctx):
    keys = tempfile.mkdtemp(prefix="c10-keys-", dir=Silo.work_root)
    writer = ServiceAccount(keys, SA_WRITER)
    creator = ServiceAccount(keys, SA_CREATOR)
    srv = ctx.server("c10-gcs-access", extra=["--service-account", writer.key_file,
                                             "--service-account", creator.key_file])
    admin = srv.admin()
    r = srv.req("PATCH", f"/storage/v1/b/{BUCKET}",
                b'{"versioning":{"enabled":true},"softDeletePolicy":{"retentionDurationSeconds":"604800"}}',
                [admin, ("Content-Type", "application/json")], what="versioning and soft delete on")
    if r.status != 200:
        raise RuntimeError(f"versioning could not be turned on: {r.short()}")
    bind(srv, [("roles/storage.legacyBucketWriter", [f"serviceAccount:{SA_WRITER}"]),
               ("roles/storage.objectCreator", [f"serviceAccount:{SA_CREATOR}"])])
    writer_cred = writer.token(srv)
    creator_cred = creator.token(srv)

    # 10a: a public live version opens nothing older.
    row = ctx.row("10a", "a generation's own ACL decides: a public overwrite does not open the private one before it")
    old = gcs_upload(srv, "pub.txt", b"private v1", admin).json()["generation"]
    gcs_upload(srv, "pub.txt", b"public v2", admin, "predefinedAcl=publicRead")
    expect_status(row, srv.req("GET", gcs_object("pub.txt", "alt=media")), 200, "anonymous read of the live version")
    for what, target in [("JSON media", gcs_object("pub.txt", f"alt=media&generation={old}")),
                         ("JSON metadata", gcs_object("pub.txt", f"generation={old}")),
                         ("XML GET", f"/{BUCKET}/pub.txt?generation={old}")]:
        resp = srv.req("GET", target, what=f"anonymous {what} of generation 1")
        expect_status(row, resp, 401, f"anonymous {what} of private generation {old}")
        row.expect(b"private v1" not in resp.body, f"{what}: the private bytes were served")

    # 10b: create and delete without get: the overwriter owns its version, not the ones before it.
    row = ctx.row("10b", "create+delete without get: read, metadata, ACL, copy, rewrite, compose of the old "
                         "generation all refused")
    old = gcs_upload(srv, "doc.txt", b"owner v1", admin).json()["generation"]
    expect_status(row, gcs_upload(srv, "doc.txt", b"writer v2", writer_cred), 200, "the writer's overwrite")
    expect_status(row, srv.req("GET", gcs_object("doc.txt", "alt=media"), headers=[writer_cred]), 200,
                  "the writer reads its own version")
    attempts = [
        ("JSON media", "GET", gcs_object("doc.txt", f"alt=media&generation={old}"), b"", []),
        ("XML GET", "GET", f"/{BUCKET}/doc.txt?generation={old}", b"", []),
        ("metadata", "GET", gcs_object("doc.txt", f"generation={old}"), b"", []),
        ("PATCH", "PATCH", gcs_object("doc.txt", f"generation={old}"), b'{"metadata":{"taken":"1"}}',
         [("Content-Type", "application/json")]),
        ("ACL read", "GET", f"/storage/v1/b/{BUCKET}/o/doc.txt/acl?generation={old}", b"", []),
        ("ACL grant allUsers", "POST", f"/storage/v1/b/{BUCKET}/o/doc.txt/acl?generation={old}",
         b'{"entity":"allUsers","role":"READER"}', [("Content-Type", "application/json")]),
        ("XML ?acl", "GET", f"/{BUCKET}/doc.txt?acl&generation={old}", b"", []),
        ("XML PUT ?acl public-read", "PUT", f"/{BUCKET}/doc.txt?acl&generation={old}", b"",
         [("x-goog-acl", "public-read")]),
        ("copyTo", "POST", f"/storage/v1/b/{BUCKET}/o/doc.txt/copyTo/b/{BUCKET}/o/stolen1?sourceGeneration={old}",
         b"{}", [("Content-Type", "application/json")]),
        ("rewriteTo", "POST",
         f"/storage/v1/b/{BUCKET}/o/doc.txt/rewriteTo/b/{BUCKET}/o/stolen2?sourceGeneration={old}", b"{}",
         [("Content-Type", "application/json")]),
        ("XML copy-source-generation", "PUT", f"/{BUCKET}/stolen3", b"",
         [("x-goog-copy-source", f"/{BUCKET}/doc.txt"), ("x-goog-copy-source-generation", old)]),
        ("compose", "POST", f"/storage/v1/b/{BUCKET}/o/stolen4/compose",
         json.dumps({"sourceObjects": [{"name": "doc.txt", "generation": old}]}).encode(),
         [("Content-Type", "application/json")]),
    ]
    for what, method, target, body, extra in attempts:
        resp = srv.req(method, target, body, [writer_cred] + extra, what=f"writer {what} of generation 1")
        expect_status(row, resp, 403, f"{what} of generation {old} by the overwriter")
        row.expect(b"owner v1" not in resp.body, f"{what}: the old bytes were served")
    row.expect(admin_bytes(srv, "doc.txt", old) == b"owner v1", "generation 1 changed")
    meta = srv.req("GET", gcs_object("doc.txt", f"generation={old}"), headers=[admin]).json() or {}
    row.expect("metadata" not in meta, f"generation 1's metadata was changed: {meta.get('metadata')}")
    expect_status(row, srv.req("GET", gcs_object("doc.txt", f"alt=media&generation={old}")), 401,
                  "generation 1 stays private")
    for n in range(1, 5):
        expect_absent(row, srv, f"stolen{n}", f"a copy of generation 1 (stolen{n})")

    # 10c: soft-deleted versions and restore.
    row = ctx.row("10c", "soft-deleted generations by their own ACL; restore takes the bucket's default ACL")
    expect_status(row, srv.req("DELETE", gcs_object("doc.txt", f"generation={old}"), headers=[admin]), 204,
                  "soft-deleting generation 1")
    expect_status(row, srv.req("GET", gcs_object("doc.txt", f"softDeleted=true&generation={old}"),
                               headers=[writer_cred]), 403, "the writer's read of soft-deleted generation 1")
    was_public = gcs_upload(srv, "gone.txt", b"was public", admin, "predefinedAcl=publicRead").json()["generation"]
    srv.req("DELETE", gcs_object("gone.txt"), headers=[admin])
    srv.req("DELETE", gcs_object("gone.txt", f"generation={was_public}"), headers=[admin])
    restored = srv.req("POST", gcs_object("gone.txt") + f"/restore?generation={was_public}", headers=[admin])
    expect_status(row, restored, 200, "restore by the admin")
    expect_status(row, srv.req("GET", gcs_object("gone.txt", "alt=media")), 401,
                  "the restored object without copySourceAcl=true (the old publicRead must not come back)")

    # 10d: a create-only caller's sessions and completions are decided when they commit.
    row = ctx.row("10d", "create-only caller: resumable (JSON, XML) and multipart completion decided at commit")
    started = srv.req("POST", f"/upload/storage/v1/b/{BUCKET}/o?uploadType=resumable&name=race-json.txt", b"{}",
                      [creator_cred, ("Content-Type", "application/json")], what="JSON resumable start")
    if expect_status(row, started, 200, "JSON resumable start by the creator"):
        gcs_upload(srv, "race-json.txt", b"owner's", admin)
        final = srv.req("PUT", path_of(started.header("Location")), b"intruder", what="JSON session final PUT")
        expect_status(row, final, 403, "the JSON session's final PUT over the owner's new object")
        row.expect(admin_bytes(srv, "race-json.txt") == b"owner's", "JSON session replaced the owner's bytes")
    started = srv.req("POST", f"/{BUCKET}/race-xml.txt", b"", [creator_cred, ("x-goog-resumable", "start")],
                      what="XML resumable start")
    if expect_status(row, started, 201, "XML resumable start by the creator"):
        gcs_upload(srv, "race-xml.txt", b"owner's", admin)
        final = srv.req("PUT", path_of(started.header("Location")), b"intruder", what="XML session final PUT")
        expect_status(row, final, 403, "the XML session's final PUT over the owner's new object")
        row.expect(admin_bytes(srv, "race-xml.txt") == b"owner's", "XML session replaced the owner's bytes")
    init = srv.req("POST", f"/{BUCKET}/race-mpu.txt?uploads", b"", [creator_cred], what="multipart initiate")
    upload_id = re.search(r"<UploadId>([^<]+)</UploadId>", init.body.decode(errors="replace"))
    if row.expect(init.status == 200 and upload_id, f"multipart initiate: {init.short()}"):
        part = srv.req("PUT", f"/{BUCKET}/race-mpu.txt?partNumber=1&uploadId={upload_id.group(1)}", b"intruder",
                       [creator_cred], what="multipart part")
        body = (f"<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>{part.header('ETag')}</ETag>"
                f"</Part></CompleteMultipartUpload>").encode()
        done = raced(srv, "POST", f"/{BUCKET}/race-mpu.txt?uploadId={upload_id.group(1)}", body, [creator_cred],
                     lambda: gcs_upload(srv, "race-mpu.txt", b"owner's", admin))
        expect_status(row, done, 403, "the completion over the owner's new object")
        row.expect(admin_bytes(srv, "race-mpu.txt") == b"owner's", "the completion replaced the owner's bytes")

    # 10e: projection=full.
    row = ctx.row("10e", "projection=full shows ACLs and owners only to callers who may read them")
    public = srv.req("GET", gcs_object("pub.txt", "projection=full")).json() or {}
    row.expect("acl" not in public and "owner" not in public,
               f"an anonymous reader got the ACL: {json.dumps(public.get('acl'))[:120]}")
    row.expect(public.get("name") == "pub.txt", "the rest of the resource is missing")
    full = srv.req("GET", gcs_object("pub.txt", "projection=full"), headers=[admin]).json() or {}
    row.expect(bool(full.get("acl")), "the admin did not get the ACL")

    # 10f: no credential at rest; ACL changes need setIamPolicy.
    row = ctx.row("10f", "sessions keep no credential; a metadata write that changes the ACL needs setIamPolicy")
    started = srv.req("POST", f"/v0/b/{BUCKET}/o?name={q('users/x/at-rest.bin')}", b"",
                      [admin, ("X-Goog-Upload-Protocol", "resumable"), ("X-Goog-Upload-Command", "start")],
                      what="v0 resumable start with the admin key")
    expect_status(row, started, 200, "v0 resumable start by the admin")
    found = []
    for d, _, files in os.walk(srv.data):
        for f in files:
            try:
                with open(os.path.join(d, f), "rb") as fh:
                    if ADMIN_KEY_BYTES in fh.read():
                        found.append(os.path.relpath(os.path.join(d, f), srv.data))
            except OSError:
                pass
    row.expect(not found, f"the admin key is stored in {found}")
    bind(srv, [("roles/storage.objectUser", [f"serviceAccount:{SA_WRITER}"])])
    gcs_upload(srv, "mine.txt", b"private", admin)
    patched = srv.req("PATCH", gcs_object("mine.txt"), b'{"acl":[{"entity":"allUsers","role":"READER"}]}',
                      [writer_cred, ("Content-Type", "application/json")], what="objectUser ACL patch")
    expect_status(row, patched, 403, "an objectUser's PATCH of the ACL")
    expect_status(row, srv.req("GET", gcs_object("mine.txt", "alt=media")), 401, "the object stays private")


ADMIN_KEY_BYTES = L.ADMIN_KEY.encode()


# ---------------------------------------------------------------------------------------------------------------
# 11. User content and the console's origin: every answer that carries user bytes is sandboxed, the console's page
# trusts no script of the origin but its own, CORS never allows credentials and never answers for the console.

ATTACK_PAGE = (b"<!doctype html><h1>report</h1><script>fetch('/storage/v1/b/x/o/y', {method: 'DELETE', headers: "
               b"{Authorization: 'Bearer ' + sessionStorage.getItem('silo.console.adminKey')}})</script>")
ATTACK_SVG = (b'<svg xmlns="http://www.w3.org/2000/svg" onload="alert(sessionStorage.length + document.cookie)">'
              b"<text>chart</text></svg>")
FORBIDDEN_SANDBOX_FLAGS = {"allow-scripts", "allow-same-origin", "allow-forms", "allow-popups", "allow-top-navigation",
                           "allow-popups-to-escape-sandbox", "allow-top-navigation-by-user-activation"}


def sandbox_problem(r):
    """Why `r` is not inert as a document (None when it is): one sandbox without flags that give back scripts, the
    origin, forms, windows or navigation; nosniff."""
    policies = r.header_all("content-security-policy")
    sandboxes = [d.split() for p in policies for d in p.split(";") if d.split()[:1] == ["sandbox"]]
    if len(sandboxes) != 1:
        return f"{r.status} without a sandbox policy (Content-Security-Policy: {policies})"
    if FORBIDDEN_SANDBOX_FLAGS & set(sandboxes[0][1:]):
        return f"sandbox with {sorted(FORBIDDEN_SANDBOX_FLAGS & set(sandboxes[0][1:]))}"
    if r.header_all("x-content-type-options") != ["nosniff"]:
        return f"X-Content-Type-Options: {r.header_all('x-content-type-options')}"
    return None


def check_11(ctx):
    media = ctx.row("11a", "user bytes through every API (v0 token, JSON media, /download, XML path and virtual "
                           "host, response-content-type=text/html, HEAD, ranges): sandboxed and nosniff")
    console = ctx.row("11b", "the console's page trusts its nonce, not the origin its uploads share")
    cors = ctx.row("11c", "CORS: no credentials for any origin but a Cloud Workstations preview; the console's paths "
                          "answer no other origin")
    srv = ctx.server("c11-content")
    alice = srv.auth("alice")
    mp = [("X-Goog-Upload-Protocol", "multipart"), ("Content-Type", f"multipart/related; boundary={BOUNDARY}")]
    urls = {}
    for name, data, kind in (("users/alice/report.html", ATTACK_PAGE, "text/html"),
                             ("users/alice/chart.svg", ATTACK_SVG, "image/svg+xml"),
                             ("public/notes.txt", ATTACK_PAGE, "text/plain")):
        cred = alice if name.startswith("users/") else srv.admin()
        r = srv.req("POST", f"/v0/b/{BUCKET}/o?name={q(name)}",
                    multipart_body({"name": name, "contentType": kind}, data, kind), [cred] + mp, what="upload")
        if not expect_status(media, r, 200, f"upload of {name}"):
            return
        urls[name] = v0_object(name, "alt=media&token=" + q((r.json() or {}).get("downloadTokens", "")))
    admin = [srv.admin()]
    attempts = []
    for name in ("users/alice/report.html", "users/alice/chart.svg"):
        attempts += [(f"v0 token URL of {name}", "GET", urls[name], []),
                     (f"v0 HEAD of {name}", "HEAD", urls[name], []),
                     (f"v0 range of {name}", "GET", urls[name], [("Range", "bytes=0-5")]),
                     (f"JSON alt=media of {name}", "GET", gcs_object(name, "alt=media"), admin),
                     (f"/download of {name}", "GET", f"/download/storage/v1/b/{BUCKET}/o/{q(name)}?alt=media", admin),
                     (f"XML path style {name}", "GET", f"/{BUCKET}/{name}", admin),
                     (f"XML virtual host {name}", "GET", f"/{name}", admin + [("Host", f"{BUCKET}.localhost")])]
    attempts += [("XML response-content-type=text/html of a text object", "GET",
                  f"/{BUCKET}/public/notes.txt?response-content-type=text%2Fhtml", admin),
                 ("XML error", "GET", f"/{BUCKET}/users/alice/nothing.html", admin),
                 ("JSON metadata", "GET", gcs_object("users/alice/report.html"), admin),
                 ("v0 denied read", "GET", v0_object("users/alice/report.html", "alt=media"), [])]
    for what, method, target, headers in attempts:
        r = srv.req(method, target, headers=headers, what=what)
        if r.status is None or r.status >= 500:
            media.fail(f"{what}: {r.short()}")
            continue
        problem = sandbox_problem(r)
        if problem:
            media.fail(f"{what}: {problem}")
    overridden = srv.req("GET", f"/{BUCKET}/public/notes.txt?response-content-type=text%2Fhtml", headers=admin)
    media.expect(overridden.header("content-type") == "text/html",
                 f"the override itself should still apply (Content-Type {overridden.header('content-type')!r})")
    if media.passed:
        media.note(f"{len(attempts)} answers, each sandboxed without allow-scripts or allow-same-origin")

    pages = [srv.req("GET", "/console/", what="console page") for _ in range(2)]
    policies = [p.header("content-security-policy") or "" for p in pages]
    script = next((d.strip() for d in policies[0].split(";") if d.strip().startswith("script-src")), "")
    console.expect(pages[0].status == 200, f"GET /console/: {pages[0].short()}")
    console.expect(script and "'self'" not in script and "127.0.0.1" not in script and "*" not in script,
                   f"script-src trusts the origin the uploads share: {script!r}")
    nonce = script.split("'nonce-")[-1].rstrip("'") if "'nonce-" in script else ""
    console.expect(nonce and f'nonce="{nonce}"'.encode() in pages[0].body,
                   f"the page's scripts do not carry the policy's nonce ({script!r})")
    console.expect(policies[0] != policies[1], "two answers of the page share a nonce")
    if console.passed:
        console.note(script.replace(nonce, "…"))

    origin = ("Origin", "https://evil.example")
    for what, method, target, headers in [
            ("v0 read", "GET", urls["users/alice/report.html"], [origin]),
            ("JSON list", "GET", f"/storage/v1/b/{BUCKET}/o", admin + [origin]),
            ("XML read", "GET", f"/{BUCKET}/public/notes.txt", admin + [origin]),
            ("v0 preflight", "OPTIONS", f"/v0/b/{BUCKET}/o?name=x",
             [origin, ("Access-Control-Request-Method", "POST"), ("Access-Control-Request-Headers", "authorization")])]:
        r = srv.req(method, target, headers=headers, what="CORS " + what)
        cors.expect(r.header("access-control-allow-origin") == "https://evil.example",
                    f"{what}: Access-Control-Allow-Origin {r.header('access-control-allow-origin')!r}")
        cors.expect(r.header("access-control-allow-credentials") is None,
                    f"{what}: Access-Control-Allow-Credentials {r.header('access-control-allow-credentials')!r}")
    # Look-alikes of the one origin that is answered with credentials get none either.
    for fake in ("http://5000-x.cloudworkstations.dev", "https://cloudworkstations.dev.evil.example"):
        r = srv.req("GET", f"/{BUCKET}/public/notes.txt", headers=admin + [("Origin", fake)], what="CORS look-alike")
        cors.expect(r.header("access-control-allow-credentials") is None, f"{fake}: credentials allowed")
    for what, method, target, headers in [
            ("console session", "GET", "/console/api/session", admin + [origin]),
            ("console rules", "GET", "/console/api/rules", admin + [origin]),
            ("console preflight", "OPTIONS", "/console/api/rules/explain",
             [origin, ("Access-Control-Request-Method", "POST"), ("Access-Control-Request-Headers", "authorization")])]:
        r = srv.req(method, target, headers=headers, what="CORS " + what)
        leaked = [k for k, _ in r.headers if k.lower().startswith("access-control-")]
        cors.expect(not leaked, f"{what} answers another origin: {leaked} ({r.short()})")
    for site in ("cross-site", "same-site"):
        r = srv.req("GET", "/console/api/rules", headers=admin + [("Sec-Fetch-Site", site)], what="Sec-Fetch-Site")
        cors.expect(r.status == 403, f"console rules with Sec-Fetch-Site: {site}: {r.short()}")
    r = srv.req("GET", "/console/api/rules", headers=admin + [("Sec-Fetch-Site", "same-origin")])
    cors.expect(r.status == 200, f"console rules from its own page: {r.short()}")
    if cors.passed:
        cors.note("storage routes reflect the origin without credentials; the console's answer none")


# ---------------------------------------------------------------------------------------------------------------
# 12. Hosts, proxies and the request's edge.
#
# A signed URL or a token assertion made for another deployment that shares a service account key must not be
# accepted because the request names that deployment in Host or X-Forwarded-Host; forwarded headers count only from
# --trusted-proxies; GCS's refused object names; bodies declared beyond their route's bound; bare-LF chunk framing;
# decompressive transcoding counted per caller. Keys are made and signed with `openssl` (the suite has no crypto).

OTHER_HOST = "staging.example:9199"


def c12_key(folder, name):
    """A service account key file as Google writes one, with a fresh RSA key: (email, key file, PEM file, key id)."""
    pem = os.path.join(folder, f"{name}.pem")
    import subprocess
    subprocess.run(["openssl", "genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", pem],
                   check=True, capture_output=True, timeout=60)
    email = f"{name}@hostile.iam.gserviceaccount.com"
    key_id = secrets.token_hex(20)
    with open(pem) as f:
        key = {"type": "service_account", "project_id": "hostile", "private_key_id": key_id, "private_key": f.read(),
               "client_email": email, "client_id": "100000000000000000012",
               "auth_uri": "https://accounts.google.com/o/oauth2/auth", "token_uri": "https://oauth2.googleapis.com/token",
               "auth_provider_x509_cert_url": "https://www.googleapis.com/oauth2/v1/certs",
               "client_x509_cert_url": f"https://www.googleapis.com/robot/v1/metadata/x509/{name}",
               "universe_domain": "googleapis.com"}
    path = os.path.join(folder, f"{name}.json")
    with open(path, "w") as f:
        json.dump(key, f)
    return email, path, pem, key_id


def c12_sign(pem, data):
    import subprocess
    return subprocess.run(["openssl", "dgst", "-sha256", "-sign", pem, "-binary"], input=data, check=True,
                          capture_output=True, timeout=30).stdout


def c12_signed_url(pem, email, method, path, host):
    """A V4 signed URL's target for `host`, as GCS's V4 signing describes it (cloud.google.com/storage/docs/access-
    control/signing-urls-manually)."""
    import hashlib
    import urllib.parse
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    scope = f"{stamp[:8]}/auto/storage/goog4_request"
    query = {"X-Goog-Algorithm": "GOOG4-RSA-SHA256", "X-Goog-Credential": f"{email}/{scope}", "X-Goog-Date": stamp,
             "X-Goog-Expires": "900", "X-Goog-SignedHeaders": "host"}
    quote = lambda text: urllib.parse.quote(text, safe="-_.~")
    canonical_query = "&".join(f"{quote(k)}={quote(v)}" for k, v in sorted(query.items()))
    canonical = "\n".join([method, path, canonical_query, f"host:{host}", "", "host", "UNSIGNED-PAYLOAD"])
    to_sign = "\n".join(["GOOG4-RSA-SHA256", stamp, scope, hashlib.sha256(canonical.encode()).hexdigest()])
    return f"{path}?{canonical_query}&X-Goog-Signature={c12_sign(pem, to_sign.encode()).hex()}"


def c12_assertion(pem, email, key_id, audience):
    import base64
    part = lambda value: base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()
    now = int(time.time())
    head = part({"alg": "RS256", "typ": "JWT", "kid": key_id}) + "." + part(
        {"iss": email, "aud": audience, "iat": now, "exp": now + 600,
         "scope": "https://www.googleapis.com/auth/devstorage.full_control"})
    return head + "." + base64.urlsafe_b64encode(c12_sign(pem, head.encode())).rstrip(b"=").decode()


def c12_token(srv, assertion, headers=()):
    form = f"grant_type={q('urn:ietf:params:oauth:grant-type:jwt-bearer')}&assertion={assertion}"
    return srv.req("POST", "/token", form.encode(),
                   [("Content-Type", "application/x-www-form-urlencoded"), *headers], what="token request")


def c12_raw(srv, raw, timeout=5):
    """Sends raw bytes; returns (responses, closed, the raw bytes received)."""
    c = srv.conn()
    try:
        c.send(raw)
        done, _, _ = c.responses(1, timeout=timeout)
        c.wait_closed(2.0)
        return done, c.closed, bytes(c.buf)
    finally:
        c.close()


def c12_download(srv, target, headers=()):
    """A download read to the end on its own connection: (status, body bytes with chunks decoded, complete)."""
    c = srv.conn()
    try:
        c.send(build_request("GET", target, [("Connection", "close"), *headers], port=srv.port))
        c.wait_closed(30.0)
        raw = bytes(c.buf)
    finally:
        c.close()
    head, _, rest = raw.partition(b"\r\n\r\n")
    status = int(head.split(b" ")[1]) if head.startswith(b"HTTP/1.1 ") else None
    L.record_status(status, f"download {target[:60]}")
    if b"transfer-encoding: chunked" not in head.lower():
        length = re.search(rb"(?im)^content-length:\s*(\d+)", head)
        return status, rest, bool(length) and int(length.group(1)) == len(rest)
    body, i = bytearray(), 0
    while True:
        end = rest.find(b"\r\n", i)
        if end < 0:
            return status, bytes(body), False
        size = int(rest[i:end].split(b";")[0] or b"0", 16)
        if size == 0:
            return status, bytes(body), True
        body += rest[end + 2:end + 2 + size]
        if end + 2 + size + 2 > len(rest):
            return status, bytes(body), False
        i = end + 2 + size + 2


def check_12(ctx):
    a = ctx.row("12a", "signed URLs and token audiences: a host named only by Host or X-Forwarded-Host → refused")
    b = ctx.row("12b", "X-Forwarded-Host/-Proto count only from --trusted-proxies; --public-url names this server")
    c = ctx.row("12c", "object names ., .. and .well-known/acme-challenge/… → 400 on v0, JSON and XML, none stored")
    d = ctx.row("12d", "a body declared beyond its route's bound → 413 at once, without waiting for it")
    e = ctx.row("12e", "bare-LF chunk framing → 400 and closed, nothing smuggled")
    f = ctx.row("12f", "decompressive transcoding counts per caller: cut off, then 429; silo_transcoded_bytes_total")
    folder = tempfile.mkdtemp(prefix="c12-keys-", dir=Silo.work_root)
    email, key_file, pem, key_id = c12_key(folder, "signer")
    viewer = {"bindings": [{"role": "roles/storage.objectViewer", "members": [f"serviceAccount:{email}"]}]}

    # 12a: with no configuration, only the address the client reached names this server.
    srv = ctx.server("c12-hosts", extra=["--service-account", key_file, "--max-object-size", "1048576"])
    adm = srv.admin()
    p = srv.port
    json_h = ("Content-Type", "application/json")
    r = srv.req("POST", f"/upload/storage/v1/b/{BUCKET}/o?uploadType=media&name=photo.jpg", b"jpeg bytes", [adm])
    expect_status(a, r, 200, "admin upload (setup)")
    r = srv.req("PUT", f"/storage/v1/b/{BUCKET}/iam", json.dumps(viewer).encode(), [adm, json_h])
    expect_status(a, r, 200, "IAM binding (setup)")
    path = f"/{BUCKET}/photo.jpg"
    other = c12_signed_url(pem, email, "GET", path, OTHER_HOST)
    for what, headers in [("as sent", []), ("with X-Forwarded-Host", [("X-Forwarded-Host", OTHER_HOST)]),
                          ("with a forged Host", [("Host", OTHER_HOST)])]:
        r = srv.req("GET", other, headers=headers, what=f"URL signed for another host, {what}")
        a.expect(r.status == 403 and b"SignatureDoesNotMatch" in r.body,
                 f"a URL signed for {OTHER_HOST}, {what}: {r.short()}")
    r = srv.req("GET", c12_signed_url(pem, email, "GET", path, f"127.0.0.1:{p}"), what="URL signed for 127.0.0.1")
    a.expect(r.status == 200 and r.body == b"jpeg bytes", f"a URL signed for this server's address: {r.short()}")
    r = srv.req("GET", c12_signed_url(pem, email, "GET", path, f"localhost:{p}"), headers=[("Host", f"localhost:{p}")],
                what="URL signed for localhost")
    a.expect(r.status == 200, f"a URL signed for localhost:{p}, sent there: {r.short()}")
    for what, headers in [("with a forged Host", [("Host", OTHER_HOST)]),
                          ("with X-Forwarded-Host", [("X-Forwarded-Host", OTHER_HOST)])]:
        r = c12_token(srv, c12_assertion(pem, email, key_id, f"http://{OTHER_HOST}/token"), headers)
        a.expect(r.status == 400 and (r.json() or {}).get("error") == "invalid_grant",
                 f"a token request for http://{OTHER_HOST}/token, {what}: {r.short()}")
    r = c12_token(srv, c12_assertion(pem, email, key_id, f"http://127.0.0.1:{p}/token"))
    a.expect(r.status == 200 and "access_token" in (r.json() or {}), f"a token request for this server: {r.short()}")
    if a.passed:
        a.note("3 forged-host URLs and 2 forged-host assertions refused; this server's own address accepted")

    # 12b: forwarded headers, first from anyone (ignored), then from a trusted proxy.
    fwd = [("X-Forwarded-Host", "evil.example"), ("X-Forwarded-Proto", "https"), json_h]
    start = f"/upload/storage/v1/b/{BUCKET}/o?uploadType=resumable&name=public%2Ffwd.bin"
    r = srv.req("POST", start, b"{}", [adm, *fwd], what="resumable start with X-Forwarded-*")
    b.expect(r.status == 200 and (r.header("Location") or "").startswith(f"http://127.0.0.1:{p}/"),
             f"X-Forwarded-* from an untrusted peer decided the upload URL: {r.short()} {r.header('Location')}")
    proxied = flag_server(ctx, b, "c12-proxied", ["--service-account", key_file, "--trusted-proxies", "127.0.0.1/32",
                                                  "--public-url", "https://storage.example.com"])
    if proxied is not None:
        padm = proxied.admin()
        r = proxied.req("POST", start, b"{}", [padm, *fwd], what="resumable start behind a trusted proxy")
        b.expect((r.header("Location") or "").startswith("https://evil.example/upload/"),
                 f"X-Forwarded-* from a trusted proxy were ignored: {r.short()} {r.header('Location')}")
        proxied.req("POST", f"/upload/storage/v1/b/{BUCKET}/o?uploadType=media&name=photo.jpg", b"jpeg bytes", [padm])
        proxied.req("PUT", f"/storage/v1/b/{BUCKET}/iam", json.dumps(viewer).encode(), [padm, json_h])
        call = (f"--{BOUNDARY}\r\nContent-Type: application/http\r\n\r\nGET /storage/v1/b/{BUCKET}/o/photo.jpg HTTP/1.1"
                f"\r\nX-Forwarded-Host: inner.example\r\n\r\n\r\n--{BOUNDARY}--\r\n").encode()
        r = proxied.req("POST", "/batch/storage/v1", call,
                        [padm, ("Content-Type", f"multipart/mixed; boundary={BOUNDARY}"),
                         ("X-Forwarded-Host", "proxy.example"), ("X-Forwarded-Proto", "https")], what="batch")
        b.expect(r.status == 200 and b"https://proxy.example/storage/v1/" in r.body and b"inner.example" not in r.body,
                 f"a batch call's own X-Forwarded-Host counted: {r.short()}")
        r = proxied.req("GET", c12_signed_url(pem, email, "GET", path, "storage.example.com"),
                        what="URL signed for the --public-url")
        b.expect(r.status == 200, f"a URL signed for the --public-url host: {r.short()}")
        r = c12_token(proxied, c12_assertion(pem, email, key_id, "https://storage.example.com/token"))
        b.expect(r.status == 200, f"a token request for the --public-url's endpoint: {r.short()}")
    if b.passed:
        b.note("untrusted X-Forwarded-* ignored; a trusted proxy's honoured, a batch call's own not; public URL taken")

    # 12c: GCS's refused names, everywhere a name enters.
    for name in [".", "..", ".well-known/acme-challenge/t"]:
        seg = q(name).replace(".", "%2E")
        cases = [
            ("v0 media", "POST", f"/v0/b/{BUCKET}/o?name={q(name)}", b"x", [adm]),
            ("v0 GET", "GET", f"/v0/b/{BUCKET}/o/{seg}", b"", [adm]),
            ("JSON media", "POST", f"/upload/storage/v1/b/{BUCKET}/o?uploadType=media&name={q(name)}", b"x", [adm]),
            ("JSON multipart", "POST", f"/upload/storage/v1/b/{BUCKET}/o?uploadType=multipart",
             multipart_body({"name": name}, b"x"), [adm, ("Content-Type", f"multipart/related; boundary={BOUNDARY}")]),
            ("JSON copyTo", "POST", f"/storage/v1/b/{BUCKET}/o/photo.jpg/copyTo/b/{BUCKET}/o/{seg}", b"{}",
             [adm, json_h]),
            ("JSON GET", "GET", f"/storage/v1/b/{BUCKET}/o/{seg}", b"", [adm]),
            ("XML PUT", "PUT", f"/{BUCKET}/{seg}", b"x", [adm]),
        ]
        for what, method, target, body, headers in cases:
            r = srv.req(method, target, body, headers, what=f"{what} {name!r}")
            c.expect(r.status == 400, f"{what} of {name!r}: {r.short()}")
        expect_absent(c, srv, name, f"the name {name!r}")
    if c.passed:
        c.note("3 names × 7 entry points refused with 400, none stored")

    # 12d: heads declaring more than their route takes, and no body.
    tera = str(1 << 40)
    for what, method, target, headers in [
            ("JSON PATCH", "PATCH", f"/storage/v1/b/{BUCKET}/o/photo.jpg", [adm, json_h]),
            ("batch", "POST", "/batch/storage/v1", [adm, ("Content-Type", f"multipart/mixed; boundary={BOUNDARY}")]),
            ("token request", "POST", "/token", [("Content-Type", "application/x-www-form-urlencoded")]),
            ("v0 media over --max-object-size", "POST", f"/v0/b/{BUCKET}/o?name=public%2Fbig", [adm]),
            ("JSON multipart over --max-object-size", "POST", f"/upload/storage/v1/b/{BUCKET}/o?uploadType=multipart",
             [adm, ("Content-Type", f"multipart/related; boundary={BOUNDARY}")]),
            ("XML PUT over --max-object-size", "PUT", f"/{BUCKET}/public/big", [adm])]:
        done, closed, _ = c12_raw(srv, build_request(method, target, [*headers, ("Content-Length", tera)], port=p))
        for r in done:
            L.record_status(r.status, what)
        if not done:
            d.fail(f"{what} declaring 1 TiB: no answer without the body ({'closed' if closed else 'still waiting'})")
        elif done[0].status != 413:
            d.fail(f"{what} declaring 1 TiB: {done[0].short()}")
        elif not closed:
            d.fail(f"{what} declaring 1 TiB: 413 but the connection stayed open")
    if d.passed:
        d.note("6 heads declaring 1 TiB answered 413 before any body byte, connections closed")

    # 12e: chunk framing with bare LF line ends, each followed by a request that must not be served.
    up = f"/v0/b/{BUCKET}/o?name={q('public/chunked')}"
    head = build_request("POST", up, [adm, ("Transfer-Encoding", "chunked")], port=p, length=False)
    for what, framing in [("after the size", b"5\nhello\r\n0\r\n\r\n"), ("after the data", b"5\r\nhello\n0\r\n\r\n"),
                          ("after an extension", b"5;a=b\nhello\r\n0\r\n\r\n"), ("as the last line", b"0\r\n\n"),
                          ("after a trailer", b"0\r\nX-T: 1\n\r\n")]:
        done, closed, _ = c12_raw(srv, head + framing + SMUGGLED)
        for r in done:
            L.record_status(r.status, what)
        e.expect(not smuggled(done) and len(done) <= 1, f"bare LF {what}: {len(done)} responses")
        e.expect(bool(done) and done[0].status == 400, f"bare LF {what}: {done[0].short() if done else 'no answer'}")
        e.expect(closed, f"bare LF {what}: the connection stayed open")
    expect_absent(e, srv, "public/chunked", "a bare-LF chunked upload")
    if e.passed:
        e.note("5 bare-LF framings refused with 400 and closed")

    # 12f: a gzip object that inflates 8 MiB, served decompressed to callers that do not accept gzip.
    gz = flag_server(ctx, f, "c12-gzip", ["--max-inflated-bytes-per-caller", "256KiB"])
    if gz is None:
        return
    import gzip as gzip_module
    inflated = b"\0" * (8 << 20)
    stored = gzip_module.compress(inflated)
    meta = {"name": "public/bomb.txt", "contentType": "text/plain", "contentEncoding": "gzip"}
    r = gz.req("POST", f"/upload/storage/v1/b/{BUCKET}/o?uploadType=multipart", multipart_body(meta, stored),
               [gz.admin(), ("Content-Type", f"multipart/related; boundary={BOUNDARY}")], what="gzip upload")
    expect_status(f, r, 200, "gzip object upload (setup)")
    media = v0_object("public/bomb.txt", "alt=media")
    status, body, complete = c12_download(gz, media)
    f.expect(status == 200 and not complete and (256 << 10) <= len(body) < len(inflated),
             f"the first anonymous transcoding: {status}, {len(body)} bytes, complete={complete}")
    status, body, complete = c12_download(gz, media)
    f.expect(status == 429, f"the next anonymous transcoding within the minute: {status}, {len(body)} bytes")
    status, body, complete = c12_download(gz, media, [("Accept-Encoding", "gzip")])
    f.expect(status == 200 and complete and body == stored, f"the object as stored: {status}, {len(body)} bytes")
    status, body, complete = c12_download(gz, media, [gz.admin()])
    f.expect(status == 200 and complete and body == inflated, f"the admin's transcoding: {status}, {len(body)} bytes")
    r = gz.req("GET", "/metrics", headers=[gz.admin()], what="metrics")
    m = re.search(rb"(?m)^silo_transcoded_bytes_total (\d+)", r.body)
    f.expect(m is not None and int(m.group(1)) >= len(inflated) + (256 << 10),
             f"silo_transcoded_bytes_total: {m.group(1) if m else 'absent'}")
    m = re.search(rb"(?m)^silo_transcode_refusals_total (\d+)", r.body)
    f.expect(m is not None and int(m.group(1)) >= 2, f"silo_transcode_refusals_total: {m.group(1) if m else 'absent'}")
    if f.passed:
        f.note("cut off after the caller's 256 KiB, then 429; as stored and the admin's not limited; both counted")


# ---------------------------------------------------------------------------------------------------------------
# 13. IAM Conditions: a conditional binding grants only where its condition holds — on the object the request
# addresses, at the moment each decision is made — by every route to the bytes; and a policy with conditions is
# written and read only as version 3, so a client unaware of conditions cannot drop them by writing back.

def c13_policy(srv, bindings, version=3):
    policy = {"version": version, "bindings": [
        {"role": role, "members": [member], **({"condition": {"title": "t", "expression": expr}} if expr else {})}
        for role, member, expr in bindings]}
    return srv.req("PUT", f"/storage/v1/b/{BUCKET}/iam", json.dumps(policy).encode(),
                   [srv.admin(), ("Content-Type", "application/json")], what="set IAM policy")


def check_13(ctx):
    a = ctx.row("13a", "a resource.name condition: no route reaches another name (read, XML, copy, rewrite, compose, "
                       "list, write, delete)")
    b = ctx.row("13b", "a request.time condition: a session started in time and finished after it is refused at commit")
    c = ctx.row("13c", "a conditional policy is written and read as version 3 only")
    keys = tempfile.mkdtemp(prefix="c13-keys-", dir=Silo.work_root)
    writer = ServiceAccount(keys, SA_WRITER)
    srv = ctx.server("c13-conditions", extra=["--service-account", writer.key_file])
    admin = srv.admin()
    json_h = ("Content-Type", "application/json")
    r = srv.req("PATCH", f"/storage/v1/b/{BUCKET}", b'{"iamConfiguration":{"uniformBucketLevelAccess":{"enabled":true}}}',
                [admin, json_h], what="uniform bucket-level access on")
    if r.status != 200:
        raise RuntimeError(f"uniform bucket-level access could not be turned on: {r.short()}")
    for name in ["open/a.txt", "closed/secret.txt"]:
        gcs_upload(srv, name, b"bytes of " + name.encode(), admin)
    member = f"serviceAccount:{SA_WRITER}"
    open_prefix = f"projects/_/buckets/{BUCKET}/objects/open/"
    r = c13_policy(srv, [("roles/storage.objectUser", member, f'resource.name.startsWith("{open_prefix}")')])
    expect_status(a, r, 200, "the conditional binding (setup)")
    cred = writer.token(srv)

    # 13a
    expect_status(a, srv.req("GET", gcs_object("open/a.txt", "alt=media"), headers=[cred]), 200,
                  "a read inside the condition")
    attempts = [
        ("JSON media", "GET", gcs_object("closed/secret.txt", "alt=media"), b"", []),
        ("JSON metadata", "GET", gcs_object("closed/secret.txt"), b"", []),
        ("XML GET", "GET", f"/{BUCKET}/closed/secret.txt", b"", []),
        ("copyTo into open/", "POST", f"/storage/v1/b/{BUCKET}/o/{q('closed/secret.txt')}/copyTo/b/{BUCKET}/o/"
         f"{q('open/copied')}", b"{}", [json_h]),
        ("rewriteTo into open/", "POST", f"/storage/v1/b/{BUCKET}/o/{q('closed/secret.txt')}/rewriteTo/b/{BUCKET}/o/"
         f"{q('open/rewritten')}", b"{}", [json_h]),
        ("XML copy into open/", "PUT", f"/{BUCKET}/open/xml-copied", b"",
         [("x-goog-copy-source", f"/{BUCKET}/closed/secret.txt")]),
        ("compose into open/", "POST", f"/storage/v1/b/{BUCKET}/o/{q('open/composed')}/compose",
         json.dumps({"sourceObjects": [{"name": "closed/secret.txt"}]}).encode(), [json_h]),
        ("listing", "GET", f"/storage/v1/b/{BUCKET}/o?prefix=closed/", b"", []),
        ("JSON upload", "POST", f"/upload/storage/v1/b/{BUCKET}/o?uploadType=media&name={q('closed/secret.txt')}",
         b"overwritten", []),
        ("XML PUT", "PUT", f"/{BUCKET}/closed/secret.txt", b"overwritten", []),
        ("resumable start", "POST", f"/upload/storage/v1/b/{BUCKET}/o?uploadType=resumable&name=closed/new.txt",
         b"{}", [json_h]),
        ("delete", "DELETE", gcs_object("closed/secret.txt"), b"", []),
        ("encoded name", "GET", f"/storage/v1/b/{BUCKET}/o/open%2F..%2Fclosed%2Fsecret.txt?alt=media", b"", []),
    ]
    for what, method, target, body, extra in attempts:
        resp = srv.req(method, target, body, [cred] + extra, what=f"conditional grantee: {what}")
        if what == "encoded name":
            # open/../closed/secret.txt is a name of its own inside the condition, not a way out of it.
            expect_status(a, resp, 404, f"{what} outside the condition")
        else:
            expect_status(a, resp, 403, f"{what} outside the condition")
        a.expect(b"bytes of closed" not in resp.body, f"{what}: the protected bytes were served")
    a.expect(admin_bytes(srv, "closed/secret.txt") == b"bytes of closed/secret.txt", "closed/secret.txt changed")
    for name in ["open/copied", "open/rewritten", "open/xml-copied", "open/composed"]:
        expect_absent(a, srv, name, f"a copy of closed/secret.txt ({name})")

    # 13b
    deadline = time.time() + 6
    until = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(deadline))
    r = c13_policy(srv, [("roles/storage.objectUser", member, f'request.time < timestamp("{until}")')])
    expect_status(b, r, 200, "the time-bound binding (setup)")
    started = srv.req("POST", f"/upload/storage/v1/b/{BUCKET}/o?uploadType=resumable&name=late.txt", b"{}",
                      [cred, json_h], what="JSON resumable start in time")
    xml_started = srv.req("POST", f"/{BUCKET}/late-xml.txt", b"", [cred, ("x-goog-resumable", "start")],
                          what="XML resumable start in time")
    if expect_status(b, started, 200, "JSON resumable start in time") and \
            expect_status(b, xml_started, 201, "XML resumable start in time"):
        time.sleep(max(0.0, deadline - time.time()) + 1.5)
        late = srv.req("PUT", path_of(started.header("Location")), b"late bytes", what="JSON final PUT after the end")
        expect_status(b, late, 403, "the JSON session's commit after the binding's end")
        late = srv.req("PUT", path_of(xml_started.header("Location")), b"late bytes", what="XML final PUT after the end")
        expect_status(b, late, 403, "the XML session's commit after the binding's end")
        expect_absent(b, srv, "late.txt", "the JSON session's object")
        expect_absent(b, srv, "late-xml.txt", "the XML session's object")
        expect_status(b, srv.req("GET", gcs_object("open/a.txt", "alt=media"), headers=[cred]), 403,
                      "a read after the binding's end")

    # 13c
    r = c13_policy(srv, [("roles/storage.objectViewer", member, 'resource.name.startsWith("x")')], version=1)
    expect_status(c, r, 400, "a conditional binding in a version-1 policy")
    expect_status(c, srv.req("GET", f"/storage/v1/b/{BUCKET}/iam", headers=[admin]), 400,
                  "reading a conditional policy without optionsRequestedPolicyVersion=3")
    r = c13_policy(srv, [("roles/storage.objectViewer", member, None)], version=1)
    expect_status(c, r, 400, "a version-1 write over a conditional policy (it would drop the conditions)")
    r = srv.req("GET", f"/storage/v1/b/{BUCKET}/iam?optionsRequestedPolicyVersion=3", headers=[admin])
    if expect_status(c, r, 200, "reading it as version 3"):
        c.expect(any("condition" in x for x in (r.json() or {}).get("bindings", [])), "the condition was lost")


# ---------------------------------------------------------------------------------------------------------------

CHECKS = {1: check_1, 2: check_2, 3: check_3, 4: check_4, 5: check_5, 6: check_6, 7: check_7, 8: check_8, 9: check_9,
          10: check_10, 11: check_11, 12: check_12, 13: check_13}


def run(numbers):
    for n in numbers:
        L.current_check[0] = str(n)
        ctx = Context(n)
        started = time.time()
        print(f"== check {n}", flush=True)
        try:
            CHECKS[n](ctx)
        except Exception as e:
            row = ctx.rows[-1] if ctx.rows else ctx.row(str(n), f"check {n}")
            row.fail(f"test error: {type(e).__name__}: {e}")
            traceback.print_exc()
        finally:
            try:
                ctx.finish()
            except Exception as e:
                print(f"check {n}: finishing failed: {e}", flush=True)
        for r in ctx.rows:
            print(f"   {'PASS' if r.passed else 'FAIL'} {r.key} {r.title}", flush=True)
            for f in r.failures[:12]:
                print(f"        - {f}", flush=True)
            if len(r.failures) > 12:
                print(f"        … {len(r.failures) - 12} more", flush=True)
            for n in r.notes:
                print(f"        note: {n}", flush=True)
        print(f"   ({time.time() - started:.1f} s)", flush=True)


def summarize(elapsed, numbers):
    up = Row("0", "server stays up and loses nothing: canary intact and GET / answers after every check")
    for n, name, problems in SURVIVAL:
        for p in problems:
            up.fail(f"check {n} ({name}): {p}")
    if up.passed:
        up.note(f"{len(SURVIVAL)} servers, every canary intact")
    five = Row("all", "no 5xx anywhere in the run")
    for check, what, status in L.five_xx:
        five.fail(f"check {check}: {what} → {status}")
    if five.passed:
        five.note(f"{L.response_count[0]} responses, none ≥ 500")
    order = ["0"] + [r.key for r in ROWS if r.key not in ("0", "all")] + ["all"]
    rows = sorted(ROWS, key=lambda r: order.index(r.key))
    width = 118
    print()
    print(f"{'check':<6} {'result':<6} detail")
    print("-" * width)
    for r in rows:
        text = f"{r.title} — {r.detail()}"
        lines = [text[i:i + width - 14] for i in range(0, min(len(text), 3 * (width - 14)), width - 14)]
        print(f"{r.key:<6} {'PASS' if r.passed else 'FAIL':<6} {lines[0]}")
        for more in lines[1:]:
            print(f"{'':<14}{more}")
    print("-" * width)
    failed = [r for r in rows if not r.passed]
    print(f"{len(rows) - len(failed)} passed, {len(failed)} failed; checks {','.join(map(str, numbers))}; "
          f"{elapsed:.1f} s")
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--binary", default=".build/release/silo")
    parser.add_argument("--only", default="", help="comma-separated check numbers (default: all)")
    parser.add_argument("--json", default="", help="also write the results to this file")
    parser.add_argument("--keep", action="store_true", help="keep the servers' temporary directories")
    parser.add_argument("--serve-args", default="", help="extra 'silo serve' options for every server, e.g. "
                        "'--inline-limit 0'")
    args = parser.parse_args()
    if not os.access(args.binary, os.X_OK):
        print(f"no executable at {args.binary}", file=sys.stderr)
        return 2
    Silo.binary = os.path.abspath(args.binary)
    Silo.common_args = args.serve_args.split()
    Silo.work_root = tempfile.mkdtemp(prefix="silo-hostile-")
    numbers = [int(x) for x in args.only.split(",") if x.strip()] or sorted(CHECKS)
    started = time.time()
    try:
        run(numbers)
    finally:
        if not args.keep:
            shutil.rmtree(Silo.work_root, ignore_errors=True)
        else:
            print(f"kept {Silo.work_root}")
    rows = summarize(time.time() - started, numbers)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"binary": args.binary, "seconds": round(time.time() - started, 1),
                       "checks": [{"check": r.key, "title": r.title, "result": "PASS" if r.passed else "FAIL",
                                   "failures": r.failures, "notes": r.notes} for r in rows]}, f, indent=1)
    return 0 if all(r.passed for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
