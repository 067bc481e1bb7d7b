#!/usr/bin/env python3
"""Storage events end to end: `silo serve --event-webhook` against a webhook receiver in this process.

1. Counts: uploads (v0, GCS JSON media, XML PUT, GCS resumable, v0 resumable), a folder placeholder, overwrites in a
   bucket without and with versioning, a denied upload (rules) and a failed one (precondition), deletes, metadata
   patches, copy and compose. Each scenario waits for its events and checks the exact counts per type, the CloudEvents
   attributes (binary mode), the data (the object resource) and the HMAC-SHA256 signature of every request.
2. Retries: a receiver that fails the first attempts gets the event again, with the same id.
3. kill -9 mid-delivery: a receiver that stalls; Silo is killed while events are undelivered; after a restart every
   event arrives, and an event that arrives twice has the same id both times.
Standard library only; 127.0.0.1 only; bounded in time. Exit status 0 on success.
"""
import argparse
import hashlib
import hmac
import http.server
import json
import os
import shutil
import signal
import sys
import tempfile
import threading
import time
import urllib.parse

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from silo_process import request, start_silo  # noqa: E402

SECRET = b"events-test-secret-0123456789"
BUCKET = "events.appspot.com"
VERSIONED = "events-versioned"
ADMIN = {"Authorization": "Bearer owner"}
TYPES = {
    "google.cloud.storage.object.v1.finalized": "finalize",
    "google.cloud.storage.object.v1.deleted": "delete",
    "google.cloud.storage.object.v1.archived": "archive",
    "google.cloud.storage.object.v1.metadataUpdated": "metadataUpdate",
}
RULES = """rules_version = '2';
service firebase.storage {
  match /b/{bucket}/o {
    match /{all=**} {
      allow read;
      allow write: if !request.resource.name.matches('denied/.*');
    }
  }
}
"""

failures = []


def check(name, ok, detail=""):
    print(("ok   " if ok else "FAIL ") + name + ("" if ok else f": {detail}"), flush=True)
    if not ok:
        failures.append(name)


def q(name):
    return urllib.parse.quote(name, safe="")


class Receiver:
    """A webhook: records each request; `mode` says how it answers ('ok', 'fail' for the next `fail_count`
    requests, 'stall' holds the request until released)."""

    def __init__(self):
        self.lock = threading.Condition()
        self.received = []  # (headers dict with lowercased names, body bytes)
        self.mode = "ok"
        self.fail_count = 0
        self.release = threading.Event()
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                headers = {k.lower(): v for k, v in self.headers.items()}
                with receiver.lock:
                    mode = receiver.mode
                    if mode == "fail" and receiver.fail_count > 0:
                        receiver.fail_count -= 1
                        status = 503
                    else:
                        status = 200
                    receiver.received.append((headers, body, status if mode != "stall" else 0))
                    receiver.lock.notify_all()
                if mode == "stall":
                    receiver.release.wait(60)
                    return
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def accepted(self):
        with self.lock:
            return [(h, b) for h, b, status in self.received if status == 200]

    def wait_for(self, predicate, timeout=30):
        deadline = time.time() + timeout
        with self.lock:
            while not predicate(self.received):
                left = deadline - time.time()
                if left <= 0:
                    return False
                self.lock.wait(left)
            return True


def summarize(events):
    """(kind, object name, generation) of each accepted request."""
    out = []
    for headers, body in events:
        data = json.loads(body)
        out.append((TYPES.get(headers.get("ce-type"), headers.get("ce-type")), data["name"], data["generation"]))
    return out


def counts(items):
    c = {}
    for kind, _, _ in items:
        c[kind] = c.get(kind, 0) + 1
    return c


class Scenarios:
    def __init__(self, port, receiver):
        self.port = port
        self.receiver = receiver
        self.seen = 0

    def settle(self, expected_count, what, timeout=30):
        """Waits until `expected_count` more events were accepted, then a little more for any extra; returns them."""
        target = self.seen + expected_count
        self.receiver.wait_for(lambda r: sum(1 for x in r if x[2] == 200) >= target, timeout)
        time.sleep(1.0)  # an extra (spurious) event would arrive within the poll interval; none may
        accepted = self.receiver.accepted()
        new = accepted[self.seen:]
        self.seen = len(accepted)
        return summarize(new), new

    def expect(self, what, expected, action):
        """Runs `action`, then checks the events it caused: `expected` is {kind: count}."""
        action()
        items, raw = self.settle(sum(expected.values()), what)
        check(f"{what}: events {expected}", counts(items) == expected, items)
        return items, raw


