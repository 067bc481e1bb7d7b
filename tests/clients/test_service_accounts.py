"""google-cloud-storage with a service account key (`service_account.Credentials.from_service_account_file`) against a
secured Silo started with `--service-account key.json`: google-auth fetches its access token from Silo's token
endpoint (the key's `token_uri`), and the bucket's IAM policy decides what the account may do (issue 15 item 2)."""
import os
import re

import pytest
import requests

import service_account_silo

BINARY = os.environ.get("SILO_BINARY", os.path.join(os.path.dirname(__file__), "..", "..", ".build", "release", "silo"))


@pytest.fixture(scope="module")
def secured():
    yield from service_account_silo.start(BINARY)


@pytest.fixture
def bucket_name(secured, request, monkeypatch):
    # The client must use its credentials and the endpoint it is given, never an emulator's anonymous mode.
    monkeypatch.delenv("STORAGE_EMULATOR_HOST", raising=False)
    name = "sa-" + re.sub(r"[^a-z0-9]", "-", request.node.name.lower())[:50].strip("-")
    secured.create_bucket(name)
    return name


def test_without_a_binding_the_account_is_refused(secured, bucket_name):
    from google.api_core import exceptions
    client = secured.client(secured.accounts["uploader"])
    with pytest.raises(exceptions.Forbidden):
        client.bucket(bucket_name).blob("refused.txt").upload_from_string(b"no")
    with pytest.raises(exceptions.Forbidden):
        list(client.list_blobs(bucket_name))
    # The token came from Silo's endpoint: google-auth refreshed against the key's token_uri.
    assert client._credentials.token.startswith("silo1.")


def test_upload_download_list_delete_with_object_admin(secured, bucket_name):
    uploader = secured.accounts["uploader"]
    secured.bind(bucket_name, "roles/storage.objectAdmin", uploader)
    client = secured.client(uploader)
    bucket = client.bucket(bucket_name)
    bucket.blob("notes/a.txt").upload_from_string(b"alpha", content_type="text/plain")
    big = os.urandom(3 * 1024 * 1024 + 17)
    blob = bucket.blob("data/big.bin", chunk_size=1024 * 1024)  # a resumable upload in chunks
    blob.upload_from_string(big)
    assert bucket.blob("notes/a.txt").download_as_bytes() == b"alpha"
    assert bucket.blob("data/big.bin").download_as_bytes() == big
    assert sorted(b.name for b in client.list_blobs(bucket_name)) == ["data/big.bin", "notes/a.txt"]
    assert [b.name for b in client.list_blobs(bucket_name, prefix="notes/")] == ["notes/a.txt"]
    bucket.blob("notes/a.txt").delete()
    assert [b.name for b in client.list_blobs(bucket_name)] == ["data/big.bin"]
    # What the admin sees: the bytes the account stored.
    status, listing = secured.admin("GET", f"/storage/v1/b/{bucket_name}/o")
    assert status == 200 and [i["name"] for i in listing["items"]] == ["data/big.bin"]


def test_a_viewer_reads_and_lists_but_may_not_write(secured, bucket_name):
    from google.api_core import exceptions
    uploader, viewer = secured.accounts["uploader"], secured.accounts["viewer"]
    secured.bind(bucket_name, "roles/storage.objectAdmin", uploader)
    secured.bind(bucket_name, "roles/storage.objectViewer", viewer)
    secured.client(uploader).bucket(bucket_name).blob("shared.txt").upload_from_string(b"shared")
    reader = secured.client(viewer)
    assert reader.bucket(bucket_name).blob("shared.txt").download_as_bytes() == b"shared"
    assert [b.name for b in reader.list_blobs(bucket_name)] == ["shared.txt"]
    with pytest.raises(exceptions.Forbidden):
        reader.bucket(bucket_name).blob("mine.txt").upload_from_string(b"x")
    with pytest.raises(exceptions.Forbidden):
        reader.bucket(bucket_name).blob("shared.txt").delete()
    assert reader.bucket(bucket_name).test_iam_permissions(
        ["storage.objects.get", "storage.objects.list", "storage.objects.create"]) == [
        "storage.objects.get", "storage.objects.list"]


def test_a_read_only_scope_caps_what_iam_grants(secured, bucket_name):
    from google.api_core import exceptions
    from google.cloud import storage
    uploader = secured.accounts["uploader"]
    secured.bind(bucket_name, "roles/storage.objectAdmin", uploader)
    credentials = secured.credentials(uploader, scopes=["https://www.googleapis.com/auth/devstorage.read_only"])
    client = storage.Client(project="silo-clients", credentials=credentials,
                            client_options={"api_endpoint": secured.endpoint})
    assert list(client.list_blobs(bucket_name)) == []
    with pytest.raises(exceptions.Forbidden):
        client.bucket(bucket_name).blob("x.txt").upload_from_string(b"x")


def test_an_unregistered_key_gets_no_token(secured, bucket_name):
    from google.auth import exceptions
    client = secured.client(secured.accounts["outsider"])
    with pytest.raises(exceptions.RefreshError) as refused:
        list(client.list_blobs(bucket_name))
    assert "invalid_grant" in str(refused.value)


def test_the_token_endpoint_speaks_oauth2(secured):
    status = requests.post(f"{secured.endpoint}/token", data={"grant_type": "password"}).status_code
    assert status == 400
    body = requests.post(f"{secured.endpoint}/oauth2/v4/token",
                         data={"grant_type": "urn:ietf:params:oauth:grant-type:jwt-bearer", "assertion": "x.y.z"})
    assert body.status_code == 400 and body.json()["error"] == "invalid_grant"


def test_obstore_with_a_service_account_key(secured, bucket_name):
    """Rust's object_store (obstore, polars) never calls the token endpoint: it signs its own JWT with the key."""
    import obstore
    uploader, viewer = secured.accounts["uploader"], secured.accounts["viewer"]
    store = secured.obstore(uploader, bucket_name)
    with pytest.raises(Exception, match="403|Forbidden|denied|PermissionDenied"):
        obstore.put(store, "nope.bin", b"x")
    secured.bind(bucket_name, "roles/storage.objectAdmin", uploader)
    secured.bind(bucket_name, "roles/storage.objectViewer", viewer)
    data = os.urandom(100_000)
    obstore.put(store, "dir/data.bin", data)
    assert bytes(obstore.get(store, "dir/data.bin").bytes()) == data
    assert [m["path"] for m in obstore.list(store).collect()] == ["dir/data.bin"]
    reader = secured.obstore(viewer, bucket_name)
    assert bytes(obstore.get(reader, "dir/data.bin").bytes()) == data
    with pytest.raises(Exception, match="403|Forbidden|denied|PermissionDenied"):
        obstore.delete(reader, "dir/data.bin")
