"""`silo serve --tls-cert/--tls-key` against real clients with a CA made for the run (docs/tls.md): curl,
google-cloud-storage (the CA trusted through REQUESTS_CA_BUNDLE), gsutil (JSON and XML), `silo cp` (--ca-file and SSL_CERT_FILE), reload on
SIGHUP (a new connection is served the new certificate, an open one carries on, a bad new certificate keeps the
old), and the flags refused where they cannot work."""
import http.client
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from silo_process import make_ca_and_cert, start_silo  # noqa: E402

BINARY = os.environ.get("SILO_BINARY", os.path.join(os.path.dirname(__file__), "..", "..", ".build", "release", "silo"))


class Server:
    def __init__(self, folder):
        self.folder = folder
        self.ca, first_crt, first_key = make_ca_and_cert(folder, serial=0x1001, name="first")
        self.crt, self.key = os.path.join(folder, "live.crt"), os.path.join(folder, "live.key")
        shutil.copy(first_crt, self.crt)
        shutil.copy(first_key, self.key)
        self.log_path = os.path.join(folder, "silo.log")
        self.log = open(self.log_path, "w")
        self.proc, self.port, self.banner = start_silo(
            BINARY, "--data", os.path.join(folder, "data"), "--tls-cert", self.crt, "--tls-key", self.key,
            stderr=self.log)

    @property
    def endpoint(self):
        return f"https://127.0.0.1:{self.port}"

    def install(self, serial):
        crt, key = make_ca_and_cert(self.folder, serial=serial, name=f"s{serial}",
                                    ca=(self.ca, os.path.join(self.folder, "ca.key")))[1:]
        shutil.copy(crt, self.crt)
        shutil.copy(key, self.key)

    def context(self):
        return ssl.create_default_context(cafile=self.ca)

    def served_serial(self):
        """The serial number (an int) of the certificate a new connection is served."""
        with socket.create_connection(("127.0.0.1", self.port), timeout=10) as raw:
            with self.context().wrap_socket(raw, server_hostname="localhost") as tls:
                der = tls.getpeercert(binary_form=True)
        text = subprocess.run(["openssl", "x509", "-inform", "DER", "-noout", "-serial"], input=der,
                              capture_output=True, check=True).stdout.decode()
        return int(text.strip().split("=")[1], 16)

    def log_text(self):
        self.log.flush()
        with open(self.log_path) as f:
            return f.read()

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=30)
        self.log.close()


@pytest.fixture(scope="module")
def server():
    folder = tempfile.mkdtemp(prefix="silo-tls-")
    s = Server(folder)
    yield s
    s.stop()
    shutil.rmtree(folder, ignore_errors=True)


def test_banner_says_https(server):
    assert f"https://127.0.0.1:{server.port}" in server.banner


def test_curl_uploads_and_downloads(server, tmp_path):
    body = os.urandom(3 << 20)
    source = tmp_path / "up.bin"
    source.write_bytes(body)
    upload = subprocess.run(
        ["curl", "-sS", "--fail", "--cacert", server.ca, "-X", "POST", "--data-binary", f"@{source}",
         "-H", "Content-Type: application/octet-stream",
         f"https://localhost:{server.port}/v0/b/demo-project.appspot.com/o?name=curl%2Fup.bin"],
        capture_output=True, check=True)
    assert json.loads(upload.stdout)["size"] == str(len(body))
    down = tmp_path / "down.bin"
    subprocess.run(
        ["curl", "-sS", "--fail", "--cacert", server.ca, "-o", str(down),
         f"https://localhost:{server.port}/v0/b/demo-project.appspot.com/o/curl%2Fup.bin?alt=media"],
        check=True)
    assert down.read_bytes() == body
    # Without the CA the client refuses the certificate.
    refused = subprocess.run(["curl", "-sS", f"https://localhost:{server.port}/"], capture_output=True)
    assert refused.returncode == 60, refused.stderr


def test_google_cloud_storage(server, monkeypatch):
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", server.ca)
    from google.auth.credentials import AnonymousCredentials
    from google.cloud import storage

    client = storage.Client(project="demo", credentials=AnonymousCredentials(),
                            client_options={"api_endpoint": server.endpoint})
    bucket = client.create_bucket("tls-gcs")
    small = bucket.blob("small.txt")
    small.upload_from_string(b"hello over tls")
    # Past the 8 MiB threshold with a chunk size: a resumable upload in several chunks.
    big = bucket.blob("big.bin", chunk_size=4 << 20)
    data = os.urandom(9 << 20)
    big.upload_from_string(data)
    assert bucket.blob("small.txt").download_as_bytes() == b"hello over tls"
    assert bucket.blob("big.bin").download_as_bytes() == data
    assert sorted(b.name for b in client.list_blobs("tls-gcs")) == ["big.bin", "small.txt"]


