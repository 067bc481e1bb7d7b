"""The batch endpoint (POST /batch/storage/v1) through the real clients: google-cloud-storage's client.batch() and
gcsfs's bulk rm, which sends up to 100 deletes per batch."""
import pytest
from google.api_core import exceptions


def names(bucket, prefix=""):
    return sorted(b.name for b in bucket.list_blobs(prefix=prefix))


def test_batch_deletes_and_patches(client, bucket):
    for i in range(6):
        bucket.blob(f"b/{i}.txt").upload_from_string(f"body {i}".encode())
    patched = bucket.blob("b/0.txt")
    with client.batch() as batch:
        for i in range(1, 6):
            bucket.blob(f"b/{i}.txt").delete()
        patched.metadata = {"color": "blue"}
        patched.content_type = "text/plain"
        patched.patch()
    assert len(batch._responses) == 6
    assert [r.status_code for r in batch._responses] == [204] * 5 + [200]
    assert names(bucket, "b/") == ["b/0.txt"]
    # The patch's answer became the blob's properties, as google-cloud-storage does after a batch.
    assert patched.metadata == {"color": "blue"}
    fresh = bucket.get_blob("b/0.txt")
    assert fresh.metadata == {"color": "blue"} and fresh.content_type == "text/plain"
    assert fresh.metageneration == 2


def test_batch_reports_each_failure(client, bucket):
    bucket.blob("keep.txt").upload_from_string(b"x")
    bucket.blob("gone.txt").upload_from_string(b"y")
    # The last failure is raised once every call has run; the calls before it took effect.
    with pytest.raises(exceptions.NotFound):
        with client.batch():
            bucket.blob("gone.txt").delete()
            bucket.blob("never-was.txt").delete()
    assert names(bucket) == ["keep.txt"]
    batch = client.batch(raise_exception=False)
    with batch:
        bucket.blob("keep.txt").delete(if_generation_match=1)
        bucket.blob("keep.txt").patch()
    assert [r.status_code for r in batch._responses] == [412, 200]
    assert "conditionNotMet" in batch._responses[0].text


def test_batch_bucket_patch(client, bucket):
    with client.batch():
        bucket.labels = {"team": "storage"}
        bucket.patch()
    assert client.get_bucket(bucket.name).labels == {"team": "storage"}


def gcsfs_batching(silo):
    """gcsfs batches deletes only against Google's own host (it takes any other for an emulator without batches):
    a subclass that says it is on Google takes the batched path, with anonymous credentials all the same."""
    from gcsfs.core import GCSFileSystem

    class BatchingGCSFileSystem(GCSFileSystem):
        on_google = True

    return BatchingGCSFileSystem(endpoint_url=silo, token="anon", project="demo", skip_instance_cache=True)


def count_batches(fs):
    """Records the size of every batch gcsfs sends (its _rm_files sends one)."""
    sizes = []
    original = fs._rm_files

    async def counting(paths):
        sizes.append(len(paths))
        return await original(paths)

    fs._rm_files = counting
    return sizes


@pytest.mark.parametrize("count", [5, 150])
def test_gcsfs_rm_list(silo, bucket, count):
    fs = gcsfs_batching(silo)
    paths = [f"{bucket.name}/many/{i:03}.bin" for i in range(count)]
    for p in paths:
        fs.pipe(p, b"z")
    fs.invalidate_cache()
    calls = count_batches(fs)
    fs.rm(paths)
    assert sorted(calls) == ([count] if count <= 100 else [count - 100, 100])
    fs.invalidate_cache()
    assert names(bucket, "many/") == []


@pytest.mark.parametrize("count", [5, 150])
def test_gcsfs_rm_recursive(silo, bucket, count):
    fs = gcsfs_batching(silo)
    for i in range(count):
        fs.pipe(f"{bucket.name}/tree/{i % 3}/{i:03}.txt", b"t")
    bucket.blob("outside.txt").upload_from_string(b"o")
    fs.invalidate_cache()
    calls = count_batches(fs)
    fs.rm(f"{bucket.name}/tree", recursive=True)
    # gcsfs deletes the implied directories too (tree/0, …): they answer 404, "No such object", which it ignores.
    assert sum(calls) >= count and max(calls) <= 100
    fs.invalidate_cache()
    assert names(bucket) == ["outside.txt"]
    assert not fs.exists(f"{bucket.name}/tree")


def test_gcsfs_rm_missing_file_is_not_found(silo, bucket):
    fs = gcsfs_batching(silo)
    fs.pipe(f"{bucket.name}/here.txt", b"h")
    # One present, one absent: gcsfs reads each part's status; the 404's "No such object" is not an error to it.
    fs.rm([f"{bucket.name}/here.txt", f"{bucket.name}/absent.txt"])
    assert names(bucket) == []
