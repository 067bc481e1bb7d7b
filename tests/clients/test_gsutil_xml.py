"""gsutil (PyPI) in XML mode against Silo's XML API, through the `tls` fixture.

gsutil speaks the XML API (through its vendored boto) when a user sets `prefer_api = xml`, or for the operations the
JSON API lacks; this is how it then lists buckets (`GET /` with `x-goog-project-id`), lists generations (`ls -a`:
`GET /B?versions` paged by `marker` and `generation-marker`), reads and sets ACLs (`?acl`, `?defaultObjectAcl` in
`<AccessControlList>`), versioning (`?versioning`) and a bucket's whole configuration (`ls -L -b`: `?storageClass`,
`?acl`, `?cors`, `?defaultObjectAcl`, `?encryptionConfig`, `?lifecycle`, `?logging`, `?websiteConfig`, `?location`,
`?tagging`, `?versioning`). No credentials: an anonymous caller, which emulator mode lets do everything.
"""
import json
import os
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from silo_process import request  # noqa: E402

from gsutil_runner import GSUTIL, gsutil_runner  # noqa: E402,F401


@pytest.fixture
def gsutil(tls, tmp_path):
    return gsutil_runner(tls, tmp_path, "xml")


def json_acl(silo, path):
    status, _, body = request(silo.port, "GET", path)
    assert status == 200, body
    return sorted(f"{e['entity']}={e['role']}" for e in json.loads(body).get("items", []))


def test_buckets_listed_made_and_described(gsutil, silo, bucket_name):
    name = bucket_name + "-made"
    gsutil("mb", "-p", "demo", f"gs://{name}")
    listed = gsutil("ls").stdout.split()
    assert f"gs://{name}/" in listed and f"gs://{bucket_name}/" in listed
    described = gsutil("ls", "-L", "-b", f"gs://{name}").stdout
    assert "Storage class:" in described and "STANDARD" in described
    assert "Location constraint:" in described and "US" in described
    gsutil("rb", f"gs://{name}")
    assert f"gs://{name}/" not in gsutil("ls").stdout.split()


def test_versioning_and_generations(gsutil, bucket_name, tmp_path):
    gsutil("versioning", "set", "on", f"gs://{bucket_name}")
    assert gsutil("versioning", "get", f"gs://{bucket_name}").stdout.strip() == f"gs://{bucket_name}: Enabled"
    first, second = tmp_path / "v1.txt", tmp_path / "v2.txt"
    first.write_text("first version\n")
    second.write_text("second version, longer\n")
    gsutil("cp", str(first), f"gs://{bucket_name}/doc.txt")
    gsutil("cp", str(second), f"gs://{bucket_name}/doc.txt")
    gsutil("cp", str(first), f"gs://{bucket_name}/dir/other.txt")
    versions = gsutil("ls", "-a", f"gs://{bucket_name}/doc.txt").stdout.split()
    assert len(versions) == 2 and all(v.startswith(f"gs://{bucket_name}/doc.txt#") for v in versions), versions
    old, new = sorted(versions, key=lambda v: int(v.split("#")[1]))
    assert gsutil("cat", old).stdout == "first version\n"
    assert gsutil("cat", f"gs://{bucket_name}/doc.txt").stdout == "second version, longer\n"
    # Every generation of the bucket, recursively: two of doc.txt, one of dir/other.txt.
    everything = gsutil("ls", "-a", "-r", f"gs://{bucket_name}").stdout.split()
    assert sorted(v.split("#")[0] for v in everything if "#" in v) == [
        f"gs://{bucket_name}/dir/other.txt", f"gs://{bucket_name}/doc.txt", f"gs://{bucket_name}/doc.txt"]
    gsutil("rm", old)
    assert gsutil("ls", "-a", f"gs://{bucket_name}/doc.txt").stdout.split() == [new]
    gsutil("versioning", "set", "off", f"gs://{bucket_name}")
    assert gsutil("versioning", "get", f"gs://{bucket_name}").stdout.strip() == f"gs://{bucket_name}: Suspended"


def test_object_and_bucket_acls(gsutil, silo, bucket_name, tmp_path):
    path = tmp_path / "shared.txt"
    path.write_text("to share\n")
    gsutil("cp", str(path), f"gs://{bucket_name}/shared.txt")
    acl = json.loads(gsutil("acl", "get", f"gs://{bucket_name}/shared.txt").stdout)
    assert {e["role"] for e in acl} == {"OWNER", "READER"}
    gsutil("acl", "ch", "-u", "AllUsers:R", f"gs://{bucket_name}/shared.txt")
    assert "allUsers=READER" in json_acl(silo, f"/storage/v1/b/{bucket_name}/o/shared.txt/acl")
    assert any(e.get("entity") == "allUsers" and e["role"] == "READER"
               for e in json.loads(gsutil("acl", "get", f"gs://{bucket_name}/shared.txt").stdout))
    # `acl set` with a file (a canned name makes gsutil open a signed boto connection: it needs credentials). gsutil
    # refuses to send project entities through the XML API, so the file names a user and the public.
    owner = {"entity": "user-ann@example.com", "email": "ann@example.com", "role": "OWNER"}
    private = tmp_path / "private.json"
    private.write_text(json.dumps([owner]))
    gsutil("acl", "set", str(private), f"gs://{bucket_name}/shared.txt")
    assert json_acl(silo, f"/storage/v1/b/{bucket_name}/o/shared.txt/acl") == ["user-ann@example.com=OWNER"]
    assert gsutil("cat", f"gs://{bucket_name}/shared.txt").stdout == "to share\n", "the bytes survive ACL calls"

    public = tmp_path / "public.json"
    public.write_text(json.dumps([owner, {"entity": "allUsers", "role": "READER"}]))
    gsutil("acl", "set", str(public), f"gs://{bucket_name}")
    assert json_acl(silo, f"/storage/v1/b/{bucket_name}/acl") == ["allUsers=READER", "user-ann@example.com=OWNER"]
    gsutil("defacl", "set", str(public), f"gs://{bucket_name}")
    assert json_acl(silo, f"/storage/v1/b/{bucket_name}/defaultObjectAcl") == [
        "allUsers=READER", "user-ann@example.com=OWNER"]
    assert any(e.get("entity") == "allUsers" for e in json.loads(gsutil("defacl", "get", f"gs://{bucket_name}").stdout))
    gsutil("cp", str(path), f"gs://{bucket_name}/after.txt")
    assert json_acl(silo, f"/storage/v1/b/{bucket_name}/o/after.txt/acl") == [
        "allUsers=READER", "user-ann@example.com=OWNER"]
