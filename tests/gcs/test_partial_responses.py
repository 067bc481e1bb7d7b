"""google-cloud-storage's partial responses (`fields=`) against a live silo serve, as its users ask for them."""
import json
import urllib.error
import urllib.request

import pytest
from google.api_core import exceptions


def raw_json(silo, path):
    with urllib.request.urlopen(silo + path) as response:
        return json.loads(response.read())


def test_exists_asks_for_the_name_alone(silo, bucket):
    bucket.blob("here.txt").upload_from_string(b"x")
    # Blob.exists() and Bucket.exists() send fields=name; the answer is that member only.
    assert bucket.blob("here.txt").exists()
    assert not bucket.blob("missing.txt").exists()
    assert bucket.exists()
    assert raw_json(silo, f"/storage/v1/b/{bucket.name}/o/here.txt?fields=name") == {"name": "here.txt"}
    assert raw_json(silo, f"/storage/v1/b/{bucket.name}?fields=name") == {"name": bucket.name}


def test_list_blobs_with_a_selector_pages_and_fills_only_what_it_selected(bucket):
    for i in range(5):
        bucket.blob(f"p/{i}.txt").upload_from_string(b"%d" % i, content_type="text/plain")
    blobs = list(bucket.list_blobs(prefix="p/", max_results=5, page_size=2, fields="items(name,size),nextPageToken"))
    assert [b.name for b in blobs] == [f"p/{i}.txt" for i in range(5)]
    assert all(b.size == 1 for b in blobs)
    # Not selected, so not known: the client's attributes stay unset.
    assert all(b.content_type is None and b.md5_hash is None for b in blobs)


def test_list_buckets_with_a_selector(client, bucket):
    names = [b.name for b in client.list_buckets(fields="items(name),nextPageToken")]
    assert bucket.name in names
    assert all(b.location is None for b in client.list_buckets(fields="items(name)"))


def test_a_selector_naming_nothing_is_a_bad_request(bucket):
    bucket.blob("bad.txt").upload_from_string(b"x")
    with pytest.raises(exceptions.BadRequest) as refused:
        list(bucket.list_blobs(fields="items(nmae)"))
    assert "Invalid field selection" in str(refused.value)