def test_silo_cp(server, tmp_path):
    source = tmp_path / "cp.bin"
    source.write_bytes(os.urandom(1 << 20) + b"end")
    env = dict(os.environ, SILO_ENDPOINT=server.endpoint)
    subprocess.run([BINARY, "cp", "--ca-file", server.ca, str(source), "gs://demo-project.appspot.com/cp/cp.bin"],
                   check=True, env=env, capture_output=True)
    back = tmp_path / "back.bin"
    # The CA through SSL_CERT_FILE this time.
    subprocess.run([BINARY, "cp", "gs://demo-project.appspot.com/cp/cp.bin", str(back)], check=True,
                   env=dict(env, SSL_CERT_FILE=server.ca), capture_output=True)
    assert back.read_bytes() == source.read_bytes()
    refused = subprocess.run([BINARY, "ls", "gs://demo-project.appspot.com/"], env=env, capture_output=True,
                             text=True)
    assert refused.returncode != 0


def test_sighup_reloads_for_new_connections_and_keeps_open_ones(server):
    assert server.served_serial() == 0x1001
    open_connection = http.client.HTTPSConnection("localhost", server.port, context=server.context(), timeout=10)

    def get(conn):
        conn.request("GET", "/v0/b/demo-project.appspot.com/o")
        response = conn.getresponse()
        response.read()
        return response.status

    assert get(open_connection) == 200
    server.install(0x1002)
    server.proc.send_signal(signal.SIGHUP)
    deadline = time.time() + 20
    while server.served_serial() != 0x1002 and time.time() < deadline:
        time.sleep(0.1)
    assert server.served_serial() == 0x1002
    assert "tls certificate reloaded" in server.log_text()
    # The connection opened before the reload is still served.
    assert get(open_connection) == 200

    # A bad new certificate: refused, logged, the one in service stays.
    with open(server.crt, "w") as f:
        f.write("-----BEGIN CERTIFICATE-----\nnot base64\n")
    server.proc.send_signal(signal.SIGHUP)
    deadline = time.time() + 20
    while "tls certificate not reloaded" not in server.log_text() and time.time() < deadline:
        time.sleep(0.1)
    assert "tls certificate not reloaded" in server.log_text()
    assert server.served_serial() == 0x1002
    assert get(open_connection) == 200
    open_connection.close()


def test_refused_flags(tmp_path):
    ca, crt, key = make_ca_and_cert(str(tmp_path))
    data = str(tmp_path / "data")
    alone = subprocess.run([BINARY, "serve", "--port", "0", "--data", data, "--tls-cert", crt], capture_output=True,
                           text=True, timeout=30)
    assert alone.returncode != 0 and "--tls-key" in alone.stderr
    # A key that is not the certificate's: the server does not start, and says which files disagree.
    _, other_crt, other_key = make_ca_and_cert(str(tmp_path), name="other")
    mismatch = subprocess.run([BINARY, "serve", "--port", "0", "--data", data, "--tls-cert", crt, "--tls-key",
                               other_key], capture_output=True, text=True, timeout=30)
    assert mismatch.returncode != 0 and other_key in mismatch.stderr and crt in mismatch.stderr


def test_gsutil_json_and_xml(server, tmp_path):
    """gsutil insists on https; here it talks to Silo's own TLS (tests/clients runs it through nginx in front of the
    shared plain server)."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "clients"))
    from gsutil_runner import gsutil_runner

    class Listener:
        port = server.port
        ca = server.ca

    for mode in ("json", "xml"):
        (tmp_path / mode).mkdir()
    json_mode = gsutil_runner(Listener, tmp_path / "json", "json")
    source = tmp_path / "g.bin"
    source.write_bytes(os.urandom(3 << 20))
    json_mode("mb", "gs://tls-gsutil")
    json_mode("cp", str(source), "gs://tls-gsutil/g.bin")
    back = tmp_path / "back.bin"
    json_mode("cp", "gs://tls-gsutil/g.bin", str(back))
    assert back.read_bytes() == source.read_bytes()
    xml_mode = gsutil_runner(Listener, tmp_path / "xml", "xml")
    assert "gs://tls-gsutil/g.bin" in xml_mode("ls", "gs://tls-gsutil").stdout
