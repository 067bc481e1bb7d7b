"""A Silo that is not in emulator mode, for tests of what anonymous callers may do: Security Rules that deny
everything (so no emulator fallback) and one admin key, which sets things up through the XML API."""
import contextlib
import os
import shutil
import tempfile

from conftest import BINARY
from silo_process import request, start_silo

RULES = """rules_version = '2';
service firebase.storage { match /b/{bucket}/o { match /{all=**} { allow read, write: if false; } } }
"""
ADMIN_KEY = "client-matrix-admin-key-0123456789abcdef"
ADMIN = {"Authorization": "Bearer " + ADMIN_KEY}


@contextlib.contextmanager
def secured_silo():
    """Yields the port of a secured Silo with a bucket `xml-public` holding `open.txt` (public-read, bytes
    `open`) and `closed.txt` (private, bytes `closed`)."""
    folder = tempfile.mkdtemp(prefix="silo-secured-")
    rules, keys = os.path.join(folder, "storage.rules"), os.path.join(folder, "admin.keys")
    with open(rules, "w") as f:
        f.write(RULES)
    with open(keys, "w") as f:
        f.write(ADMIN_KEY + "\n")
    proc, port, _ = start_silo(BINARY, "--data", os.path.join(folder, "data"), "--rules", rules,
                               "--admin-key-file", keys)
    try:
        assert request(port, "PUT", "/xml-public", headers=ADMIN)[0] == 200
        assert request(port, "PUT", "/xml-public/open.txt", body=b"open",
                       headers={**ADMIN, "x-goog-acl": "public-read"})[0] == 200
        assert request(port, "PUT", "/xml-public/closed.txt", body=b"closed", headers=ADMIN)[0] == 200
        yield port
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        shutil.rmtree(folder, ignore_errors=True)
