"""The Firebase emulator's control surface on a live `silo serve`: `PUT /internal/setRules`, `POST /internal/export`,
`POST /internal/reset`, `--rules BUCKET=FILE`, and firebase.json with .firebaserc. The requests are the ones
firebase-tools' hub and `@firebase/rules-unit-testing` send (initializeTestEnvironment's setRules, clearStorage's
list-and-delete as the `owner`, authenticatedContext's unsigned mock tokens), written here as plain HTTP."""
import argparse
import base64
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from silo_process import request, start_silo  # noqa: E402

results = []


def check(name, condition, detail=""):
    results.append((name, bool(condition)))
    print(("ok   " if condition else "FAIL ") + name + ("" if condition else f": {detail}"), flush=True)


RULES = "rules_version = '2';\nservice firebase.storage {{\n  match /b/{{bucket}}/o/{{p=**}} {{\n    {}\n  }}\n}}\n"
OPEN = RULES.format("allow read, write;")
CLOSED = RULES.format("allow read, write: if false;")
PUBLIC_READ = RULES.format("allow read;")
SIGNED_IN = RULES.format("allow read: if request.auth != null; allow write: if request.auth.uid == 'alice';")
JSON = {"Content-Type": "application/json"}
OWNER = {"Authorization": "Firebase owner"}


def mock_token(uid, project="demo-project"):
    """An unsigned token as the JS SDK's emulator helpers make one for a mock user (alg none, empty signature)."""
    enc = lambda obj: base64.urlsafe_b64encode(json.dumps(obj).encode()).rstrip(b"=").decode()  # noqa: E731
    now = int(time.time())
    claims = {"iss": f"https://securetoken.google.com/{project}", "aud": project, "iat": now, "exp": now + 3600,
              "auth_time": now, "sub": uid, "user_id": uid, "firebase": {"sign_in_provider": "custom", "identities": {}}}
    return enc({"alg": "none", "type": "JWT"}) + "." + enc(claims) + "."


def set_rules(port, files, headers=None):
    status, _, body = request(port, "PUT", "/internal/setRules", json.dumps({"rules": {"files": files}}).encode(),
                              {**JSON, **(headers or {})})
    return status, body


def message(body):
    try:
        return json.loads(body).get("message")
    except ValueError:
        return None