def gcs_upload(port, bucket, name, data, query=""):
    return request(port, "POST", f"/upload/storage/v1/b/{bucket}/o?uploadType=media&name={q(name)}{query}", data,
                   {**ADMIN, "Content-Type": "text/plain"})


def client_scenarios(s, port):
    """The same writes through google-cloud-storage, the GCS Python client (skipped when it is not installed)."""
    try:
        from google.auth.credentials import Credentials
        from google.cloud import storage
    except ImportError:
        print("skip google-cloud-storage scenarios: the package is not installed (make events installs it)")
        return

    class Owner(Credentials):
        """The emulator's admin token, as a bearer token that never expires."""

        def __init__(self):
            super().__init__()
            self.token = "owner"

        def refresh(self, request):
            pass

    client = storage.Client(project="demo", credentials=Owner(),
                            client_options={"api_endpoint": f"http://127.0.0.1:{port}"})
    bucket = client.bucket(BUCKET)
    s.expect("client: upload_from_string", {"finalize": 1},
             lambda: bucket.blob("client/a.txt").upload_from_string(b"client bytes", content_type="text/plain"))

    def chunked():
        blob = bucket.blob("client/big.bin", chunk_size=256 * 1024)
        blob.upload_from_string(os.urandom(600 * 1024))
    s.expect("client: resumable upload in 256 KiB chunks", {"finalize": 1}, chunked)
    s.expect("client: overwrite without versioning", {"finalize": 1, "delete": 1},
             lambda: bucket.blob("client/a.txt").upload_from_string(b"again"))

    def versioned():
        b = client.bucket("events-client-versioned")
        b.versioning_enabled = True
        client.create_bucket(b)
        b.blob("v.txt").upload_from_string(b"one")
        b.blob("v.txt").upload_from_string(b"two")
    s.expect("client: versioned bucket, upload and overwrite", {"finalize": 2, "archive": 1}, versioned)

    def patch():
        blob = bucket.blob("client/a.txt")
        blob.metadata = {"colour": "blue"}
        blob.patch()
    s.expect("client: patch", {"metadataUpdate": 1}, patch)
    s.expect("client: copy_blob", {"finalize": 1},
             lambda: bucket.copy_blob(bucket.blob("client/a.txt"), bucket, "client/copy.txt"))
    s.expect("client: compose", {"finalize": 1},
             lambda: bucket.blob("client/composed.txt").compose([bucket.blob("client/a.txt"),
                                                                 bucket.blob("client/copy.txt")]))

    def refused():
        from google.api_core.exceptions import PreconditionFailed
        try:
            bucket.blob("client/a.txt").upload_from_string(b"stale", if_generation_match=1)
            check("client: the precondition refuses the upload", False, "uploaded")
        except PreconditionFailed:
            pass
    s.expect("client: upload refused by a precondition", {}, refused)
    s.expect("client: delete", {"delete": 1}, lambda: bucket.blob("client/copy.txt").delete())


