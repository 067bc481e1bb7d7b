"""obstore (Rust's object_store from Python) against Silo's GCS XML API: put, get, ranges, head, list with and without a
delimiter, copy, rename, delete.

object_store takes Silo as its GCS endpoint through a service-account file with `gcs_base_url` and `disable_oauth`
(then it asks for no token), or through `base_url` with a credential provider; `allow_http` lets it speak plain
HTTP. With an empty token obstore 0.12 sends no Authorization header (object_store before April 2025 sent
`Bearer ` with nothing after it; Silo takes both as anonymous: XMLAPIAccessTests, test_curl.py).
"""
import asyncio
import json
import os
import tempfile

import obstore
import pytest
from obstore.exceptions import AlreadyExistsError
from obstore.store import GCSStore

from secured_silo import secured_silo
from silo_process import request


def service_account_file(silo):
    """The service-account JSON object_store documents for emulators: its base URL, and no OAuth."""
    fd, path = tempfile.mkstemp(prefix="silo-obstore-", suffix=".json")
    with os.fdopen(fd, "w") as f:
        json.dump({"gcs_base_url": silo.endpoint, "disable_oauth": True, "client_email": "", "private_key": "",
                   "private_key_id": ""}, f)
    return path


@pytest.fixture
def store(silo, bucket_name):
    path = service_account_file(silo)
    yield GCSStore(bucket_name, service_account_path=path, client_options={"allow_http": True},
                   retry_config={"max_retries": 0})
    os.unlink(path)


def test_multipart_put_and_writer(store, silo, bucket_name):
    """object_store's multipart uploads are the XML API's (initiate, parts, complete): a put above the chunk size and
    a streaming writer, both read back byte for byte; the composed object has a CRC32C and no MD5, as in GCS."""
    data = os.urandom(13 << 20)
    obstore.put(store, "mpu/put.bin", data, use_multipart=True, chunk_size=5 << 20, max_concurrency=3)
    assert bytes(obstore.get(store, "mpu/put.bin").bytes()) == data
    with obstore.open_writer(store, "mpu/writer.bin", buffer_size=5 << 20) as writer:
        for offset in range(0, len(data), 1 << 20):
            writer.write(data[offset:offset + (1 << 20)])
    assert bytes(obstore.get(store, "mpu/writer.bin").bytes()) == data
    status, _, body = request(silo.port, "GET", f"/storage/v1/b/{bucket_name}/o/mpu%2Fput.bin")
    resource = json.loads(body)
    assert status == 200 and "crc32c" in resource and "md5Hash" not in resource and resource["componentCount"] >= 3
    status, _, body = request(silo.port, "GET", f"/{bucket_name}?uploads")
    assert status == 200 and b"<Upload>" not in body  # nothing left in progress


def names(metas):
    return sorted(m["path"] for m in metas)


def test_put_get_range_head(store):
    data = bytes(range(256)) * 40
    result = obstore.put(store, "dir/blob.bin", data, use_multipart=False)
    assert result["e_tag"].startswith('"') and result["version"]
    got = obstore.get(store, "dir/blob.bin")
    assert bytes(got.bytes()) == data
    assert got.meta["size"] == len(data) and got.meta["e_tag"] == result["e_tag"]
    assert bytes(obstore.get_range(store, "dir/blob.bin", start=100, end=200)) == data[100:200]
    ranges = obstore.get_ranges(store, "dir/blob.bin", starts=[0, 5000], ends=[10, 5010])
    assert [bytes(r) for r in ranges] == [data[0:10], data[5000:5010]]
    meta = obstore.head(store, "dir/blob.bin")
    assert meta["size"] == len(data) and meta["e_tag"] == result["e_tag"] and meta["version"] == result["version"]
    with pytest.raises(FileNotFoundError):
        obstore.head(store, "dir/missing")


def test_put_modes_and_attributes(store):
    obstore.put(store, "a.txt", b"one", mode="create", use_multipart=False,
                attributes={"Content-Type": "text/plain", "Cache-Control": "no-cache", "color": "blue"})
    with pytest.raises(AlreadyExistsError):
        obstore.put(store, "a.txt", b"two", mode="create", use_multipart=False)
    got = obstore.get(store, "a.txt")
    assert bytes(got.bytes()) == b"one"
    assert got.attributes.get("Content-Type") == "text/plain"
    assert got.attributes.get("Cache-Control") == "no-cache"
    assert got.attributes.get("color") == "blue"


