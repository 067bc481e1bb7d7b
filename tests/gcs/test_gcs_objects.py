"""google-cloud-storage against a live silo serve: uploads, downloads, metadata, list, delete, preconditions."""
import base64
import hashlib
import http.client
import json
import os
import urllib.parse

import google_crc32c
import pytest
from google.api_core import exceptions


def crc32c_b64(data):
    return base64.b64encode(google_crc32c.Checksum(data).digest()).decode()


def test_small_upload_and_download(bucket):
    blob = bucket.blob("dir/hello.txt")
    blob.upload_from_string(b"hello world", content_type="text/plain")
    assert blob.size == 11
    assert blob.crc32c == crc32c_b64(b"hello world")
    assert blob.md5_hash == base64.b64encode(hashlib.md5(b"hello world").digest()).decode()
    assert bucket.blob("dir/hello.txt").download_as_bytes(checksum="crc32c") == b"hello world"
    assert bucket.blob("dir/hello.txt").download_as_bytes(checksum="md5") == b"hello world"
    assert bucket.get_blob("dir/hello.txt").content_type == "text/plain"


def test_multi_chunk_resumable_upload(bucket):
    data = os.urandom(3 * 262144 + 12345)
    blob = bucket.blob("big.bin", chunk_size=262144)
    blob.upload_from_string(data, content_type="image/png", checksum="crc32c")
    fetched = bucket.get_blob("big.bin")
    assert fetched.size == len(data)
    assert fetched.content_type == "image/png"
    assert fetched.crc32c == crc32c_b64(data)
    assert fetched.download_as_bytes() == data


def test_resumable_upload_exact_multiple_of_chunk(bucket, tmp_path):
    data = os.urandom(2 * 262144)
    path = tmp_path / "exact.bin"
    path.write_bytes(data)
    blob = bucket.blob("exact.bin", chunk_size=262144)
    blob.upload_from_filename(str(path))
    assert bucket.blob("exact.bin").download_as_bytes() == data


def test_interrupted_resumable_upload_resumes(bucket, silo):
    from google.resumable_media.requests import ResumableUpload
    from google.auth.transport.requests import AuthorizedSession
    from google.auth.credentials import AnonymousCredentials
    import io

    data = os.urandom(5 * 262144 + 7)
    url = f"{silo}/upload/storage/v1/b/{bucket.name}/o?uploadType=resumable"
    session = AuthorizedSession(AnonymousCredentials())
    upload = ResumableUpload(url, 262144)
    stream = io.BytesIO(data)
    upload.initiate(session, stream, {"name": "resumed.bin"}, "application/octet-stream")
    upload.transmit_next_chunk(session)
    upload.transmit_next_chunk(session)
    assert upload.bytes_uploaded == 2 * 262144
    # Simulate losing the client: a new ResumableUpload object recovers from the server's state.
    resumed = ResumableUpload(url, 262144)
    resumed._resumable_url = upload.resumable_url
    resumed._stream = io.BytesIO(data)
    resumed._total_bytes = len(data)
    resumed._invalid = True
    resumed.recover(session)
    assert resumed.bytes_uploaded == 2 * 262144
    while not resumed.finished:
        resumed.transmit_next_chunk(session)
    assert bucket.blob("resumed.bin").download_as_bytes() == data


def test_status_query_never_finalizes(bucket, silo):
    host = urllib.parse.urlsplit(silo)
    conn = http.client.HTTPConnection(host.hostname, host.port)
    conn.request("POST", f"/upload/storage/v1/b/{bucket.name}/o?uploadType=resumable",
                 body=json.dumps({"name": "q.bin"}), headers={"Content-Type": "application/json"})
    r = conn.getresponse()
    r.read()
    location = urllib.parse.urlsplit(r.getheader("Location"))
    path = location.path + "?" + location.query
    for range_header in ["bytes */*", "bytes */300000"]:
        conn.request("PUT", path, body=b"", headers={"Content-Range": range_header})
        r = conn.getresponse()
        r.read()
        assert r.status == 308
        assert r.getheader("Range") is None
    conn.request("PUT", path, body=b"x" * 262144, headers={"Content-Range": "bytes 0-262143/*"})
    r = conn.getresponse()
    r.read()
    assert (r.status, r.getheader("Range")) == (308, "bytes=0-262143")
    # A retried chunk is idempotent by offset: the server reports the same persisted range.
    conn.request("PUT", path, body=b"x" * 262144, headers={"Content-Range": "bytes 0-262143/*"})
    r = conn.getresponse()
    r.read()
    assert (r.status, r.getheader("Range")) == (308, "bytes=0-262143")
    conn.request("PUT", path, body=b"", headers={"Content-Range": "bytes */*"})
    r = conn.getresponse()
    r.read()
    assert (r.status, r.getheader("Range")) == (308, "bytes=0-262143")
    conn.request("PUT", path, body=b"y" * 100, headers={"Content-Range": "bytes 262144-262243/262244"})
    r = conn.getresponse()
    resource = json.loads(r.read())
    assert r.status == 200 and resource["size"] == "262244"
    with pytest.raises(exceptions.NotFound):
        bucket.blob("q-missing.bin").download_as_bytes()


