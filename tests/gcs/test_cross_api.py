"""One object, two APIs: v0 (Firebase SDK wire) and the GCS JSON API; plus gcsfs and firebase-admin."""
import http.client
import json
import os
import urllib.parse

import pytest



def v0(silo, method, path, body=b"", headers=None):
    host = urllib.parse.urlsplit(silo)
    conn = http.client.HTTPConnection(host.hostname, host.port)
    conn.request(method, path, body=body, headers=headers or {})
    r = conn.getresponse()
    return r.status, r.read()


def test_v0_upload_read_via_gcs(bucket, silo):
    status, body = v0(silo, "POST", f"/v0/b/{bucket.name}/o?name=" + urllib.parse.quote("x/from-v0.txt", safe=""),
                      b"via v0", {"Content-Type": "text/plain"})
    assert status == 200
    token = json.loads(body)["downloadTokens"]
    blob = bucket.get_blob("x/from-v0.txt")
    assert blob.download_as_bytes() == b"via v0"
    assert blob.metadata["firebaseStorageDownloadTokens"] == token


def test_gcs_upload_read_via_v0(bucket, silo):
    bucket.blob("y/from-gcs.txt").upload_from_string(b"via gcs")
    status, body = v0(silo, "GET", f"/v0/b/{bucket.name}/o/" + urllib.parse.quote("y/from-gcs.txt", safe=""))
    meta = json.loads(body)
    assert status == 200 and meta["metageneration"] == "2" and meta["downloadTokens"]
    status, data = v0(silo, "GET", f"/v0/b/{bucket.name}/o/" + urllib.parse.quote("y/from-gcs.txt", safe="")
                      + "?alt=media&token=" + meta["downloadTokens"])
    assert (status, data) == (200, b"via gcs")


def test_tokens_set_through_gcs_show_in_v0(bucket, silo):
    blob = bucket.blob("tok.txt")
    blob.upload_from_string(b"t")
    blob.metadata = {"firebaseStorageDownloadTokens": "abc,def", "other": "1"}
    blob.patch()
    status, body = v0(silo, "GET", f"/v0/b/{bucket.name}/o/tok.txt")
    meta = json.loads(body)
    assert meta["downloadTokens"] == "abc,def"
    assert meta["metadata"] == {"other": "1"}


def test_gcsfs(silo, bucket):
    # The core filesystem: gcsfs's experimental subclass probes buckets over gRPC, which Silo does not speak.
    from gcsfs.core import GCSFileSystem
    fs = GCSFileSystem(endpoint_url=silo, token="anon", project="demo")
    with fs.open(f"{bucket.name}/fs/one.txt", "wb") as f:
        f.write(b"gcsfs bytes")
    assert fs.cat(f"{bucket.name}/fs/one.txt") == b"gcsfs bytes"
    assert fs.ls(f"{bucket.name}/fs", detail=False) == [f"{bucket.name}/fs/one.txt"]
    fs.rm(f"{bucket.name}/fs/one.txt")
    fs.invalidate_cache()
    assert not fs.exists(f"{bucket.name}/fs/one.txt")


@pytest.mark.parametrize("size", [0, 1, 5 * 1024 * 1024 - 1, 5 * 1024 * 1024 + 1])
def test_gcsfs_pipe_put_open(silo, bucket, size, tmp_path):
    # gcsfs's simple upload frames multipart/related with bare LF and a quoted boundary.
    from gcsfs.core import GCSFileSystem
    fs = GCSFileSystem(endpoint_url=silo, token="anon", project="demo")
    data = os.urandom(size)
    fs.pipe(f"{bucket.name}/pipe/{size}", data)
    assert fs.cat(f"{bucket.name}/pipe/{size}") == data
    local = tmp_path / "local.bin"
    local.write_bytes(data)
    fs.put(str(local), f"{bucket.name}/put/{size}")
    assert fs.cat(f"{bucket.name}/put/{size}") == data
    with fs.open(f"{bucket.name}/open/{size}", "wb") as f:
        f.write(data)
    assert fs.cat(f"{bucket.name}/open/{size}") == data


def test_firebase_admin(silo, bucket):
    import firebase_admin
    from firebase_admin import credentials, storage
    from google.auth.credentials import AnonymousCredentials

    class Anonymous(credentials.Base):
        def get_credential(self):
            return AnonymousCredentials()

    app = firebase_admin.initialize_app(Anonymous(), {"storageBucket": bucket.name, "projectId": "demo"}, name=bucket.name)
    try:
        b = storage.bucket(app=app)
        b.blob("admin.txt").upload_from_string(b"from admin")
        assert b.blob("admin.txt").download_as_bytes() == b"from admin"
    finally:
        firebase_admin.delete_app(app)