def test_list_with_and_without_delimiter(store):
    for name in ["top.txt", "d/one.txt", "d/two.txt", "d/sub/three.txt", "e/four.txt"]:
        obstore.put(store, name, name.encode(), use_multipart=False)
    listed = [m for chunk in obstore.list(store) for m in chunk]
    assert names(listed) == ["d/one.txt", "d/sub/three.txt", "d/two.txt", "e/four.txt", "top.txt"]
    assert {m["path"]: m["size"] for m in listed}["d/one.txt"] == len("d/one.txt")
    under = [m for chunk in obstore.list(store, "d") for m in chunk]
    assert names(under) == ["d/one.txt", "d/sub/three.txt", "d/two.txt"]
    folded = obstore.list_with_delimiter(store)
    assert sorted(folded["common_prefixes"]) == ["d", "e"]
    assert names(folded["objects"]) == ["top.txt"]
    inner = obstore.list_with_delimiter(store, "d")
    assert inner["common_prefixes"] == ["d/sub"] and names(inner["objects"]) == ["d/one.txt", "d/two.txt"]
    after = [m for chunk in obstore.list(store, offset="d/two.txt") for m in chunk]
    assert names(after) == ["e/four.txt", "top.txt"]


def test_list_pages(store):
    # object_store asks for pages of 1000: past that it must follow NextContinuationToken.
    async def fill():
        # Sixteen at a time: Silo limits the connections one client address may hold.
        gate = asyncio.Semaphore(16)

        async def one(i):
            async with gate:
                await obstore.put_async(store, f"p/{i:04}", b"x", use_multipart=False)
        await asyncio.gather(*(one(i) for i in range(1003)))
    asyncio.run(fill())
    listed = [m["path"] for chunk in obstore.list(store, "p") for m in chunk]
    assert listed == [f"p/{i:04}" for i in range(1003)]


def test_copy_rename_delete(store):
    obstore.put(store, "src/a.txt", b"payload", use_multipart=False)
    obstore.copy(store, "src/a.txt", "dst/b.txt")
    assert bytes(obstore.get(store, "dst/b.txt").bytes()) == b"payload"
    with pytest.raises(AlreadyExistsError):
        obstore.copy(store, "src/a.txt", "dst/b.txt", overwrite=False)
    obstore.rename(store, "dst/b.txt", "dst/c.txt")
    assert bytes(obstore.get(store, "dst/c.txt").bytes()) == b"payload"
    with pytest.raises(FileNotFoundError):
        obstore.get(store, "dst/b.txt")
    obstore.delete(store, ["src/a.txt", "dst/c.txt"])
    assert [m for chunk in obstore.list(store) for m in chunk] == []


def test_base_url_with_a_credential_provider(silo, bucket_name):
    # `skip_signature` is the documented way to go anonymous, but obstore 0.12's GCS store still asks the metadata
    # server for a token with it; a credential provider with an empty token gives the same requests.
    anonymous = GCSStore(bucket_name, base_url=silo.endpoint, client_options={"allow_http": True},
                         credential_provider=lambda: {"token": "", "expires_at": None})
    obstore.put(anonymous, "anon.txt", b"no credentials", use_multipart=False)
    assert bytes(obstore.get(anonymous, "anon.txt").bytes()) == b"no credentials"


@pytest.fixture
def secured():
    with secured_silo() as port:
        yield port


def test_anonymous_reads_of_public_objects_on_a_secured_server(secured, tmp_path):
    account = tmp_path / "account.json"
    account.write_text(json.dumps({"gcs_base_url": f"http://127.0.0.1:{secured}", "disable_oauth": True,
                                   "client_email": "", "private_key": "", "private_key_id": ""}))
    store = GCSStore("xml-public", service_account_path=str(account), client_options={"allow_http": True},
                     retry_config={"max_retries": 0})
    assert bytes(obstore.get(store, "open.txt").bytes()) == b"open"
    assert obstore.head(store, "open.txt")["size"] == 4
    with pytest.raises(Exception, match="401"):
        obstore.get(store, "closed.txt")
    with pytest.raises(Exception, match="401"):
        obstore.put(store, "new.txt", b"refused", use_multipart=False)