def test_ranged_download(bucket):
    bucket.blob("range.txt").upload_from_string(b"0123456789")
    blob = bucket.blob("range.txt")
    assert blob.download_as_bytes(start=2, end=5) == b"2345"
    assert blob.download_as_bytes(start=7) == b"789"


def test_patch_metadata(bucket):
    blob = bucket.blob("meta.txt")
    blob.upload_from_string(b"m")
    blob.metadata = {"a": "1", "b": "2"}
    blob.cache_control = "no-cache"
    blob.patch()
    assert blob.metageneration == 2
    fetched = bucket.get_blob("meta.txt")
    assert fetched.metadata == {"a": "1", "b": "2"}
    assert fetched.cache_control == "no-cache"
    fetched.metadata = {"a": None}
    fetched.patch()
    assert bucket.get_blob("meta.txt").metadata == {"b": "2"}


def test_update_replaces_metadata(bucket):
    blob = bucket.blob("upd.txt")
    blob.upload_from_string(b"u", content_type="text/plain")
    blob.metadata = {"x": "1"}
    blob.patch()
    fresh = bucket.blob("upd.txt")
    fresh.content_type = "application/json"
    fresh.update()
    fetched = bucket.get_blob("upd.txt")
    assert fetched.content_type == "application/json"
    assert not fetched.metadata


def test_list_prefixes_and_pages(bucket):
    for name in ["a/1", "a/2", "b/1", "c", "d", "e"]:
        bucket.blob(name).upload_from_string(b"x")
    iterator = bucket.client.list_blobs(bucket, delimiter="/", max_results=None, page_size=2)
    names = [b.name for b in iterator]
    assert names == ["c", "d", "e"]
    assert sorted(iterator.prefixes) == ["a/", "b/"]
    everything = [b.name for b in bucket.client.list_blobs(bucket, page_size=2)]
    assert everything == ["a/1", "a/2", "b/1", "c", "d", "e"]
    assert [b.name for b in bucket.client.list_blobs(bucket, prefix="a/")] == ["a/1", "a/2"]
    assert [b.name for b in bucket.client.list_blobs(bucket, start_offset="b", end_offset="d")] == ["b/1", "c"]
    assert [b.name for b in bucket.client.list_blobs(bucket, match_glob="a/*")] == ["a/1", "a/2"]
    assert [b.name for b in bucket.client.list_blobs(bucket, match_glob="**1")] == ["a/1", "b/1"]


def test_delete(bucket):
    blob = bucket.blob("del.txt")
    blob.upload_from_string(b"d")
    blob.delete()
    assert not blob.exists()
    with pytest.raises(exceptions.NotFound):
        blob.delete()


def test_preconditions(bucket):
    blob = bucket.blob("pre.txt")
    blob.upload_from_string(b"v1", if_generation_match=0)
    with pytest.raises(exceptions.PreconditionFailed):
        bucket.blob("pre.txt").upload_from_string(b"v2", if_generation_match=0)
    generation = bucket.get_blob("pre.txt").generation
    bucket.blob("pre.txt").upload_from_string(b"v2", if_generation_match=generation)
    with pytest.raises(exceptions.PreconditionFailed):
        bucket.blob("pre.txt").upload_from_string(b"v3", if_generation_match=generation)
    current = bucket.get_blob("pre.txt")
    with pytest.raises(exceptions.PreconditionFailed):
        bucket.blob("pre.txt").upload_from_string(b"v3", if_generation_not_match=current.generation)
    with pytest.raises(exceptions.PreconditionFailed):
        current.patch(if_metageneration_match=current.metageneration + 5)
    current.metadata = {"k": "v"}
    current.patch(if_metageneration_match=current.metageneration)
    with pytest.raises(exceptions.PreconditionFailed):
        bucket.blob("pre.txt").delete(if_generation_match=current.generation + 1)
    with pytest.raises(exceptions.PreconditionFailed):
        bucket.blob("pre.txt").delete(if_metageneration_not_match=current.metageneration)
    with pytest.raises(exceptions.PreconditionFailed):
        bucket.blob("pre.txt").reload(if_generation_match=current.generation + 1)
    with pytest.raises(exceptions.NotModified):
        bucket.blob("pre.txt").reload(if_generation_not_match=current.generation)
    big = os.urandom(600000)
    with pytest.raises(exceptions.PreconditionFailed):
        bucket.blob("pre.txt", chunk_size=262144).upload_from_string(big, if_generation_match=0)
    bucket.blob("pre.txt").delete(if_generation_match=current.generation)
    assert bucket.get_blob("pre.txt") is None


