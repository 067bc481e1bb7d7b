"""curl on the URLs people paste: `http://host/BUCKET/OBJECT` (the `storage.googleapis.com/BUCKET/OBJECT` form) and
`http://BUCKET.localhost/OBJECT`, with ranges and HEAD; uploads with `-T`; on a secured server, public objects for
anonymous callers, including `Authorization: Bearer ` with no token."""
import subprocess

import pytest

from secured_silo import secured_silo


def curl(*args):
    """Runs curl; returns (status, headers as a lowercase dict, body bytes)."""
    dump = [] if "-I" in args else ["-D", "-"]  # -I prints the head itself
    out = subprocess.run(["curl", "-sS", *dump, *args], check=True, capture_output=True, timeout=60).stdout
    head, _, body = out.partition(b"\r\n\r\n")
    while head.startswith(b"HTTP/1.1 1"):  # `100 Continue` before the answer to an upload
        head, _, body = body.partition(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    return int(lines[0].split()[1]), headers, body


def test_upload_and_read_the_public_url(silo, bucket_name, tmp_path):
    payload = tmp_path / "report.txt"
    payload.write_bytes(b"0123456789" * 100)
    url = f"{silo.endpoint}/{bucket_name}/reports/2026/report.txt"
    status, headers, _ = curl("-T", str(payload), "-H", "Content-Type: text/plain", "-H", "x-goog-meta-owner: ops", url)
    assert status == 200 and headers["etag"].startswith('"') and headers["x-goog-generation"]
    status, headers, body = curl(url)
    assert status == 200 and body == payload.read_bytes()
    assert headers["content-type"] == "text/plain" and headers["x-goog-meta-owner"] == "ops"
    assert headers["x-goog-stored-content-length"] == "1000"
    status, headers, body = curl("-r", "10-19", url)
    assert status == 206 and body == b"0123456789" and headers["content-range"] == "bytes 10-19/1000"
    status, headers, body = curl("-I", url)
    assert status == 200 and headers["content-length"] == "1000" and body == b""
    status, _, body = curl(f"{silo.endpoint}/{bucket_name}/reports/missing.txt")
    assert status == 404 and b"<Code>NoSuchKey</Code>" in body


def test_virtual_host_url(silo, bucket_name):
    host = f"{bucket_name}.localhost"
    url = f"http://{host}:{silo.port}/v/hello.txt"
    resolve = ["--resolve", f"{host}:{silo.port}:127.0.0.1"]
    assert curl(*resolve, "-X", "PUT", "--data-binary", "hi", url)[0] == 200
    status, _, body = curl(*resolve, url)
    assert status == 200 and body == b"hi"
    status, _, body = curl(*resolve, f"http://{host}:{silo.port}/?list-type=2")
    assert status == 200 and b"<Key>v/hello.txt</Key>" in body


@pytest.fixture
def secured():
    with secured_silo() as port:
        yield port


@pytest.mark.parametrize("authorization", [None, "Bearer ", "Bearer"])
def test_public_object_for_anonymous_callers(secured, authorization):
    extra = ["-H", f"Authorization: {authorization}"] if authorization is not None else []
    status, _, body = curl(*extra, f"http://127.0.0.1:{secured}/xml-public/open.txt")
    assert status == 200 and body == b"open"
    status, _, body = curl(*extra, f"http://127.0.0.1:{secured}/xml-public/closed.txt")
    assert status == 401 and b"<Code>AuthenticationRequired</Code>" in body