def upload(port, bucket, name, data=b"x", headers=None):
    return request(port, "POST", f"/v0/b/{bucket}/o?name={name}", data, headers)[0]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def set_rules_checks(binary, work):
    proc, port, _ = start_silo(binary, "--data", os.path.join(work, "d1"))
    try:
        status, body = request(port, "PUT", "/internal/setRules", b"{}", JSON)[::2]
        check("setRules without rules.files: 400 with firebase-tools' message",
              status == 400 and message(body) == "Request body must include 'rules.files' array", (status, body))
        status, body = set_rules(port, [])
        check("setRules with an empty rules.files: the same 400",
              status == 400 and message(body) == "Request body must include 'rules.files' array", (status, body))
        status, body = set_rules(port, [{"name": "storage.rules"}])
        check("setRules with a file without content: 400 naming name and content",
              status == 400 and message(body) == "Each member of 'rules.files' array must contain 'name' and 'content'",
              (status, body))
        status, body = set_rules(port, [{"name": "a", "content": OPEN, "resource": "bucket-a"},
                                        {"name": "b", "content": OPEN}])
        check("setRules with several files, one without resource: 400 naming resource",
              status == 400 and message(body)
              == "Each member of 'rules.files' array must contain 'name', 'content', and 'resource'", (status, body))

        # initializeTestEnvironment({storage: {rules}}): one file named storage.rules, no credentials.
        status, body = set_rules(port, [{"name": "storage.rules", "content": SIGNED_IN}])
        check("setRules as rules-unit-testing sends it: 200 Rules updated successfully",
              status == 200 and message(body) == "Rules updated successfully", (status, body))
        bucket = "demo-project"  # the test environment's storage() bucket is gs://PROJECT
        check("the rules set are enforced: an unauthenticated upload is refused",
              upload(port, bucket, "a.txt") == 403)
        alice = {"Authorization": "Firebase " + mock_token("alice")}
        bob = {"Authorization": "Firebase " + mock_token("bob")}
        check("authenticatedContext('alice') may write", upload(port, bucket, "a.txt", b"alice", alice) == 200)
        check("authenticatedContext('bob') may not", upload(port, bucket, "b.txt", b"bob", bob) == 403)
        check("withSecurityRulesDisabled (owner) may write", upload(port, bucket, "c.txt", b"owner", OWNER) == 200)
        check("owner may write nested", upload(port, bucket, "dir%2Fd.txt", b"nested", OWNER) == 200)

        status, body = set_rules(port, [{"name": "storage.rules", "content": "service firebase.storage { match"}])
        check("rules that do not compile: 400 with firebase-tools' message",
              status == 400 and message(body) == "There was an error updating rules, see logs for more details",
              (status, body))
        check("rules that do not compile keep the rules before", upload(port, bucket, "e.txt", b"x", alice) == 200
              and upload(port, bucket, "e.txt", b"x", bob) == 403)

        # Replayed answers follow the rules: a public object read again and again, then rules that close it.
        set_rules(port, [{"name": "storage.rules", "content": PUBLIC_READ}])
        path = f"/v0/b/{bucket}/o/a.txt?alt=media"
        reads = [request(port, "GET", path)[0] for _ in range(5)]
        check("public reads are allowed", reads == [200] * 5, reads)
        set_rules(port, [{"name": "storage.rules", "content": CLOSED}])
        reads = [request(port, "GET", path)[0] for _ in range(5)]
        check("after setRules closes it, every read (replayed or not) is refused", reads == [403] * 5, reads)

        # clearStorage(): as the owner, list the bucket's root and delete each item.
        status, _, body = request(port, "GET", f"/v0/b/{bucket}/o?prefix=&delimiter=%2F")
        check("listing without credentials is refused by the rules", status == 403, status)
        status, _, body = request(port, "GET", f"/v0/b/{bucket}/o?prefix=&delimiter=%2F", headers=OWNER)
        items = [item["name"] for item in json.loads(body).get("items", [])] if status == 200 else []
        check("clearStorage's listAll as the owner", status == 200 and sorted(items) == ["a.txt", "c.txt", "e.txt"],
              (status, body[:300]))
        deletes = [request(port, "DELETE", f"/v0/b/{bucket}/o/{name}", headers=OWNER)[0] for name in items]
        check("clearStorage's deletes as the owner", deletes == [204] * len(items), deletes)
        status, _, body = request(port, "GET", f"/v0/b/{bucket}/o?prefix=&delimiter=%2F", headers=OWNER)
        check("after clearStorage the root lists no items", status == 200 and json.loads(body).get("items", []) == [],
              body[:300])

        # One file per bucket: each bucket its own rules; a bucket no file names is refused but to the owner.
        status, body = set_rules(port, [{"name": "a.rules", "content": OPEN, "resource": "bucket-open"},
                                        {"name": "b.rules", "content": CLOSED, "resource": "bucket-closed"}])
        check("setRules with one file per bucket", status == 200, (status, body))
        check("the open bucket's rules allow", upload(port, "bucket-open", "x.txt") == 200)
        check("the closed bucket's rules refuse", upload(port, "bucket-closed", "x.txt") == 403)
        check("a bucket no file names is refused", upload(port, "bucket-other", "x.txt") == 403)
        check("... but not to the owner", upload(port, "bucket-other", "x.txt", b"x", OWNER) == 200)
        check("GET /internal/setRules names no route", request(port, "GET", "/internal/setRules")[0] == 404)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)

    # Outside emulator mode the endpoint is the admin's, as /internal/reset is.
    rules = os.path.join(work, "closed.rules")
    with open(rules, "w") as f:
        f.write(CLOSED)
    keys = os.path.join(work, "admin.keys")
    with open(keys, "w") as f:
        f.write("admin-key-0123456789abcdef\n")
    proc, port, _ = start_silo(binary, "--data", os.path.join(work, "d2"), "--rules", rules, "--admin-key-file", keys)
    try:
        admin = {"Authorization": "Bearer admin-key-0123456789abcdef"}
        status = request(port, "POST", "/storage/v1/b?project=p", json.dumps({"name": "b1-secured"}).encode(),
                         {**JSON, **admin})[0]
        check("secured mode: the admin makes a bucket", status == 200, status)
        check("secured mode: the file's rules refuse an anonymous upload", upload(port, "b1-secured", "x.txt") == 403)
        status, body = set_rules(port, [{"name": "storage.rules", "content": OPEN}])
        check("secured mode: setRules without the admin key is refused", status == 403, (status, body))
        check("secured mode: ... and the rules are unchanged", upload(port, "b1-secured", "x.txt") == 403)
        status, body = set_rules(port, [{"name": "storage.rules", "content": OPEN}], admin)
        check("secured mode: setRules with the admin key", status == 200, (status, body))
        check("secured mode: the rules set apply", upload(port, "b1-secured", "x.txt") == 200)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)