def counting(args, work):
    receiver = Receiver()
    rules = os.path.join(work, "storage.rules")
    with open(rules, "w") as f:
        f.write(RULES)
    secret = os.path.join(work, "secret")
    with open(secret, "wb") as f:
        f.write(SECRET + b"\n")
    proc, port, banner = start_silo(
        args.binary, "--data", os.path.join(work, "count-data"), "--rules", rules, "--emulator",
        "--event-webhook", f"http://127.0.0.1:{receiver.port}/hook", "--event-secret-file", secret)
    try:
        check("banner names the webhook", "events:  1 webhook" in banner, banner)
        s = Scenarios(port, receiver)
        status, _, _ = request(port, "POST", "/storage/v1/b?project=demo",
                               json.dumps({"name": VERSIONED, "versioning": {"enabled": True}}).encode(),
                               {**ADMIN, "Content-Type": "application/json"})
        check("versioned bucket created", status == 200, status)

        items, raw = s.expect("v0 upload", {"finalize": 1},
                              lambda: request(port, "POST", f"/v0/b/{BUCKET}/o?name=v0.txt", b"v0 bytes"))
        headers, body = raw[0]
        data = json.loads(body)
        check("binary mode attributes", headers.get("ce-specversion") == "1.0"
              and headers.get("ce-source") == f"//storage.googleapis.com/projects/_/buckets/{BUCKET}"
              and headers.get("ce-subject") == "objects/v0.txt" and headers.get("content-type") == "application/json"
              and headers.get("ce-id") and headers.get("ce-time", "").endswith("Z"), headers)
        check("data is the object resource", data.get("kind") == "storage#object" and data.get("bucket") == BUCKET
              and data.get("size") == "8" and data.get("md5Hash") and data.get("metageneration") == "1", data)

        s.expect("GCS JSON media upload", {"finalize": 1}, lambda: gcs_upload(port, BUCKET, "gcs.txt", b"gcs"))
        s.expect("XML PUT", {"finalize": 1},
                 lambda: request(port, "PUT", f"/{BUCKET}/xml.txt", b"xml bytes", {**ADMIN, "Content-Type": "text/plain"}))

        def gcs_resumable():
            status, headers, _ = request(
                port, "POST", f"/upload/storage/v1/b/{BUCKET}/o?uploadType=resumable&name=resumable.bin",
                json.dumps({"name": "resumable.bin"}).encode(), {**ADMIN, "Content-Type": "application/json"})
            path = urllib.parse.urlsplit(headers["Location"])
            path = path.path + "?" + path.query
            chunk = 256 * 1024
            body = os.urandom(2 * chunk + 10)
            request(port, "PUT", path, body[:chunk], {**ADMIN, "Content-Range": f"bytes 0-{chunk - 1}/*"})
            request(port, "PUT", path, body[chunk:], {**ADMIN, "Content-Range": f"bytes {chunk}-{len(body) - 1}/{len(body)}"})
        s.expect("GCS resumable upload in two chunks", {"finalize": 1}, gcs_resumable)

        def v0_resumable():
            _, headers, _ = request(port, "POST", f"/v0/b/{BUCKET}/o?name=v0-resumable.bin",
                                    headers={"X-Goog-Upload-Protocol": "resumable", "X-Goog-Upload-Command": "start"})
            path = urllib.parse.urlsplit(headers["X-Goog-Upload-URL"])
            path = path.path + "?" + path.query
            request(port, "POST", path, b"a" * 262144, {"X-Goog-Upload-Command": "upload", "X-Goog-Upload-Offset": "0"})
            request(port, "POST", path, b"b" * 10,
                    {"X-Goog-Upload-Command": "upload, finalize", "X-Goog-Upload-Offset": "262144"})
        s.expect("v0 resumable upload", {"finalize": 1}, v0_resumable)

        s.expect("folder placeholder (an object like any other)", {"finalize": 1},
                 lambda: gcs_upload(port, BUCKET, "folder/", b""))
        s.expect("overwrite without versioning", {"finalize": 1, "delete": 1},
                 lambda: gcs_upload(port, BUCKET, "gcs.txt", b"gcs again"))

        def denied():
            status, _, _ = request(port, "POST", f"/v0/b/{BUCKET}/o?name=denied/x.txt", b"nope")
            check("rules deny the upload", status == 403, status)
            status, _, _ = gcs_upload(port, BUCKET, "gcs.txt", b"stale", "&ifGenerationMatch=1")
            check("a failed precondition refuses the upload", status == 412, status)
        s.expect("denied and failed uploads", {}, denied)

        items, _ = s.expect("upload to the versioned bucket", {"finalize": 1},
                            lambda: gcs_upload(port, VERSIONED, "doc.txt", b"one"))
        first_generation = items[0][2]
        items, _ = s.expect("overwrite with versioning", {"finalize": 1, "archive": 1},
                            lambda: gcs_upload(port, VERSIONED, "doc.txt", b"two"))
        archived = [i for i in items if i[0] == "archive"]
        check("archive names the old generation", archived and archived[0][2] == first_generation, items)
        s.expect("delete of the live version with versioning", {"archive": 1},
                 lambda: request(port, "DELETE", f"/storage/v1/b/{VERSIONED}/o/doc.txt", headers=ADMIN))
        s.expect("delete of a noncurrent version", {"delete": 1},
                 lambda: request(port, "DELETE", f"/storage/v1/b/{VERSIONED}/o/doc.txt?generation={first_generation}",
                                 headers=ADMIN))

        s.expect("metadata PATCH (GCS)", {"metadataUpdate": 1},
                 lambda: request(port, "PATCH", f"/storage/v1/b/{BUCKET}/o/xml.txt",
                                 json.dumps({"metadata": {"k": "v"}}).encode(),
                                 {**ADMIN, "Content-Type": "application/json"}))
        s.expect("metadata update (v0)", {"metadataUpdate": 1},
                 lambda: request(port, "PATCH", f"/v0/b/{BUCKET}/o/v0.txt",
                                 json.dumps({"contentType": "text/markdown"}).encode(),
                                 {"Content-Type": "application/json"}))
        s.expect("copy", {"finalize": 1},
                 lambda: request(port, "POST", f"/storage/v1/b/{BUCKET}/o/xml.txt/copyTo/b/{BUCKET}/o/copy.txt", b"",
                                 ADMIN))
        s.expect("compose", {"finalize": 1},
                 lambda: request(port, "POST", f"/storage/v1/b/{BUCKET}/o/composed.txt/compose",
                                 json.dumps({"sourceObjects": [{"name": "xml.txt"}, {"name": "copy.txt"}]}).encode(),
                                 {**ADMIN, "Content-Type": "application/json"}))
        s.expect("delete (GCS)", {"delete": 1},
                 lambda: request(port, "DELETE", f"/storage/v1/b/{BUCKET}/o/copy.txt", headers=ADMIN))
        s.expect("delete (v0)", {"delete": 1}, lambda: request(port, "DELETE", f"/v0/b/{BUCKET}/o/composed.txt", headers=ADMIN))
        s.expect("delete (XML)", {"delete": 1}, lambda: request(port, "DELETE", f"/{BUCKET}/xml.txt", headers=ADMIN))

        client_scenarios(s, port)

        everything = receiver.accepted()
        bad = [h.get("ce-id") for h, b in everything
               if h.get("x-silo-signature") != "sha256=" + hmac.new(SECRET, b, hashlib.sha256).hexdigest()]
        check(f"every one of {len(everything)} requests carries a valid HMAC-SHA256 signature", not bad, bad)
        ids = [h.get("ce-id") for h, _ in everything]
        check("ids are unique across events", len(set(ids)) == len(ids), ids)
        print("counts:", counts(summarize(everything)), flush=True)

        # Retries: the receiver refuses twice; the event comes back with the same id.
        with receiver.lock:
            receiver.mode = "fail"
            receiver.fail_count = 2
        before = len(receiver.received)
        gcs_upload(port, BUCKET, "retried.txt", b"retry me")
        arrived = receiver.wait_for(lambda r: len(r) >= before + 3 and r[-1][2] == 200, timeout=30)
        attempts = receiver.received[before:]
        check("a refused event is retried until accepted", arrived and [a[2] for a in attempts] == [503, 503, 200],
              [a[2] for a in attempts])
        check("every attempt carries the same id", len({a[0].get("ce-id") for a in attempts}) == 1,
              [a[0].get("ce-id") for a in attempts])
        metrics_agree(port, receiver)
    finally:
        proc.kill()
        proc.wait()
        receiver.server.shutdown()


