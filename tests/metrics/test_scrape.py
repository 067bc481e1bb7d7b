"""/metrics parsed with prometheus-client's own text parser: families, types, counters checked against the requests
made, histograms, and the access log's lines for the same requests."""
import json
import os
import shutil
import subprocess
import time
import urllib.parse

from prometheus_client.parser import text_string_to_metric_families

from conftest import ADMIN, BUCKET


def families(text):
    return {family.name: family for family in text_string_to_metric_families(text)}


def value(fams, family, sample_name, **labels):
    return sum(s.value for s in fams[family].samples
               if s.name == sample_name and all(s.labels.get(k) == v for k, v in labels.items()))


def v0(name):
    return f"/v0/b/{BUCKET}/o/" + urllib.parse.quote(name, safe="")


def test_counters_match_requests_and_parse(silo):
    before = families(silo.scrape())
    base = value(before, "silo_http_requests", "silo_http_requests_total", api="v0", route="firebase_object",
                 code="200")
    uploads, reads = 4, 7
    for i in range(uploads):
        status, _, _ = silo.request("POST", f"/v0/b/{BUCKET}/o?name=public%2Fscrape{i}.txt", body=b"x" * 1000,
                                    headers={"Content-Type": "text/plain"})
        assert status == 200
    for i in range(reads):
        status, headers, body = silo.request("GET", v0("public/scrape0.txt") + "?alt=media",
                                             headers={"X-Request-Id": f"py-read-{i}"})
        assert status == 200 and body == b"x" * 1000
        assert headers["X-Request-Id"] == f"py-read-{i}"
    denied, _, _ = silo.request("GET", v0("private/secret.txt"))
    assert denied == 403
    # The JSON API is the admin's outside emulator mode.
    assert silo.request("GET", f"/storage/v1/b/{BUCKET}/o", headers=ADMIN)[0] == 200

    fams = families(silo.scrape())
    assert fams["silo_http_requests"].type == "counter"
    assert fams["silo_http_request_duration_seconds"].type == "histogram"
    assert fams["silo_upload_sessions_open"].type == "gauge"
    assert value(fams, "silo_http_requests", "silo_http_requests_total", api="v0", route="firebase_object",
                 code="200") - base == reads
    assert value(fams, "silo_http_requests", "silo_http_requests_total", api="v0", route="firebase_bucket",
                 code="200", **{"class": "2xx"}) == uploads
    assert value(fams, "silo_http_requests", "silo_http_requests_total", api="v0", route="firebase_object",
                 code="403") == 1
    assert value(fams, "silo_http_requests", "silo_http_requests_total", api="json", route="gcs_objects",
                 code="200") == 1
    assert value(fams, "silo_http_request_body_bytes", "silo_http_request_body_bytes_total", api="v0",
                 route="firebase_bucket") == uploads * 1000
    assert value(fams, "silo_rules_denials", "silo_rules_denials_total") >= 1
    assert value(fams, "silo_rules_decisions", "silo_rules_decisions_total") >= uploads + reads
    hits = value(fams, "silo_cache_lookups", "silo_cache_lookups_total", cache="small_blob", result="hit")
    assert hits >= reads - 1
    assert value(fams, "silo_upload_sessions_open", "silo_upload_sessions_open") == 0

    # Histograms: cumulative buckets in increasing le, +Inf equal to _count.
    buckets = {}
    for s in fams["silo_http_request_duration_seconds"].samples:
        key = (s.labels["api"], s.labels["route"])
        if s.name.endswith("_bucket"):
            buckets.setdefault(key, []).append((float(s.labels["le"]), s.value))
    for key, series in buckets.items():
        assert [le for le, _ in series] == sorted(le for le, _ in series), key
        assert all(a <= b for (_, a), (_, b) in zip(series, series[1:])), key
        count = value(fams, "silo_http_request_duration_seconds", "silo_http_request_duration_seconds_count",
                      api=key[0], route=key[1])
        assert series[-1] == (float("inf"), count), key