def export_checks(binary, work):
    proc, port, _ = start_silo(binary, "--data", os.path.join(work, "d3"))
    try:
        status, _, body = request(port, "POST", "/internal/export", json.dumps({"initiatedBy": "test"}).encode(), JSON)
        check("export without path: 400 with firebase-tools' message",
              status == 400 and body == b"Export request body must include 'path'.", (status, body))
        upload(port, "bucket-one", "a%2Fb.txt", b"first object")
        status, _, meta = request(port, "POST", "/v0/b/bucket-two/o?name=c.bin", b"\x00\x01binary",
                                  {"Content-Type": "application/octet-stream"})
        token = json.loads(meta).get("downloadTokens") if status == 200 else None
        target = os.path.join(work, "export", "storage_export")
        os.makedirs(target)  # the hub makes it, and may leave something in it
        with open(os.path.join(target, "stale"), "w") as f:
            f.write("old")
        status, _, body = request(port, "POST", "/internal/export",
                                  json.dumps({"path": target, "initiatedBy": "export"}).encode(), JSON)
        check("export: 200", status == 200, (status, body))
        with open(os.path.join(target, "buckets.json")) as f:
            buckets = sorted(b["id"] for b in json.load(f)["buckets"])
        check("buckets.json lists every bucket", {"bucket-one", "bucket-two"} <= set(buckets), buckets)
        check("what the directory held before is gone (swapped in whole)", not os.path.exists(os.path.join(target, "stale")))
        files = os.listdir(os.path.join(target, "metadata"))
        metas = {}
        for name in files:
            with open(os.path.join(target, "metadata", name)) as f:
                m = json.load(f)
            with open(os.path.join(target, "blobs", name[:-5]), "rb") as f:
                metas[(m["bucket"], m["name"])] = (m, f.read())
        check("one metadata file and one blob per object",
              set(metas) == {("bucket-one", "a/b.txt"), ("bucket-two", "c.bin")}, sorted(metas))
        m, data = metas.get(("bucket-two", "c.bin"), ({}, b""))
        check("the blob holds the object's bytes", data == b"\x00\x01binary", data)
        check("the metadata has the emulator's fields", m.get("size") == 8 and m.get("downloadTokens") == [token]
              and m.get("crc32c", "").isdigit() and m.get("contentType") == "application/octet-stream", m)
        check("no temporary directory is left beside it",
              os.listdir(os.path.dirname(target)) == ["storage_export"], os.listdir(os.path.dirname(target)))

    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)

    # The export is the layout --import reads: a new server serves the same objects and download token.
    proc, port, banner = start_silo(binary, "--data", os.path.join(work, "d4"), "--import", target)
    try:
        for _ in range(100):  # the import runs once the listener is up, after the banner
            status, _, body = request(port, "GET", f"/v0/b/bucket-two/o/c.bin?alt=media&token={token}")
            if status == 200:
                break
            time.sleep(0.1)
        check("the export imports back", status == 200 and body == b"\x00\x01binary", (status, body[:80], banner))
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)


def reset_checks(binary, work):
    proc, port, _ = start_silo(binary, "--data", os.path.join(work, "d9"))
    try:
        upload(port, "bucket-two", "c.bin")
        # Reset: as if freshly started: no objects, and the default bucket exists again.
        status = request(port, "POST", "/internal/reset")[0]
        check("reset: 200", status == 200, status)
        check("after reset the objects are gone", request(port, "GET", "/v0/b/bucket-two/o/c.bin")[0] == 404)
        status = request(port, "GET", "/storage/v1/b/demo-project.appspot.com")[0]
        check("after reset the default bucket exists, as at startup", status == 200, status)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)


def per_bucket_rules_checks(binary, work):
    open_rules, closed_rules = os.path.join(work, "open.rules"), os.path.join(work, "default.rules")
    with open(open_rules, "w") as f:
        f.write(OPEN)
    with open(closed_rules, "w") as f:
        f.write(CLOSED)
    proc, port, banner = start_silo(binary, "--data", os.path.join(work, "d5"), "--emulator",
                                    "--rules", f"bucket-open={open_rules}", "--rules", closed_rules)
    try:
        check("the banner names each rules file with its bucket", f"bucket-open={open_rules}" in banner, banner)
        check("--rules BUCKET=FILE applies to that bucket", upload(port, "bucket-open", "x.txt") == 200)
        check("--rules FILE applies to the others", upload(port, "bucket-else", "x.txt") == 403)
        time.sleep(1.1)  # a new mtime second
        with open(closed_rules, "w") as f:
            f.write(OPEN)
        for _ in range(50):
            status = upload(port, "bucket-else", "x.txt")
            if status == 200:
                break
            time.sleep(0.1)
        check("a change of one rules file is picked up", status == 200, status)
        with open(open_rules, "w") as f:
            f.write(CLOSED)
        proc.send_signal(signal.SIGHUP)
        for _ in range(50):
            status = upload(port, "bucket-open", "y.txt")
            if status == 403:
                break
            time.sleep(0.1)
        check("SIGHUP reloads every rules file", status == 403, status)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)


