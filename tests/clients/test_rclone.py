"""rclone (Debian) against Silo's JSON API: a remote of type `google cloud storage` with `endpoint` and `anonymous`.

rclone is built on Google's Go libraries: resumable uploads send `X-GUploader-No-308: yes` (files over its 16 MiB
chunk go in several chunks), copies are rewrites with a `null` body, and `mkdir` creates a bucket only after a
one-item listing answered 404 (docs/gcs-api.md, "Client quirks").
"""
import hashlib
import json
import os
import subprocess
import uuid

import pytest

from silo_process import request  # conftest puts tests/ on the path

@pytest.fixture
def rclone(silo, tmp_path):
    config = tmp_path / "rclone.conf"
    config.write_text(f"""[silo]
type = google cloud storage
anonymous = true
endpoint = {silo.endpoint}/storage/v1/
project_number = demo
""")

    def run(*args, check=True):
        proc = subprocess.run(["rclone", "--config", str(config), "--retries", "1", "--low-level-retries", "1",
                               *args], capture_output=True, text=True, errors="replace", timeout=300)
        if check and proc.returncode != 0:
            raise AssertionError(f"rclone {' '.join(args)} exited {proc.returncode}:\n{proc.stderr[-4000:]}")
        return proc

    return run


def write(path, size, seed):
    path.parent.mkdir(parents=True, exist_ok=True)
    block = hashlib.sha256(str(seed).encode()).digest() * 2048
    with open(path, "wb") as f:
        left = size
        while left > 0:
            f.write(block[:left])
            left -= len(block)
    return path


def tree(root):
    return {os.path.relpath(os.path.join(d, f), root): open(os.path.join(d, f), "rb").read()
            for d, _, fs in os.walk(root) for f in fs}


def test_everyday_workflow(rclone, silo, tmp_path):
    bucket = "rclone-" + uuid.uuid4().hex[:10]
    # mkdir: the bucket does not exist yet, so rclone's probe must see 404 and create it.
    assert request(silo.port, "GET", f"/storage/v1/b/{bucket}")[0] == 404
    rclone("mkdir", f"silo:{bucket}")
    assert request(silo.port, "GET", f"/storage/v1/b/{bucket}")[0] == 200

    src = tmp_path / "src"
    # Over rclone's 16 MiB chunk: a resumable upload in two chunks, the first answered 200 + override 308.
    write(src / "big.bin", (16 << 20) + (3 << 20) + 11, 1)
    write(src / "a.txt", 100, 2)
    write(src / "dir" / "b.dat", 70_000, 3)
    rclone("copy", str(src), f"silo:{bucket}/data")
    # check: sizes and MD5s of both sides agree; --download compares the bytes themselves.
    rclone("check", str(src), f"silo:{bucket}/data")
    rclone("check", "--download", str(src), f"silo:{bucket}/data")

    # sync: a changed file, a new one, and a deleted one.
    write(src / "a.txt", 250, 20)
    write(src / "dir" / "c.dat", 1234, 4)
    os.remove(src / "dir" / "b.dat")
    rclone("sync", str(src), f"silo:{bucket}/data")
    down = tmp_path / "down"
    rclone("copy", f"silo:{bucket}/data", str(down))
    assert tree(down) == tree(src)

    # moveto: a server-side copy (rewrite with a null body) and a delete.
    rclone("moveto", f"silo:{bucket}/data/big.bin", f"silo:{bucket}/moved/big.bin")
    listing = json.loads(rclone("lsjson", "-R", "--hash", "--files-only", f"silo:{bucket}").stdout)
    by_path = {e["Path"]: e for e in listing}
    assert sorted(by_path) == ["data/a.txt", "data/dir/c.dat", "moved/big.bin"]
    big = (src / "big.bin").read_bytes()
    assert by_path["moved/big.bin"]["Size"] == len(big)
    assert by_path["moved/big.bin"]["Hashes"]["md5"] == hashlib.md5(big).hexdigest()
    back = tmp_path / "back.bin"
    rclone("copyto", f"silo:{bucket}/moved/big.bin", str(back))
    assert back.read_bytes() == big

    # purge: every object and the bucket itself.
    rclone("purge", f"silo:{bucket}")
    assert request(silo.port, "GET", f"/storage/v1/b/{bucket}")[0] == 404
