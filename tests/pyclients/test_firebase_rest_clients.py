"""pyrebase4 and firebase-rest-api, the Python Firebase clients that speak the v0 REST API directly: upload,
download (with their quirk of sending the ID token as `token=`), download URLs and delete, as their users call them,
against a live `silo serve` with Security Rules that require a signed-in user."""
import base64
import json
import os
import shutil
import sys
import tempfile

import pytest
import requests

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from silo_process import start_silo  # noqa: E402

BINARY = os.environ.get("SILO_BINARY", os.path.join(os.path.dirname(__file__), "..", "..", ".build", "release", "silo"))
BUCKET = "demo-pyclients.appspot.com"
RULES = """rules_version = '2';
service firebase.storage {
  match /b/{bucket}/o {
    match /users/{uid}/{file=**} { allow read, write: if request.auth != null && request.auth.uid == uid; }
  }
}
"""
CONFIG = {"apiKey": "k", "authDomain": "demo-pyclients.firebaseapp.com", "databaseURL": "http://127.0.0.1:1",
          "storageBucket": BUCKET, "projectId": "demo-pyclients"}


def id_token(uid):
    """An emulator ID token (unsigned, as the Firebase Auth emulator issues them)."""
    def part(value):
        return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()
    return part({"alg": "none", "typ": "JWT"}) + "." + part({"sub": uid, "user_id": uid, "aud": "demo-pyclients",
                                                            "iss": "https://securetoken.google.com/demo-pyclients"}) + "."


@pytest.fixture(scope="module")
def silo():
    work = tempfile.mkdtemp(prefix="silo-pyclients-")
    rules = os.path.join(work, "storage.rules")
    with open(rules, "w") as f:
        f.write(RULES)
    proc, port, _ = start_silo(BINARY, "--data", os.path.join(work, "data"), "--emulator", "--rules", rules,
                               "--bucket", BUCKET)
    yield f"http://127.0.0.1:{port}/v0/b/{BUCKET}"
    proc.terminate()
    proc.wait(timeout=30)
    shutil.rmtree(work, ignore_errors=True)


def pyrebase_storage(base):
    import pyrebase
    storage = pyrebase.initialize_app(dict(CONFIG)).storage()
    storage.storage_bucket = base  # the library hard-codes firebasestorage.googleapis.com
    return storage


def rest_api_storage(base):
    import firebase
    storage = firebase.initialize_app(dict(CONFIG)).storage()
    storage.storage_bucket = base
    return storage


def test_pyrebase4_upload_download_url_delete(silo, tmp_path):
    token = id_token("alice")
    storage = pyrebase_storage(silo)
    source = tmp_path / "photo.jpg"
    source.write_bytes(b"\xff\xd8 not really a jpeg " * 100)
    stored = storage.child("users/alice/photo one.jpg").put(str(source), token)
    assert stored["name"] == "users/alice/photo one.jpg" and stored["size"] == str(source.stat().st_size)
    # pyrebase4 puts the ID token where the download token goes, and sends it as Authorization too.
    url = storage.child("users/alice/photo one.jpg").get_url(token)
    assert "token=" + token in url
    target = tmp_path / "back.jpg"
    storage.child("users/alice/photo one.jpg").download("users/alice/photo one.jpg", str(target), token)
    assert target.read_bytes() == source.read_bytes()
    # Without credentials the same URL is decided by the rules: denied.
    assert requests.get(storage.child("users/alice/photo one.jpg").get_url(None)).status_code == 403
    # Someone else's token in the URL and header: denied by the rules.
    mallory = id_token("mallory")
    assert requests.get(url.replace(token, mallory), headers={"Authorization": "Firebase " + mallory}).status_code == 403
    storage.delete("users/alice/photo one.jpg", token)
    assert requests.get(f"{silo}/o/users%2Falice%2Fphoto%20one.jpg",
                        headers={"Authorization": "Firebase " + token}).status_code == 404


def test_firebase_rest_api_upload_download_url_delete(silo, tmp_path):
    token = id_token("bob")
    storage = rest_api_storage(silo)
    payload = os.urandom(300_000)
    stored = storage.child("users/bob/data.bin").put(payload, token)
    assert int(stored["size"]) == len(payload)
    # firebase-rest-api fetches the object's real download token for its URL: that URL needs no credentials.
    url = storage.child("users/bob/data.bin").get_url(token)
    assert "token=" in url and token not in url
    assert requests.get(url).content == payload
    target = tmp_path / "data.bin"
    storage.child("users/bob/data.bin").download(str(target), token)
    assert target.read_bytes() == payload
    storage.child("users/bob/data.bin").delete(token)
    # The token died with the object: without credentials the rules decide first (403 before 404, as Firebase).
    assert requests.get(url).status_code == 403
    assert requests.get(url, headers={"Authorization": "Firebase " + token}).status_code == 404
    with pytest.raises(requests.HTTPError):
        rest_api_storage(silo).child("users/bob/other.bin").put(b"x", id_token("eve"))


def replayed_answers(base):
    text = requests.get(base.split("/v0/")[0] + "/metrics").text
    return int(next(line.split()[1] for line in text.splitlines()
                    if line.startswith("silo_replayed_answers_total ")))


def test_firebase_rest_api_download_url_of_a_small_object_is_replayed_until_deleted(silo):
    # A small object's download URL fetched again and again, as an app shows an image: the server answers it from
    # its memo of the same request (silo_replayed_answers_total), and the library's delete ends that at once.
    token = id_token("bob")
    storage = rest_api_storage(silo)
    payload = os.urandom(1024)
    storage.child("users/bob/avatar.png").put(payload, token)
    url = storage.child("users/bob/avatar.png").get_url(token)
    before = replayed_answers(silo)
    with requests.Session() as session:  # one keep-alive connection: one event loop's memo
        for _ in range(6):
            assert session.get(url).content == payload
        assert replayed_answers(silo) - before >= 3
        storage.child("users/bob/avatar.png").delete(token)
        assert session.get(url).status_code == 403
