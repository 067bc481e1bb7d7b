"""The client matrix (issue 15 item 6): each real client doing its users' everyday workflow against a live Silo.

Fixtures shared by every client's module:
- `silo`: one `silo serve` for the session in emulator mode (GCS clients need no credentials), on a free port;
- `tls`: the same server behind a TLS listener (nginx terminating TLS with a CA this fixture makes), for clients that
  insist on https (gsutil); `tls.ca` is the CA bundle to trust;
- `bucket_name`: a fresh bucket per test, created through the JSON API.
"""
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from silo_process import make_ca_and_cert, request, start_silo  # noqa: E402

BINARY = os.environ.get("SILO_BINARY", os.path.join(os.path.dirname(__file__), "..", "..", ".build", "release", "silo"))
# gcsfs's experimental zonal/HNS support probes each bucket over gRPC (60 s timeouts against any non-Google host).
os.environ.setdefault("GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT", "false")


@dataclass
class Silo:
    port: int
    data: str
    banner: str

    @property
    def endpoint(self):
        return f"http://127.0.0.1:{self.port}"


@pytest.fixture(scope="session")
def silo():
    data = tempfile.mkdtemp(prefix="silo-clients-")
    extra = os.environ.get("SILO_CLIENTS_ARGS", "").split()
    # The `tls` fixture's nginx, on this machine's loopback, is the proxy whose X-Forwarded-Proto counts.
    proc, port, banner = start_silo(BINARY, "--data", data, "--trusted-proxies", "127.0.0.1", *extra)
    yield Silo(port, data, banner)
    proc.terminate()
    proc.wait(timeout=30)
    shutil.rmtree(data, ignore_errors=True)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class TLS:
    port: int
    ca: str

    @property
    def endpoint(self):
        return f"https://localhost:{self.port}"


@pytest.fixture(scope="session")
def tls(silo):
    folder = tempfile.mkdtemp(prefix="silo-tls-")
    ca, crt, key = make_ca_and_cert(folder)
    port = free_port()
    conf = os.path.join(folder, "nginx.conf")
    with open(conf, "w") as f:
        f.write(f"""
daemon off; worker_processes 1; pid {folder}/nginx.pid; error_log {folder}/error.log warn;
events {{ worker_connections 256; }}
http {{
  access_log off; client_body_temp_path {folder}/body; proxy_temp_path {folder}/proxy;
  fastcgi_temp_path {folder}/fcgi; uwsgi_temp_path {folder}/uwsgi; scgi_temp_path {folder}/scgi;
  server {{
    listen 127.0.0.1:{port} ssl; ssl_certificate {crt}; ssl_certificate_key {key};
    client_max_body_size 0; proxy_request_buffering off; proxy_buffering off;
    location / {{
      proxy_pass http://127.0.0.1:{silo.port}; proxy_http_version 1.1;
      proxy_set_header Host $http_host; proxy_set_header X-Forwarded-Proto https;
      proxy_set_header Connection ""; proxy_read_timeout 300s;
    }}
  }}
}}
""")
    proc = subprocess.Popen(["nginx", "-c", conf, "-p", folder], stderr=subprocess.PIPE)
    deadline = time.time() + 20
    while time.time() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            if proc.poll() is not None:
                raise RuntimeError("nginx exited: " + proc.stderr.read().decode()[-2000:])
            time.sleep(0.1)
    yield TLS(port, ca)
    proc.terminate()
    proc.wait(timeout=30)
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def bucket_name(silo, request):
    # Per module and test: every client's module may have its own `test_everyday_workflow`.
    label = request.module.__name__.removeprefix("test_") + "-" + request.node.name.removeprefix("test_")
    name = "c-" + re.sub(r"[^a-z0-9]", "-", label.lower())[:50].strip("-")
    status, _, body = request_json(silo, "POST", "/storage/v1/b?project=demo", {"name": name})
    assert status in (200, 409), body
    return name


def request_json(silo, method, path, value):
    import json
    return request(silo.port, method, path, body=json.dumps(value).encode(),
                   headers={"Content-Type": "application/json"})
