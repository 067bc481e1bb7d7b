"""Starts `silo serve` secured (rules, an admin key; not emulator mode) with an access log, for the /metrics tests."""
import json
import os
import shutil
import sys
import tempfile

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from silo_process import request, start_silo  # noqa: E402

BINARY = os.environ.get("SILO_BINARY", os.path.join(os.path.dirname(__file__), "..", "..", ".build", "release", "silo"))
ADMIN_KEY = "metrics-tests-admin-key-0123456789abcdef"
ADMIN = {"Authorization": "Bearer " + ADMIN_KEY}
BUCKET = "metrics-test.appspot.com"
# Public reads and writes under public/, everything else denied: the rules engine decides, so its counters move.
RULES = """rules_version = '2';
service firebase.storage {
  match /b/{bucket}/o {
    match /public/{name=**} { allow read, write: if true; }
    match /private/{name=**} { allow read, write: if request.auth.uid == 'nobody'; }
  }
}
"""


class Silo:
    def __init__(self, port, folder, proc):
        self.port = port
        self.proc = proc
        self.folder = folder
        self.key_file = os.path.join(folder, "admin.keys")
        self.access_log = os.path.join(folder, "access.log")

    def request(self, method, path, body=b"", headers=None):
        return request(self.port, method, path, body=body, headers=headers)

    def scrape(self):
        status, headers, body = self.request("GET", "/metrics", headers=ADMIN)
        assert status == 200, body
        assert headers["Content-Type"].startswith("text/plain; version=0.0.4")
        return body.decode()

    def log_lines(self):
        with open(self.access_log) as f:
            return [json.loads(line) for line in f]


@pytest.fixture(scope="module")
def silo():
    folder = tempfile.mkdtemp(prefix="silo-metrics-")
    with open(os.path.join(folder, "storage.rules"), "w") as f:
        f.write(RULES)
    with open(os.path.join(folder, "admin.keys"), "w") as f:
        f.write(ADMIN_KEY + "\n")
    proc, port, _ = start_silo(BINARY, "--data", os.path.join(folder, "data"), "--bucket", BUCKET,
                               "--rules", os.path.join(folder, "storage.rules"),
                               "--admin-key-file", os.path.join(folder, "admin.keys"),
                               "--access-log", os.path.join(folder, "access.log"))
    try:
        yield Silo(port, folder, proc)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        shutil.rmtree(folder, ignore_errors=True)
