"""polars reading and writing `gs://` through its storage_options pointed at Silo (Rust's object_store underneath,
which speaks the GCS XML API): write_parquet, read_parquet, scan_csv over a glob."""
import json

import polars as pl
import pytest


@pytest.fixture
def options(silo, tmp_path):
    # The service-account file object_store documents for emulators: Silo's URL as `gcs_base_url`, no OAuth.
    # (`google_base_url` with `google_skip_signature` reads too, but polars 2.1 still asks the metadata server for
    # a token before it writes.)
    account = tmp_path / "account.json"
    account.write_text(json.dumps({"gcs_base_url": silo.endpoint, "disable_oauth": True, "client_email": "",
                                   "private_key": "", "private_key_id": ""}))
    return {"google_service_account": str(account), "max_retries": 0}


def frame(start, count):
    return pl.DataFrame({"id": list(range(start, start + count)), "name": [f"row {i}" for i in range(start, start + count)]})


def test_write_and_read_parquet(bucket_name, options):
    df = frame(0, 1000)
    url = f"gs://{bucket_name}/tables/people.parquet"
    df.write_parquet(url, storage_options=options)
    back = pl.read_parquet(url, storage_options=options)
    assert back.equals(df)
    lazy = pl.scan_parquet(url, storage_options=options).filter(pl.col("id") >= 990).select("name").collect()
    assert lazy["name"].to_list() == [f"row {i}" for i in range(990, 1000)]


def test_read_parquet_glob(bucket_name, options):
    for part in range(3):
        frame(part * 10, 10).write_parquet(f"gs://{bucket_name}/parts/part-{part}.parquet", storage_options=options)
    frame(100, 5).write_parquet(f"gs://{bucket_name}/other/part-9.parquet", storage_options=options)
    back = pl.read_parquet(f"gs://{bucket_name}/parts/*.parquet", storage_options=options).sort("id")
    assert back["id"].to_list() == list(range(30))


def test_scan_csv_glob(bucket_name, options):
    for part in range(3):
        frame(part * 100, 100).write_csv(f"gs://{bucket_name}/csv/day={part}/data.csv", storage_options=options)
    total = (pl.scan_csv(f"gs://{bucket_name}/csv/**/*.csv", storage_options=options)
             .select(pl.len(), pl.col("id").max()).collect())
    assert total.row(0) == (300, 299)
