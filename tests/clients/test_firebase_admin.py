"""firebase-admin's storage (google-cloud-storage underneath) against Silo through `STORAGE_EMULATOR_HOST`: the
default bucket from the app's options, upload (multipart and resumable), download, list, metadata, delete.
"""
import base64
import hashlib

import firebase_admin
import pytest
from firebase_admin import credentials, storage
from google.auth.credentials import AnonymousCredentials


class Anonymous(credentials.Base):
    """An emulator needs no credentials; firebase-admin wants a credential object all the same."""

    def get_credential(self):
        return AnonymousCredentials()


@pytest.fixture
def bucket(silo, bucket_name, monkeypatch):
    monkeypatch.setenv("STORAGE_EMULATOR_HOST", silo.endpoint)
    app = firebase_admin.initialize_app(Anonymous(), {"storageBucket": bucket_name, "projectId": "demo"},
                                        name=bucket_name)
    yield storage.bucket(app=app)
    firebase_admin.delete_app(app)


def data(size, seed):
    block = hashlib.sha256(str(seed).encode()).digest() * 2048
    return (block * (size // len(block) + 1))[:size]


def test_everyday_workflow(bucket, tmp_path):
    small = data(10_000, 1)
    blob = bucket.blob("users/ada/avatar.png")
    blob.metadata = {"uploadedBy": "ada"}
    blob.upload_from_string(small, content_type="image/png")
    # Over google-cloud-storage's 8 MiB multipart limit: a resumable upload.
    large_path = tmp_path / "video.bin"
    large_path.write_bytes(data((9 << 20) + 5, 2))
    bucket.blob("users/ada/video.bin").upload_from_filename(str(large_path))

    assert bucket.blob("users/ada/avatar.png").download_as_bytes() == small
    down = tmp_path / "down.bin"
    bucket.blob("users/ada/video.bin").download_to_filename(str(down))
    assert down.read_bytes() == large_path.read_bytes()
    assert bucket.blob("users/ada/avatar.png").download_as_bytes(start=100, end=199) == small[100:200]

    got = bucket.get_blob("users/ada/avatar.png")
    assert got.content_type == "image/png" and got.size == len(small)
    assert got.metadata == {"uploadedBy": "ada"}
    assert got.md5_hash == base64.b64encode(hashlib.md5(small).digest()).decode()
    got.metadata = {"uploadedBy": "ada", "reviewed": "yes"}
    got.cache_control = "public, max-age=300"
    got.patch()
    again = bucket.get_blob("users/ada/avatar.png")
    assert again.metadata == {"uploadedBy": "ada", "reviewed": "yes"}
    assert again.cache_control == "public, max-age=300" and again.metageneration == 2

    assert [b.name for b in bucket.list_blobs(prefix="users/ada/")] == ["users/ada/avatar.png", "users/ada/video.bin"]
    iterator = bucket.list_blobs(prefix="users/", delimiter="/")
    assert list(iterator) == [] and iterator.prefixes == {"users/ada/"}

    bucket.blob("users/ada/avatar.png").delete()
    assert bucket.get_blob("users/ada/avatar.png") is None
    assert [b.name for b in bucket.list_blobs()] == ["users/ada/video.bin"]