def test_wrong_checksum_is_rejected(bucket, silo):
    host = urllib.parse.urlsplit(silo)
    boundary = "===============42=="
    body = (f"--{boundary}\r\nContent-Type: application/json\r\n\r\n"
            + json.dumps({"name": "bad.txt", "crc32c": "AAAAAA=="})
            + f"\r\n--{boundary}\r\nContent-Type: text/plain\r\n\r\nhello\r\n--{boundary}--").encode()
    conn = http.client.HTTPConnection(host.hostname, host.port)
    conn.request("POST", f"/upload/storage/v1/b/{bucket.name}/o?uploadType=multipart", body=body,
                 headers={"Content-Type": f'multipart/related; boundary="{boundary}"'})
    r = conn.getresponse()
    r.read()
    assert r.status == 400
    assert bucket.get_blob("bad.txt") is None


def test_copy_rewrite_compose(bucket):
    bucket.blob("src.txt").upload_from_string(b"source bytes", content_type="text/plain")
    src = bucket.get_blob("src.txt")
    copied = bucket.copy_blob(src, bucket, "copy.txt")
    assert copied.download_as_bytes() == b"source bytes"
    assert copied.content_type == "text/plain"
    with pytest.raises(exceptions.PreconditionFailed):
        bucket.copy_blob(src, bucket, "copy.txt", if_generation_match=0)
    dest = bucket.blob("rewritten.txt")
    token, done, total = dest.rewrite(src)
    assert token is None and total == len(b"source bytes")
    assert dest.download_as_bytes() == b"source bytes"
    bucket.blob("p1").upload_from_string(b"abc")
    bucket.blob("p2").upload_from_string(b"def")
    composed = bucket.blob("composed")
    composed.content_type = "text/plain"
    composed.compose([bucket.blob("p1"), bucket.blob("p2")])
    fetched = bucket.get_blob("composed")
    assert fetched.download_as_bytes() == b"abcdef"
    assert fetched.component_count == 2
    assert fetched.crc32c == crc32c_b64(b"abcdef")


def test_versions(client, bucket):
    b = client.get_bucket(bucket.name)
    b.versioning_enabled = True
    b.patch()
    assert client.get_bucket(bucket.name).versioning_enabled
    b.blob("v.txt").upload_from_string(b"one")
    b.blob("v.txt").upload_from_string(b"two")
    versions = [v for v in client.list_blobs(b, versions=True) if v.name == "v.txt"]
    assert len(versions) == 2
    old, new = sorted(versions, key=lambda v: v.generation)
    assert b.blob("v.txt", generation=old.generation).download_as_bytes() == b"one"
    assert b.blob("v.txt").download_as_bytes() == b"two"
    b.blob("v.txt", generation=old.generation).delete()
    assert [v.generation for v in client.list_blobs(b, versions=True) if v.name == "v.txt"] == [new.generation]
    with pytest.raises(exceptions.NotFound):
        b.blob("v.txt", generation=old.generation).download_as_bytes()


def test_missing_bucket_reads_are_404_and_an_upload_creates_it(client):
    # Reads and listings of a bucket that does not exist are 404, as on GCS. This server runs in emulator mode, where
    # an upload creates the bucket on every API, as the Firebase emulator does (secured mode answers 404:
    # GCSDifferencesTests).
    missing = client.bucket("never-created-bucket")
    with pytest.raises(exceptions.NotFound):
        list(client.list_blobs(missing))
    assert not missing.exists()
    with pytest.raises(exceptions.NotFound):
        missing.blob("x").download_as_bytes()
    missing.blob("x").upload_from_string(b"x")
    assert missing.exists()
    assert missing.blob("x").download_as_bytes() == b"x"


def test_buckets(client):
    b = client.create_bucket("made-by-test")
    assert b.name == "made-by-test"
    with pytest.raises(exceptions.Conflict):
        client.create_bucket("made-by-test")
    assert "made-by-test" in [x.name for x in client.list_buckets()]
    b.blob("x").upload_from_string(b"x")
    with pytest.raises(exceptions.Conflict):
        b.delete()
    b.blob("x").delete()
    b.delete()
    with pytest.raises(exceptions.NotFound):
        client.get_bucket("made-by-test")
