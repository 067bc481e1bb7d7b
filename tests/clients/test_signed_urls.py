"""V4 signed URLs and POST policies from google-cloud-storage (`blob.generate_signed_url(version="v4")`,
`client.generate_signed_post_policy_v4`), used with `requests` and `curl` against a secured Silo that verifies them
with the signer's registered key and holds the signer to its IAM permissions (issue 15 item 3).

URLs are signed as an app signs them in production, for `https://storage.googleapis.com`, and sent to Silo with only
the scheme and host changed (Silo's `--signed-url-host` defaults to that host); some are signed for Silo's own
address instead. Signed GET, PUT and resumable URLs go to the XML API's object and upload routes.
"""
import datetime
import os
import re
import subprocess
import time

import pytest
import requests

import service_account_silo

BINARY = os.environ.get("SILO_BINARY", os.path.join(os.path.dirname(__file__), "..", "..", ".build", "release", "silo"))
GCS = "https://storage.googleapis.com"


@pytest.fixture(scope="module")
def secured():
    yield from service_account_silo.start(BINARY)


@pytest.fixture
def bucket_name(secured, request, monkeypatch):
    monkeypatch.delenv("STORAGE_EMULATOR_HOST", raising=False)
    name = "su-" + re.sub(r"[^a-z0-9]", "-", request.node.name.lower())[:50].strip("-")
    secured.create_bucket(name)
    secured.bind(name, "roles/storage.objectAdmin", secured.accounts["uploader"])
    return name


@pytest.fixture
def blob(secured, bucket_name):
    """An object stored through the JSON API by the uploader, whose client signs the URLs."""
    client = secured.client(secured.accounts["uploader"])
    blob = client.bucket(bucket_name).blob("photo.jpg")
    blob.upload_from_string(b"jpeg bytes", content_type="image/jpeg")
    return blob


def at_silo(url, secured):
    assert url.startswith(GCS + "/"), url
    return secured.endpoint + url[len(GCS):]


def sign(blob, **options):
    return blob.generate_signed_url(version="v4", expiration=datetime.timedelta(minutes=15), api_access_endpoint=GCS,
                                    **options)


def xml_code(response):
    match = re.search(r"<Code>([^<]*)</Code>", response.text)
    return match and match.group(1)


def test_signed_get_with_requests_and_curl(secured, bucket_name, blob):
    url = at_silo(sign(blob), secured)
    response = requests.get(url)
    assert response.status_code == 200 and response.content == b"jpeg bytes"
    curl = subprocess.run(["curl", "-sS", "--fail", url], capture_output=True, check=True)
    assert curl.stdout == b"jpeg bytes"
    # Signed for Silo's own address instead.
    direct = blob.generate_signed_url(version="v4", expiration=datetime.timedelta(minutes=5),
                                      api_access_endpoint=secured.endpoint)
    assert requests.get(direct).content == b"jpeg bytes"


def test_signed_put_then_read_back(secured, bucket_name, blob):
    target = blob.bucket.blob("uploaded.txt")
    url = at_silo(sign(target, method="PUT", content_type="text/plain"), secured)
    assert requests.put(url, data=b"put through a signed URL", headers={"Content-Type": "text/plain"}).status_code == 200
    assert target.download_as_bytes() == b"put through a signed URL"
    # The signed Content-Type must come with the request.
    refused = requests.put(url, data=b"x", headers={"Content-Type": "text/html"})
    assert refused.status_code == 403 and xml_code(refused) == "SignatureDoesNotMatch"


def test_signed_resumable_upload(secured, bucket_name, blob):
    target = blob.bucket.blob("resumable.bin")
    url = at_silo(sign(target, method="RESUMABLE"), secured)
    start = requests.post(url, headers={"x-goog-resumable": "start"})
    assert start.status_code == 201, start.text
    session = start.headers["Location"]
    data = os.urandom(300_000)
    assert requests.put(session, data=data).status_code in (200, 201)
    assert target.download_as_bytes() == data


def test_tampered_wrong_method_and_expired_urls_are_refused(secured, bucket_name, blob):
    url = at_silo(sign(blob), secured)
    tampered = requests.get(url.replace("photo.jpg", "photo.jpeg"))
    assert tampered.status_code == 403 and xml_code(tampered) == "SignatureDoesNotMatch"
    assert "<StringToSign>GOOG4-RSA-SHA256" in tampered.text
    curl = subprocess.run(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "-X", "DELETE", url],
                          capture_output=True, text=True, check=True)
    assert curl.stdout == "403"
    short = at_silo(blob.generate_signed_url(version="v4", expiration=datetime.timedelta(seconds=1),
                                             api_access_endpoint=GCS), secured)
    time.sleep(2)  # past its one-second lifetime; nothing here depends on how long anything took
    expired = requests.get(short)
    assert expired.status_code == 400 and xml_code(expired) == "ExpiredToken"


