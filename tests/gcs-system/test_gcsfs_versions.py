"""gcsfs (and pandas through it) against a live Silo, as a user of one pinned gcsfs version would call it.

Run by run.py once per gcsfs virtualenv (requirements-gcsfs-*.txt), with STORAGE_EMULATOR_HOST pointing at the
capture relay in front of Silo, so what gcsfs sends in a failing case is in the run's http.jsonl / failures.md.
Sizes straddle gcsfs's 5 MiB line between its one-request multipart upload and a resumable upload.
"""
import os
import uuid

import fsspec
import gcsfs
import pytest
from fsspec.asyn import sync

MiB = 1 << 20
SIZES = {"0B": 0, "1B": 1, "5MiB-1": 5 * MiB - 1, "5MiB+1": 5 * MiB + 1}


def payload(n):
    # Not all one byte value, so a shifted or truncated body shows; cheap for 5 MiB.
    block = bytes(range(256)) * 4096
    return (block * (n // len(block) + 1))[:n]


@pytest.fixture(scope="module")
def fs():
    assert os.environ.get("STORAGE_EMULATOR_HOST"), "run through run.py"
    return gcsfs.GCSFileSystem(token="anon", project="silo-gcs-system", skip_instance_cache=True)


@pytest.fixture(scope="module")
def bucket(fs):
    name = "gcsfs-" + gcsfs.__version__.replace(".", "-") + "-" + uuid.uuid4().hex[:8]
    fs.mkdir(name)
    return name


def put_small(fs, path, data):
    # Setup writes go through fs.open (a resumable upload), not fs.pipe (the one-request multipart upload), so a
    # fault of the simple upload shows in the pipe/put tests alone and not in every listing or delete test too.
    with fs.open(path, "wb") as f:
        f.write(data)


def fresh(fs):
    fs.invalidate_cache()
    return fs


def test_versions_recorded(record_property):
    import pandas
    record_property("gcsfs", gcsfs.__version__)
    record_property("fsspec", fsspec.__version__)
    record_property("pandas", pandas.__version__)
    # The core class, not the experimental zonal/HNS subclass (GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT=false).
    assert type(gcsfs.GCSFileSystem(token="anon", skip_instance_cache=True)).__module__ == "gcsfs.core"


@pytest.mark.parametrize("size", SIZES.values(), ids=SIZES.keys())
def test_pipe_cat(fs, bucket, size):
    path = f"{bucket}/pipe/{size}.bin"
    data = payload(size)
    fs.pipe(path, data)
    assert fresh(fs).info(path)["size"] == size
    assert fs.cat(path) == data


@pytest.mark.parametrize("size", SIZES.values(), ids=SIZES.keys())
def test_put_get(fs, bucket, size, tmp_path):
    src, dst = tmp_path / "src.bin", tmp_path / "dst.bin"
    data = payload(size)
    src.write_bytes(data)
    path = f"{bucket}/put/{size}.bin"
    fs.put(str(src), path)
    fresh(fs).get(path, str(dst))
    assert dst.read_bytes() == data


@pytest.mark.parametrize("size", SIZES.values(), ids=SIZES.keys())
def test_open_wb(fs, bucket, size):
    path = f"{bucket}/open/{size}.bin"
    data = payload(size)
    with fs.open(path, "wb") as f:
        # Writes of 1 MiB: a file over the block size flushes resumable chunks as it goes.
        for i in range(0, max(size, 1), MiB):
            f.write(data[i:i + MiB])
    with fresh(fs).open(path, "rb") as f:
        assert f.read() == data


def test_ls(fs, bucket):
    base = f"{bucket}/ls"
    for name in ("a.txt", "b.txt", "sub/c.txt"):
        put_small(fs, f"{base}/{name}", name.encode())
    fresh(fs)
    assert sorted(fs.ls(base, detail=False)) == [f"{base}/a.txt", f"{base}/b.txt", f"{base}/sub"]
    detail = {e["name"]: e for e in fs.ls(base, detail=True)}
    assert detail[f"{base}/a.txt"]["type"] == "file" and detail[f"{base}/a.txt"]["size"] == 5
    assert detail[f"{base}/sub"]["type"] == "directory"
    assert sorted(fs.find(base)) == [f"{base}/a.txt", f"{base}/b.txt", f"{base}/sub/c.txt"]
    assert f"{bucket}" in [p.rstrip("/") for p in fresh(fs).ls("", detail=False)]


def test_rm_list(fs, bucket):
    # fs.rm of a list: on an emulator host gcsfs deletes one object per request; on Google it batches.
    paths = [f"{bucket}/rm/{i}.txt" for i in range(7)]
    for p in paths:
        put_small(fs, p, b"x")
    fs.rm(paths)
    assert fresh(fs).find(f"{bucket}/rm") == []


def test_rm_recursive(fs, bucket):
    for name in ("x/1", "x/2", "x/y/3"):
        put_small(fs, f"{bucket}/rmr/{name}", b"x")
    fs.rm(f"{bucket}/rmr", recursive=True)
    assert fresh(fs).find(f"{bucket}/rmr") == []


def test_rm_batch_endpoint(fs, bucket):
    # The batch request gcsfs sends on Google (POST /batch/storage/v1, multipart/mixed of DELETEs), called directly:
    # gcsfs only takes this path when its endpoint is storage.googleapis.com.
    paths = [f"{bucket}/batch/{i}.txt" for i in range(5)]
    for p in paths:
        put_small(fs, p, b"x")
    deleted = sync(fs.loop, fs._rm_files, paths)
    assert sorted(deleted) == sorted(paths)
    assert fresh(fs).find(f"{bucket}/batch") == []


def test_mv(fs, bucket):
    src, dst = f"{bucket}/mv/src.txt", f"{bucket}/mv/moved/dst.txt"
    put_small(fs, src, b"move me")
    fs.mv(src, dst)
    fresh(fs)
    assert fs.cat(dst) == b"move me"
    assert not fs.exists(src)


def test_mv_directory(fs, bucket):
    for name in ("1.txt", "d/2.txt"):
        put_small(fs, f"{bucket}/mvd/src/{name}", name.encode())
    fs.mv(f"{bucket}/mvd/src", f"{bucket}/mvd/dst", recursive=True)
    fresh(fs)
    assert sorted(fs.find(f"{bucket}/mvd")) == [f"{bucket}/mvd/dst/1.txt", f"{bucket}/mvd/dst/d/2.txt"]


def test_pandas_csv(bucket):
    import pandas as pd
    df = pd.DataFrame({"id": range(1000), "name": [f"row {i}" for i in range(1000)], "x": [i / 7 for i in range(1000)]})
    url = f"gs://{bucket}/pandas/frame.csv"
    options = {"token": "anon", "project": "silo-gcs-system"}
    df.to_csv(url, index=False, storage_options=options)
    back = pd.read_csv(url, storage_options=options)
    pd.testing.assert_frame_equal(back, df)


def test_pandas_csv_gzip(bucket):
    import pandas as pd
    df = pd.DataFrame({"a": list(range(20000)), "b": ["v" * 20] * 20000})
    url = f"gs://{bucket}/pandas/frame.csv.gz"
    options = {"token": "anon", "project": "silo-gcs-system"}
    df.to_csv(url, index=False, compression="gzip", storage_options=options)
    pd.testing.assert_frame_equal(pd.read_csv(url, compression="gzip", storage_options=options), df)
