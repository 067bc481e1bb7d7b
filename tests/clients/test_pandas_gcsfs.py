"""pandas on `gs://` through gcsfs (fsspec) against Silo: `storage_options` with the endpoint and `token="anon"`.
Parquet and CSV written and read back, a glob of files, the listing gcsfs sees, and delete.
"""
import gcsfs
import pandas as pd
import pytest


@pytest.fixture
def options(silo):
    return {"endpoint_url": silo.endpoint, "token": "anon"}


def frame(n, offset=0):
    ids = range(offset, offset + n)
    return pd.DataFrame({
        "id": ids,
        "city": [["Oslo", "Lima", "Pune", "Accra"][i % 4] for i in ids],
        "price": [round(i * 1.25, 2) for i in ids],
    })


def test_parquet_and_csv(options, bucket_name):
    df = frame(5000)
    df.to_parquet(f"gs://{bucket_name}/tables/sales.parquet", storage_options=options, index=False)
    back = pd.read_parquet(f"gs://{bucket_name}/tables/sales.parquet", storage_options=options)
    pd.testing.assert_frame_equal(back, df)
    subset = pd.read_parquet(f"gs://{bucket_name}/tables/sales.parquet", storage_options=options,
                             columns=["city"], filters=[("id", ">=", 4990)])
    assert subset["city"].tolist() == df["city"].tolist()[4990:]

    for part in range(3):
        frame(100, offset=part * 100).to_csv(f"gs://{bucket_name}/csv/part-{part}.csv", storage_options=options,
                                             index=False)
    one = pd.read_csv(f"gs://{bucket_name}/csv/part-1.csv", storage_options=options)
    pd.testing.assert_frame_equal(one, frame(100, offset=100))

    fs = gcsfs.GCSFileSystem(**options)
    parts = sorted(fs.glob(f"{bucket_name}/csv/*.csv"))
    assert parts == [f"{bucket_name}/csv/part-{i}.csv" for i in range(3)]
    combined = pd.concat([pd.read_csv(f"gs://{p}", storage_options=options) for p in parts], ignore_index=True)
    pd.testing.assert_frame_equal(combined, frame(300))
    # The bytes as written: gcsfs's own cat against what pandas would have written locally.
    assert fs.cat(f"{bucket_name}/csv/part-2.csv") == frame(100, offset=200).to_csv(index=False).encode()
    assert fs.ls(f"{bucket_name}") == [f"{bucket_name}/csv", f"{bucket_name}/tables"]

    fs.rm(f"{bucket_name}/csv", recursive=True)
    fs.invalidate_cache()
    assert not fs.exists(f"{bucket_name}/csv/part-0.csv")
    assert fs.ls(f"{bucket_name}") == [f"{bucket_name}/tables"]