def test_open_sessions_gauge(silo):
    status, headers, _ = silo.request("POST", f"/v0/b/{BUCKET}/o?name=public%2Fbig.bin", headers={
        "X-Goog-Upload-Protocol": "resumable", "X-Goog-Upload-Command": "start"})
    assert status == 200 and "X-Goog-Upload-URL" in headers
    assert value(families(silo.scrape()), "silo_upload_sessions_open", "silo_upload_sessions_open") == 1


def test_access_log_lines(silo):
    name = 'public/log "quoted" \\ é.txt'
    assert silo.request("POST", f"/v0/b/{BUCKET}/o?name=" + urllib.parse.quote(name, safe=""), body=b"abc",
                        headers={"X-Request-Id": "py-upload-1"})[0] == 200
    assert silo.request("GET", v0(name) + "?alt=media", headers={"X-Request-Id": "py-get-1", **ADMIN})[0] == 200
    # The writer thread is behind by at most one batch; wait for it (no bound on how long is asserted).
    for _ in range(200):
        lines = {line["request_id"]: line for line in silo.log_lines()}
        if "py-get-1" in lines:
            break
        time.sleep(0.05)
    upload, read = lines["py-upload-1"], lines["py-get-1"]
    assert upload["object"] == name and upload["bytes_in"] == 3 and upload["caller"] == "anonymous"
    assert read["caller"] == "admin" and read["status"] == 200 and read["bytes_out"] == 3
    assert upload["api"] == "v0" and upload["route"] == "firebase_bucket"
    with open(silo.access_log) as f:
        text = f.read()
    assert ADMIN["Authorization"].split()[1] not in text


def wait_for_line(path, request_id, tries=200):
    """The line of `request_id` in the log at `path`, once the writer thread has written it (None after `tries` looks,
    50 ms apart)."""
    for _ in range(tries):
        if os.path.exists(path):
            with open(path) as f:
                for line in f:
                    if json.loads(line)["request_id"] == request_id:
                        return line
        time.sleep(0.05)
    return None


def test_access_log_reopens_on_sighup(silo):
    """Rotated by logrotate itself (Debian's), as an operator sets it up: it renames the file and its `postrotate`
    sends SIGHUP; the next lines go to a new file under the old name."""
    logrotate = shutil.which("logrotate") or "/usr/sbin/logrotate"
    assert os.path.exists(logrotate), "logrotate is missing (scripts/install-deps.sh installs it)"
    assert silo.request("GET", v0("public/nothing"), headers={"X-Request-Id": "py-before-rotate"})[0] == 404
    assert wait_for_line(silo.access_log, "py-before-rotate")
    rotated = silo.access_log + ".1"
    config = os.path.join(silo.folder, "logrotate.conf")
    with open(config, "w") as f:
        f.write(f"{silo.access_log} {{\n  rotate 1\n  nocompress\n  postrotate\n"
                f"    kill -HUP {silo.proc.pid}\n  endscript\n}}\n")
    done = subprocess.run([logrotate, "--force", "--state", os.path.join(silo.folder, "logrotate.state"), config],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert os.path.exists(rotated), "logrotate did not rotate the log"
    # The reopen runs on the server's reload queue: poll with fresh requests until one lands in the new file.
    landed = None
    for attempt in range(100):
        request_id = f"py-after-rotate-{attempt}"
        assert silo.request("GET", v0("public/nothing"), headers={"X-Request-Id": request_id})[0] == 404
        if wait_for_line(silo.access_log, request_id, tries=10):
            landed = request_id
            break
    assert landed, "no line reached a new access.log after SIGHUP"
    with open(rotated) as f:
        old = f.read()
    assert "py-before-rotate" in old and landed not in old
    assert oct(os.stat(silo.access_log).st_mode & 0o777) == "0o640"