def scrape(port):
    """`/metrics` as {sample with labels: value}."""
    status, _, body = request(port, "GET", "/metrics")
    check("/metrics answers", status == 200, status)
    samples = {}
    for line in body.decode().splitlines():
        if line and not line.startswith("#"):
            key, _, value = line.rpartition(" ")
            samples[key] = float(value)
    return samples


def metrics_agree(port, receiver):
    """The delivery counters and the per-bucket counts /metrics reports match what the receiver and a listing see."""
    delivered = {h.get("ce-id") for h, _, status in receiver.received if status == 200}
    deadline = time.time() + 10
    while True:
        samples = scrape(port)
        if samples.get("silo_events_delivered_total") == len(delivered) or time.time() > deadline:
            break
        time.sleep(0.2)
    check("silo_events_delivered_total is the number of events the receiver accepted",
          samples.get("silo_events_delivered_total") == len(delivered),
          (samples.get("silo_events_delivered_total"), len(delivered)))
    check("silo_events_failed_attempts_total counts the two refused attempts",
          samples.get("silo_events_failed_attempts_total") == 2, samples.get("silo_events_failed_attempts_total"))
    check("nothing is pending", samples.get("silo_events_pending") == 0, samples.get("silo_events_pending"))
    for bucket in (BUCKET, VERSIONED):
        _, _, body = request(port, "GET", f"/storage/v1/b/{bucket}/o", headers=ADMIN)
        live = json.loads(body).get("items", [])
        _, _, body = request(port, "GET", f"/storage/v1/b/{bucket}/o?versions=true", headers=ADMIN)
        current = {(i["name"], i["generation"]) for i in live}
        noncurrent = [i for i in json.loads(body).get("items", []) if (i["name"], i["generation"]) not in current]
        got = (samples.get(f'silo_bucket_objects{{bucket="{bucket}"}}', 0),
               samples.get(f'silo_bucket_bytes{{bucket="{bucket}"}}', 0),
               samples.get(f'silo_bucket_noncurrent_objects{{bucket="{bucket}"}}', 0))
        want = (len(live), sum(int(i["size"]) for i in live), len(noncurrent))
        check(f"silo_bucket_* for {bucket} match a listing of its versions", got == want, (got, want))


