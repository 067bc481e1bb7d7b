"""Starts one `silo serve` on a free loopback port for the session and points the GCS clients at it."""
import os
import re
import shutil
import subprocess
import tempfile
import threading
import time

import pytest

# gcsfs's experimental zonal/HNS support probes each bucket over gRPC (60 s timeouts against any non-Google host).
os.environ.setdefault("GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT", "false")

BINARY = os.environ.get("SILO_BINARY", os.path.join(os.path.dirname(__file__), "..", "..", ".build", "release", "silo"))


@pytest.fixture(scope="session")
def silo():
    data = tempfile.mkdtemp(prefix="silo-gcs-")
    proc = subprocess.Popen([BINARY, "serve", "--port", "0", "--data", data], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True)
    port = None
    deadline = time.time() + 30
    while time.time() < deadline and port is None:
        line = proc.stdout.readline()
        m = re.search(r"http://127\.0\.0\.1:(\d+)", line or "")
        if m:
            port = int(m.group(1))
    if port is None:
        proc.kill()
        raise RuntimeError("silo serve did not start")
    threading.Thread(target=proc.stdout.read, daemon=True).start()
    endpoint = f"http://127.0.0.1:{port}"
    os.environ["STORAGE_EMULATOR_HOST"] = endpoint
    yield endpoint
    proc.terminate()
    proc.wait(timeout=30)
    shutil.rmtree(data, ignore_errors=True)


@pytest.fixture
def client(silo):
    from google.auth.credentials import AnonymousCredentials
    from google.cloud import storage
    return storage.Client(project="demo", credentials=AnonymousCredentials(), client_options={"api_endpoint": silo})


@pytest.fixture
def bucket(client, request):
    name = "t-" + re.sub(r"[^a-z0-9]", "-", request.node.name.lower())[:50].strip("-")
    return client.bucket(name)
