"""google-cloud-storage's transfer_manager against Silo: `upload_chunks_concurrently` (the XML multipart upload API:
POST ?uploads, PUT ?partNumber=&uploadId=, POST ?uploadId=) and `download_chunks_concurrently` (ranged reads whose
CRC32Cs the client combines and checks against the object's), on a file of a few tens of MiB in 5 MiB chunks,
verified byte for byte; the library's own XML MPU classes for abort and list parts."""
import base64
import hashlib
import os
import random
import sys
import urllib.parse

import google_crc32c
import pytest
from google.auth.credentials import AnonymousCredentials
from google.cloud import storage
from google.cloud.storage import transfer_manager
from google.cloud.storage._media.requests import XMLMPUContainer, XMLMPUPart

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from silo_process import request  # noqa: E402

CHUNK = 5 * 1024 * 1024
SIZE = 7 * CHUNK + 123_457  # eight parts, the last one short


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    path = tmp_path_factory.mktemp("tm") / "source.bin"
    # Seeded, so a failure reproduces; not compressible, so nothing in between can shrink it.
    rng = random.Random(15)
    with open(path, "wb") as f:
        for _ in range(SIZE // (1 << 20) + 1):
            f.write(rng.randbytes(1 << 20))
        f.truncate(SIZE)
    return str(path)


@pytest.fixture
def client(silo):
    return storage.Client(project="demo", credentials=AnonymousCredentials(),
                          client_options={"api_endpoint": silo.endpoint})


def crc32c_b64(data):
    return base64.b64encode(google_crc32c.Checksum(data).digest()).decode()


def read(path):
    with open(path, "rb") as f:
        return f.read()


@pytest.mark.parametrize("worker_type", [transfer_manager.THREAD, transfer_manager.PROCESS])
def test_upload_chunks_concurrently_and_download_them_back(client, bucket_name, source, tmp_path, worker_type):
    blob = client.bucket(bucket_name).blob(f"big/{worker_type}.bin")
    blob.content_type = "application/x-test"
    blob.metadata = {"origin": "transfer_manager"}
    transfer_manager.upload_chunks_concurrently(source, blob, chunk_size=CHUNK, max_workers=8,
                                                worker_type=worker_type, deadline=300)
    data = read(source)

    stored = client.bucket(bucket_name).get_blob(blob.name)
    assert stored.size == SIZE
    assert stored.component_count == 8
    assert stored.crc32c == crc32c_b64(data), "the CRC32C combined from the parts is the whole file's"
    assert stored.md5_hash is None, "a multipart-uploaded object has no MD5, as in GCS"
    assert stored.content_type == "application/x-test"
    assert stored.metadata == {"origin": "transfer_manager"}

    plain = tmp_path / "plain.bin"
    stored.download_to_filename(str(plain))
    assert read(plain) == data

    chunked = tmp_path / "chunked.bin"
    # crc32c_checksum: the client combines the chunks' CRC32Cs and compares them with the object's.
    transfer_manager.download_chunks_concurrently(stored, str(chunked), chunk_size=CHUNK, max_workers=8,
                                                  worker_type=transfer_manager.THREAD, crc32c_checksum=True)
    assert hashlib.sha256(read(chunked)).digest() == hashlib.sha256(data).digest()


def test_metadata_and_names_that_need_quoting(client, bucket_name, source, tmp_path):
    for name in ["../example_bucket/mpu file+%.bin", "\U0001f681"]:
        blob = client.bucket(bucket_name).blob(name)
        blob.cache_control = "private"
        blob.content_disposition = "inline"
        blob.content_language = "en-US"
        blob.storage_class = "NEARLINE"
        transfer_manager.upload_chunks_concurrently(source, blob, chunk_size=CHUNK,
                                                    worker_type=transfer_manager.THREAD, deadline=300)
        stored = client.bucket(bucket_name).get_blob(name)
        assert (stored.cache_control, stored.content_disposition, stored.content_language, stored.storage_class) \
            == ("private", "inline", "en-US", "NEARLINE")
        out = tmp_path / "out.bin"
        stored.download_to_filename(str(out))
        assert read(out) == read(source)


def test_abort_and_list_parts_with_the_librarys_xml_mpu_classes(client, silo, bucket_name, source):
    url = f"{silo.endpoint}/{bucket_name}/" + urllib.parse.quote("aborted.bin", safe="")
    transport = client._http
    container = XMLMPUContainer(url, source)
    container.initiate(transport, "application/octet-stream")
    for number in (1, 2):
        part = XMLMPUPart(url, container.upload_id, source, start=(number - 1) * CHUNK, end=number * CHUNK,
                          part_number=number, checksum="crc32c")
        part.upload(transport)  # checks the part's x-goog-hash against its own CRC32C
        container.register_part(number, part.etag)

    path = f"/{bucket_name}/aborted.bin?uploadId={container.upload_id}"
    status, _, body = request(silo.port, "GET", path)
    assert status == 200 and body.count(b"<Part>") == 2
    status, _, body = request(silo.port, "GET", f"/{bucket_name}?uploads")
    assert status == 200 and container.upload_id.encode() in body

    container.cancel(transport)  # expects 204
    status, _, body = request(silo.port, "GET", path)
    assert status == 404 and b"<Code>NoSuchUpload</Code>" in body
    status, _, body = request(silo.port, "GET", f"/{bucket_name}?uploads")
    assert container.upload_id.encode() not in body
    assert client.bucket(bucket_name).get_blob("aborted.bin") is None
