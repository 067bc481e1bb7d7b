"""Starts one `silo serve` on a free loopback port for the session and points the GCS clients at it."""
import os
import re
import shutil
import sys
import tempfile

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from silo_process import start_silo  # noqa: E402

# gcsfs's experimental zonal/HNS support probes each bucket over gRPC (60 s timeouts against any non-Google host).
os.environ.setdefault("GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT", "false")

BINARY = os.environ.get("SILO_BINARY", os.path.join(os.path.dirname(__file__), "..", "..", ".build", "release", "silo"))


@pytest.fixture(scope="session")
def silo():
    data = tempfile.mkdtemp(prefix="silo-gcs-")
    # SILO_GCS_METADATA=postgres://… runs the same tests with metadata on PostgreSQL (`make gcs-postgres`).
    metadata = os.environ.get("SILO_GCS_METADATA")
    proc, port, _ = start_silo(BINARY, "--data", data, *(["--metadata", metadata] if metadata else []))
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
    # GCS answers 404 for a bucket that was never created, and so does Silo's GCS API: make it first.
    name = "t-" + re.sub(r"[^a-z0-9]", "-", request.node.name.lower())[:50].strip("-")
    bucket = client.bucket(name)
    if not bucket.exists():
        client.create_bucket(name)
    return bucket
