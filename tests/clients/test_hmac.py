"""HMAC keys (issue 15 item 3): google-cloud-storage's `create_hmac_key`, `list_hmac_keys`,
`get_hmac_key_metadata`, `HMACKeyMetadata.update`/`delete` against a secured Silo, and `GOOG4-HMAC-SHA256` signed
URLs and `Authorization: GOOG4-HMAC-SHA256` headers made with a key's secret and sent with `requests`.

google-cloud-storage signs only with service account keys (RSA), so the HMAC signature is computed here, from GCS's
description of V4 signing (the canonical request, the string to sign, the signing key chained from `GOOG4` +
secret over the credential scope) — independently of Silo's code.
"""
import datetime
import hashlib
import hmac
import os
import re
import urllib.parse

import pytest
import requests

import service_account_silo

BINARY = os.environ.get("SILO_BINARY", os.path.join(os.path.dirname(__file__), "..", "..", ".build", "release", "silo"))
PROJECT = "silo-clients"


@pytest.fixture(scope="module")
def secured():
    yield from service_account_silo.start(BINARY)


@pytest.fixture
def admin(secured, monkeypatch):
    """google-cloud-storage with the admin key as its bearer token: HMAC keys are the admin's to manage."""
    monkeypatch.delenv("STORAGE_EMULATOR_HOST", raising=False)
    from google.cloud import storage
    from google.oauth2.credentials import Credentials
    return storage.Client(project=PROJECT, credentials=Credentials(token=service_account_silo.ADMIN_KEY),
                          client_options={"api_endpoint": secured.endpoint})


@pytest.fixture
def bucket_name(secured, request):
    name = "hm-" + re.sub(r"[^a-z0-9]", "-", request.node.name.lower())[:50].strip("-")
    secured.create_bucket(name)
    secured.bind(name, "roles/storage.objectAdmin", secured.accounts["uploader"])
    status, body = secured.admin("POST", f"/upload/storage/v1/b/{name}/o?uploadType=media&name=photo.jpg")
    assert status == 200, body
    return name


def signed_url(secured, access_id, secret, method, bucket, name, *, headers=None, expires=900, now=None):
    """A V4 URL signed with an HMAC key, for Silo's own host."""
    now = now or datetime.datetime.now(datetime.timezone.utc)
    stamp = now.strftime("%Y%m%dT%H%M%SZ")
    scope = f"{stamp[:8]}/auto/storage/goog4_request"
    host = f"127.0.0.1:{secured.port}"
    signed = {"host": host, **{k.lower(): v for k, v in (headers or {}).items()}}
    names = sorted(signed)
    query = {
        "X-Goog-Algorithm": "GOOG4-HMAC-SHA256", "X-Goog-Credential": f"{access_id}/{scope}",
        "X-Goog-Date": stamp, "X-Goog-Expires": str(expires), "X-Goog-SignedHeaders": ";".join(names),
    }
    quote = lambda text: urllib.parse.quote(text, safe="-_.~")
    canonical_query = "&".join(f"{quote(k)}={quote(v)}" for k, v in sorted(query.items()))
    path = f"/{bucket}/{urllib.parse.quote(name, safe='/~')}"
    canonical = "\n".join([method, path, canonical_query, *(f"{n}:{signed[n].strip()}" for n in names), "",
                           ";".join(names), "UNSIGNED-PAYLOAD"])
    to_sign = "\n".join(["GOOG4-HMAC-SHA256", stamp, scope, hashlib.sha256(canonical.encode()).hexdigest()])
    signature = hmac.new(signing_key(secret, scope), to_sign.encode(), hashlib.sha256).hexdigest()
    return f"{secured.endpoint}{path}?{canonical_query}&X-Goog-Signature={signature}"


def signing_key(secret, scope):
    key = ("GOOG4" + secret).encode()
    for part in scope.split("/"):
        key = hmac.new(key, part.encode(), hashlib.sha256).digest()
    return key


def signed_headers(secured, access_id, secret, method, bucket, name, now=None):
    """`Authorization: GOOG4-HMAC-SHA256 …` and `x-goog-date` for a request to Silo's own host."""
    now = now or datetime.datetime.now(datetime.timezone.utc)
    stamp = now.strftime("%Y%m%dT%H%M%SZ")
    scope = f"{stamp[:8]}/auto/storage/goog4_request"
    path = f"/{bucket}/{urllib.parse.quote(name, safe='/~')}"
    canonical = "\n".join([method, path, "", f"host:127.0.0.1:{secured.port}", f"x-goog-date:{stamp}", "",
                           "host;x-goog-date", "UNSIGNED-PAYLOAD"])
    to_sign = "\n".join(["GOOG4-HMAC-SHA256", stamp, scope, hashlib.sha256(canonical.encode()).hexdigest()])
    signature = hmac.new(signing_key(secret, scope), to_sign.encode(), hashlib.sha256).hexdigest()
    return {"x-goog-date": stamp, "Authorization": f"GOOG4-HMAC-SHA256 Credential={access_id}/{scope}, "
                                                   f"SignedHeaders=host;x-goog-date, Signature={signature}"}


