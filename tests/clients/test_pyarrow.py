"""pyarrow's GcsFileSystem (google-cloud-cpp underneath) against Silo: `endpoint_override`, `scheme="http"`,
anonymous. A partitioned Parquet dataset written and read back, listing, streams, random access, delete.
"""
import hashlib
from datetime import timedelta

import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest
from pyarrow import fs


@pytest.fixture
def gcs(silo):
    return fs.GcsFileSystem(anonymous=True, endpoint_override=f"127.0.0.1:{silo.port}", scheme="http",
                            project_id="demo", retry_time_limit=timedelta(seconds=10))


def payload(size, seed):
    block = hashlib.sha256(str(seed).encode()).digest() * 2048
    return (block * (size // len(block) + 1))[:size]


def test_parquet_dataset(gcs, bucket_name):
    table = pa.table({
        "year": pa.array([2024, 2024, 2025, 2025, 2026] * 200, pa.int32()),
        "id": pa.array(range(1000), pa.int64()),
        "name": pa.array([f"row-{i}" for i in range(1000)]),
    })
    root = f"{bucket_name}/sales"
    pq.write_to_dataset(table, root, filesystem=gcs, partition_cols=["year"])
    files = [i for i in gcs.get_file_info(fs.FileSelector(root, recursive=True)) if i.type == fs.FileType.File]
    assert sorted({f.path.split("/")[2] for f in files}) == ["year=2024", "year=2025", "year=2026"]
    assert all(f.path.endswith(".parquet") and f.size > 0 for f in files)

    back = ds.dataset(root, filesystem=gcs, format="parquet", partitioning="hive").to_table()
    assert back.sort_by("id").select(["id", "name"]) == table.sort_by("id").select(["id", "name"])
    assert sorted(back.column("year").to_pylist()) == sorted(table.column("year").to_pylist())
    only = ds.dataset(root, filesystem=gcs, format="parquet", partitioning="hive").to_table(
        filter=ds.field("year") == 2026)
    assert only.num_rows == 200

    # A single file too, read with pq.read_table (footer first: ranged reads).
    pq.write_table(table, f"{bucket_name}/one.parquet", filesystem=gcs)
    assert pq.read_table(f"{bucket_name}/one.parquet", filesystem=gcs) == table

    gcs.delete_dir(root)
    assert gcs.get_file_info(root).type == fs.FileType.NotFound
    assert gcs.get_file_info(f"{bucket_name}/one.parquet").type == fs.FileType.File


def test_streams_and_random_access(gcs, bucket_name):
    data = payload((3 << 20) + 17, 7)
    path = f"{bucket_name}/blobs/data.bin"
    # GCS has no directories: pyarrow lists one only where create_dir left its marker object (`blobs/`).
    gcs.create_dir(f"{bucket_name}/blobs")
    with gcs.open_output_stream(path, metadata={"Content-Type": "application/x-test"}) as out:
        for start in range(0, len(data), 1 << 20):
            out.write(data[start:start + (1 << 20)])
    info = gcs.get_file_info(path)
    assert info.type == fs.FileType.File and info.size == len(data)

    with gcs.open_input_stream(path) as stream:
        assert stream.read() == data
    with gcs.open_input_file(path) as f:
        assert f.size() == len(data)
        assert f.read_at(100, len(data) - 100) == data[-100:]
        f.seek(1 << 20)
        assert f.read(5000) == data[1 << 20:(1 << 20) + 5000]
        assert f.read_at(10, 0) == data[:10]

    gcs.copy_file(path, f"{bucket_name}/blobs/copy.bin")
    gcs.move(f"{bucket_name}/blobs/copy.bin", f"{bucket_name}/moved.bin")
    with gcs.open_input_stream(f"{bucket_name}/moved.bin") as stream:
        assert stream.read() == data
    listed = sorted(i.path for i in gcs.get_file_info(fs.FileSelector(bucket_name, recursive=True)))
    assert listed == [f"{bucket_name}/blobs", path, f"{bucket_name}/moved.bin"]
    top = {i.path: i.type for i in gcs.get_file_info(fs.FileSelector(bucket_name))}
    assert top == {f"{bucket_name}/blobs": fs.FileType.Directory, f"{bucket_name}/moved.bin": fs.FileType.File}

    gcs.delete_file(path)
    gcs.delete_file(f"{bucket_name}/moved.bin")
    assert gcs.get_file_info(path).type == fs.FileType.NotFound
