"""gcloud-aio-storage (PyPI) against Silo through `STORAGE_EMULATOR_HOST`: upload (media, multipart with metadata,
resumable past its 5 MiB threshold), download (whole, streamed, to a file), list, metadata, copy, compose, delete.
"""
import asyncio
import hashlib

import aiohttp
import pytest
from gcloud.aio.storage import Storage


def data(size, seed):
    block = hashlib.sha256(str(seed).encode()).digest() * 2048
    return (block * (size // len(block) + 1))[:size]


@pytest.fixture
def storage_env(silo, monkeypatch):
    monkeypatch.setenv("STORAGE_EMULATOR_HOST", silo.endpoint)


def run(body):
    async def main():
        async with aiohttp.ClientSession() as session:
            await body(Storage(session=session))
    asyncio.run(main())


def test_everyday_workflow(storage_env, bucket_name, tmp_path):
    small = data(2_000, 1)
    # Over MAX_CONTENT_LENGTH_SIMPLE_UPLOAD (5 MiB): gcloud-aio starts a resumable session and PUTs the whole body.
    large = data((6 << 20) + 3, 2)

    async def body(storage):
        made = await storage.upload(bucket_name, "docs/a.txt", small, content_type="text/plain")
        assert made["size"] == str(len(small))
        with_meta = await storage.upload(bucket_name, "docs/b.json", b'{"k": 1}', content_type="application/json",
                                         metadata={"Cache-Control": "no-cache", "metadata": {"team": "silo"}})
        assert with_meta["cacheControl"] == "no-cache" and with_meta["metadata"] == {"team": "silo"}
        big = await storage.upload(bucket_name, "big/large.bin", large, content_type="application/octet-stream")
        assert big["size"] == str(len(large))
        forced = await storage.upload(bucket_name, "big/forced.bin", small, force_resumable_upload=True)
        assert forced["size"] == str(len(small))

        assert await storage.download(bucket_name, "docs/a.txt") == small
        assert await storage.download(bucket_name, "big/large.bin") == large
        assert await storage.download(bucket_name, "big/forced.bin") == small
        stream = await storage.download_stream(bucket_name, "big/large.bin")
        chunks = []
        while chunk := await stream.read(1 << 20):
            chunks.append(chunk)
        assert b"".join(chunks) == large
        target = tmp_path / "down.bin"
        await storage.download_to_filename(bucket_name, "big/large.bin", str(target))
        assert target.read_bytes() == large

        meta = await storage.download_metadata(bucket_name, "docs/b.json")
        assert meta["contentType"] == "application/json" and meta["metadata"]["team"] == "silo"
        assert meta["md5Hash"]
        listed = await storage.list_objects(bucket_name, params={"prefix": "docs/"})
        assert [i["name"] for i in listed["items"]] == ["docs/a.txt", "docs/b.json"]
        dirs = await storage.list_objects(bucket_name, params={"delimiter": "/"})
        assert dirs["prefixes"] == ["big/", "docs/"] and "items" not in dirs

        copied = await storage.copy(bucket_name, "big/large.bin", bucket_name, new_name="copies/large.bin")
        assert copied["done"] and copied["resource"]["size"] == str(len(large))
        assert await storage.download(bucket_name, "copies/large.bin") == large
        await storage.compose(bucket_name, "joined.txt", ["docs/a.txt", "docs/a.txt"], content_type="text/plain")
        assert await storage.download(bucket_name, "joined.txt") == small + small
        patched = await storage.patch_metadata(bucket_name, "docs/a.txt", {"contentLanguage": "en"})
        assert patched["contentLanguage"] == "en"

        for name in ["docs/a.txt", "docs/b.json", "big/large.bin", "big/forced.bin", "copies/large.bin", "joined.txt"]:
            await storage.delete(bucket_name, name)
        assert "items" not in await storage.list_objects(bucket_name)
        with pytest.raises(aiohttp.ClientResponseError) as gone:
            await storage.download(bucket_name, "docs/a.txt")
        assert gone.value.status == 404

    run(body)