def write(path, text):
    with open(path, "w") as f:
        f.write(text if isinstance(text, str) else json.dumps(text))


def firebase_json_checks(binary, work):
    project = os.path.join(work, "project")
    os.makedirs(project)
    port = free_port()
    write(os.path.join(project, "main.rules"), OPEN)
    write(os.path.join(project, "other.rules"), CLOSED)
    write(os.path.join(project, "firebase.json"), {
        "storage": [{"target": "main", "rules": "main.rules"}, {"target": "other", "rules": "other.rules"}],
        "emulators": {"storage": {"host": "127.0.0.1", "port": port}}})
    write(os.path.join(project, ".firebaserc"), {
        "projects": {"default": "proj-x"},
        "targets": {"proj-x": {"storage": {"main": ["bucket-main"], "other": ["bucket-other", "bucket-other2"]}}}})
    proc = subprocess.Popen([binary, "serve", "--data", os.path.join(work, "d6")], cwd=project,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        banner = ""
        for _ in range(40):
            line = proc.stdout.readline()
            banner += line
            if "useEmulator" in line or not line:
                break
        check("firebase.json's emulators.storage.port is used", f"127.0.0.1:{port}" in banner, banner)
        check("the banner says firebase.json was found", "firebase.json" in banner and "proj-x" in banner, banner)
        check("a target's rules apply to its bucket", upload(port, "bucket-main", "x.txt") == 200)
        check("another target's rules to each of its buckets", upload(port, "bucket-other", "x.txt") == 403
              and upload(port, "bucket-other2", "x.txt") == 403)
        check("unsigned emulator tokens are accepted (emulator mode)",
              upload(port, "bucket-other", "x.txt", b"x", OWNER) == 200)
        check(".firebaserc's default project names the default bucket",
              request(port, "GET", "/storage/v1/b/proj-x.appspot.com")[0] == 200)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)

    # Flags win: --port and --rules over the file's.
    proc, port2, banner = start_silo(binary, "--data", os.path.join(work, "d7"), "--rules",
                                     os.path.join(project, "other.rules"), "--emulator", cwd=project)
    try:
        check("--port wins over firebase.json", port2 != port, banner)
        check("--rules wins over firebase.json", upload(port2, "bucket-main", "x.txt") == 403)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)

    def refused(config, rc, needle, name):
        folder = tempfile.mkdtemp(dir=work)
        write(os.path.join(folder, "x.rules"), OPEN)
        write(os.path.join(folder, "firebase.json"), config)
        if rc is not None:
            write(os.path.join(folder, ".firebaserc"), rc)
        out = subprocess.run([binary, "serve", "--port", "0", "--data", os.path.join(work, "d8"),
                              "--firebase-json", os.path.join(folder, "firebase.json")],
                             capture_output=True, text=True, timeout=30)
        check(name, out.returncode != 0 and "firebase.json" in out.stderr and needle in out.stderr,
              (out.returncode, out.stderr[-400:]))

    refused("{ not json", None, "not a JSON object", "malformed firebase.json stops startup, naming the file")
    refused({"storage": {"rules": "missing.rules"}}, None, "storage.rules",
            "a missing rules file stops startup, naming the field")
    refused({"storage": [{"target": "main", "rules": "x.rules"}]},
            {"projects": {"default": "p1"}, "targets": {"p1": {"storage": {}}}}, "storage[0].target",
            "a target with no bucket stops startup, naming the field")
    refused({"emulators": {"storage": {"port": "many"}}}, None, "emulators.storage.port",
            "a bad port stops startup, naming the field")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", default=".build/release/silo")
    args = parser.parse_args()
    binary = os.path.abspath(args.binary)
    work = tempfile.mkdtemp(prefix="silo-emulator-control-")
    try:
        for section in (set_rules_checks, export_checks, reset_checks, per_bucket_rules_checks, firebase_json_checks):
            try:
                section(binary, work)
            except Exception as error:  # one section's crash fails it, and the others still run
                check(section.__name__ + " ran to the end", False, repr(error))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    failed = sum(1 for _, ok in results if not ok)
    print(f"{len(results) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