def test_the_signer_needs_the_permission(secured, bucket_name, blob):
    from google.cloud import storage
    viewer_client = secured.client(secured.accounts["viewer"])  # registered, but no binding on this bucket
    url = at_silo(viewer_client.bucket(bucket_name).blob("photo.jpg").generate_signed_url(
        version="v4", expiration=datetime.timedelta(minutes=5), api_access_endpoint=GCS), secured)
    denied = requests.get(url)
    assert denied.status_code == 403 and xml_code(denied) == "AccessDenied"
    outsider = storage.Client(project="silo-clients", credentials=secured.credentials(secured.accounts["outsider"]),
                              client_options={"api_endpoint": secured.endpoint})
    url = at_silo(outsider.bucket(bucket_name).blob("photo.jpg").generate_signed_url(
        version="v4", expiration=datetime.timedelta(minutes=5), api_access_endpoint=GCS), secured)
    assert requests.get(url).status_code == 403


def policy_form(secured, bucket_name, key, **options):
    """A POST policy form for `key`; its URL is the client's API endpoint (a policy signs no host)."""
    client = secured.client(secured.accounts["uploader"])
    policy = client.generate_signed_post_policy_v4(bucket_name, key, expiration=datetime.timedelta(minutes=10),
                                                   **options)
    assert policy["url"] == f"{secured.endpoint}/{bucket_name}/"
    return policy["url"], policy["fields"]


def test_post_policy_form_upload(secured, bucket_name):
    url, fields = policy_form(secured, bucket_name, "forms/${filename}",
                              fields={"x-goog-meta-origin": "html form", "content-type": "text/plain"},
                              conditions=[["content-length-range", 0, 1000]])
    response = requests.post(url, data=fields, files={"file": ("hello.txt", b"hello from a form")})
    assert response.status_code == 204, response.text
    status, meta = secured.admin("GET", f"/storage/v1/b/{bucket_name}/o/forms%2Fhello.txt")
    assert status == 200 and meta["contentType"] == "text/plain" and meta["metadata"] == {"origin": "html form"}
    status, _, data = service_account_silo.request(
        secured.port, "GET", f"/storage/v1/b/{bucket_name}/o/forms%2Fhello.txt?alt=media",
        headers={"Authorization": f"Bearer {service_account_silo.ADMIN_KEY}"})
    assert data == b"hello from a form"


def test_post_policy_conditions_are_enforced(secured, bucket_name):
    url, fields = policy_form(secured, bucket_name, "limited.bin", conditions=[["content-length-range", 0, 10]])
    too_big = requests.post(url, data=fields, files={"file": ("x.bin", b"x" * 100)})
    assert too_big.status_code == 400, too_big.text
    renamed = dict(fields, key="elsewhere.bin")
    refused = requests.post(url, data=renamed, files={"file": ("x.bin", b"x")})
    assert refused.status_code == 400 and xml_code(refused) == "InvalidPolicyDocument"
    for name in ("limited.bin", "elsewhere.bin"):
        status, _ = secured.admin("GET", f"/storage/v1/b/{bucket_name}/o/{name}")
        assert status == 404, name
    fits = requests.post(url, data=fields, files={"file": ("x.bin", b"x" * 10)})
    assert fits.status_code == 204


def test_obstore_signed_urls(secured, bucket_name, blob):
    """object_store always signs for storage.googleapis.com, whatever its base URL: Silo's default signing host."""
    import obstore
    store = secured.obstore(secured.accounts["uploader"], bucket_name)
    get = obstore.sign(store, "GET", "photo.jpg", datetime.timedelta(minutes=5))
    assert get.startswith(f"{secured.endpoint}/{bucket_name}/photo.jpg?"), get
    assert requests.get(get).content == b"jpeg bytes"
    put = obstore.sign(store, "PUT", "signed by obstore.txt", datetime.timedelta(minutes=5))
    assert requests.put(put, data=b"from obstore").status_code == 200
    assert blob.bucket.blob("signed by obstore.txt").download_as_bytes() == b"from obstore"
    assert requests.delete(get).status_code == 403  # signed for GET