def crash(args, work):
    receiver = Receiver()
    secret = os.path.join(work, "secret")
    data = os.path.join(work, "crash-data")
    flags = ["--data", data, "--event-webhook", f"http://127.0.0.1:{receiver.port}/hook", "--event-secret-file",
             secret, "--event-timeout", "1", "--event-concurrency", "2"]
    receiver.mode = "stall"
    proc, port, _ = start_silo(args.binary, *flags)
    names = [f"crash/obj-{i:02d}" for i in range(20)]
    try:
        for name in names:
            status, _, _ = request(port, "POST", f"/v0/b/{BUCKET}/o?name={q(name)}", name.encode())
            check(f"upload {name}", status == 200, status) if status != 200 else None
        # Deliveries are in flight (stalled) when the process dies.
        receiver.wait_for(lambda r: len(r) >= 1, timeout=20)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    except Exception:
        proc.kill()
        raise
    stalled = len(receiver.received)
    check("deliveries were in flight at the kill", stalled >= 1, stalled)
    with receiver.lock:
        receiver.mode = "ok"
    receiver.release.set()
    proc, port, _ = start_silo(args.binary, *flags)
    try:
        # Leases of the killed process run out (event timeout × batch + 5 s), then everything goes out.
        done = receiver.wait_for(
            lambda r: {json.loads(b)["name"] for h, b, s in r if s == 200} >= set(names), timeout=60)
        accepted = receiver.accepted()
        delivered = {json.loads(b)["name"] for _, b in accepted}
        check(f"after kill -9 and restart all {len(names)} finalize events arrive", done and delivered >= set(names),
              sorted(set(names) - delivered))
        by_name = {}
        for h, b in [(h, b) for h, b, _ in receiver.received]:
            by_name.setdefault(json.loads(b)["name"], set()).add(h.get("ce-id"))
        check("an event sent more than once kept its id", all(len(ids) == 1 for ids in by_name.values()), by_name)
        duplicates = len(receiver.received) - len(by_name)
        print(f"crash: {len(names)} events, {stalled} attempts stalled at the kill, "
              f"{len(receiver.received)} requests in all ({duplicates} repeats, same ids)", flush=True)
    finally:
        proc.kill()
        proc.wait()
        receiver.server.shutdown()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", default=".build/release/silo")
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="silo-events-test-")
    try:
        with open(os.path.join(work, "secret"), "wb") as f:
            f.write(SECRET + b"\n")
        counting(args, work)
        crash(args, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"{'FAILED: ' + ', '.join(failures) if failures else 'all passed'}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