def xml_code(response):
    match = re.search(r"<Code>([^<]*)</Code>", response.text)
    return match and match.group(1)


def test_key_life_cycle_with_google_cloud_storage(secured, admin):
    email = secured.accounts["uploader"].email
    metadata, secret = admin.create_hmac_key(service_account_email=email, project_id=PROJECT)
    assert metadata.state == "ACTIVE" and metadata.service_account_email == email
    assert metadata.access_id.startswith("GOOG1E") and len(secret) == 40
    listed = [k.access_id for k in admin.list_hmac_keys(service_account_email=email, project_id=PROJECT)]
    assert metadata.access_id in listed
    fetched = admin.get_hmac_key_metadata(metadata.access_id, project_id=PROJECT)
    assert fetched.state == "ACTIVE" and fetched.etag == metadata.etag

    from google.api_core import exceptions
    with pytest.raises(exceptions.BadRequest):
        fetched.delete()  # only an INACTIVE key can be deleted
    fetched.state = "INACTIVE"
    fetched.update()
    assert admin.get_hmac_key_metadata(metadata.access_id, project_id=PROJECT).state == "INACTIVE"
    fetched.delete()
    assert metadata.access_id not in [k.access_id for k in admin.list_hmac_keys(project_id=PROJECT)]
    deleted = admin.list_hmac_keys(show_deleted_keys=True, project_id=PROJECT)
    assert "DELETED" in [k.state for k in deleted if k.access_id == metadata.access_id]


def test_a_service_account_cannot_manage_keys(secured):
    from google.api_core import exceptions
    client = secured.client(secured.accounts["uploader"])
    with pytest.raises(exceptions.Forbidden):
        client.create_hmac_key(service_account_email=secured.accounts["uploader"].email, project_id=PROJECT)


def test_hmac_signed_get_and_put(secured, admin, bucket_name):
    metadata, secret = admin.create_hmac_key(service_account_email=secured.accounts["uploader"].email,
                                             project_id=PROJECT)
    url = signed_url(secured, metadata.access_id, secret, "GET", bucket_name, "photo.jpg")
    response = requests.get(url)
    assert response.status_code == 200, response.text

    put = signed_url(secured, metadata.access_id, secret, "PUT", bucket_name, "new.txt",
                     headers={"Content-Type": "text/plain"})
    response = requests.put(put, data=b"signed with hmac", headers={"Content-Type": "text/plain"})
    assert response.status_code == 200, response.text
    assert admin.bucket(bucket_name).blob("new.txt").download_as_bytes() == b"signed with hmac"
    # The signature covers the signed header's value.
    response = requests.put(put, data=b"x", headers={"Content-Type": "text/html"})
    assert response.status_code == 403 and xml_code(response) == "SignatureDoesNotMatch", response.text


def test_hmac_refusals(secured, admin, bucket_name):
    metadata, secret = admin.create_hmac_key(service_account_email=secured.accounts["uploader"].email,
                                             project_id=PROJECT)
    wrong = signed_url(secured, metadata.access_id, secret[::-1], "GET", bucket_name, "photo.jpg")
    response = requests.get(wrong)
    assert response.status_code == 403 and xml_code(response) == "SignatureDoesNotMatch", response.text
    old = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(hours=2)
    expired = signed_url(secured, metadata.access_id, secret, "GET", bucket_name, "photo.jpg", expires=60, now=old)
    response = requests.get(expired)
    assert response.status_code == 400 and xml_code(response) == "ExpiredToken", response.text
    unknown = signed_url(secured, "GOOG1ENOSUCHKEY", secret, "GET", bucket_name, "photo.jpg")
    assert requests.get(unknown).status_code == 403

    # A deactivated key signs nothing any more.
    url = signed_url(secured, metadata.access_id, secret, "GET", bucket_name, "photo.jpg")
    assert requests.get(url).status_code == 200
    metadata.state = "INACTIVE"
    metadata.update()
    assert requests.get(url).status_code == 403


def test_hmac_signer_is_held_to_its_permissions(secured, admin, bucket_name):
    # The viewer has no binding on the bucket: its key's signature verifies, and IAM refuses it.
    metadata, secret = admin.create_hmac_key(service_account_email=secured.accounts["viewer"].email,
                                             project_id=PROJECT)
    response = requests.get(signed_url(secured, metadata.access_id, secret, "GET", bucket_name, "photo.jpg"))
    assert response.status_code == 403 and xml_code(response) == "AccessDenied", response.text


def test_hmac_authorization_header(secured, admin, bucket_name):
    metadata, secret = admin.create_hmac_key(service_account_email=secured.accounts["uploader"].email,
                                             project_id=PROJECT)
    url = f"{secured.endpoint}/{bucket_name}/photo.jpg"
    response = requests.get(url, headers=signed_headers(secured, metadata.access_id, secret, "GET", bucket_name,
                                                         "photo.jpg"))
    assert response.status_code == 200, response.text
    wrong = signed_headers(secured, metadata.access_id, secret[::-1], "GET", bucket_name, "photo.jpg")
    response = requests.get(url, headers=wrong)
    assert response.status_code == 403 and xml_code(response) == "SignatureDoesNotMatch", response.text
