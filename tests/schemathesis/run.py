#!/usr/bin/env python3
"""A bounded schemathesis run against a live, secured `silo serve` (see run.sh, which prepares the venv).

Starts `silo serve` on 127.0.0.1 port 0 with Security Rules (storage.rules beside this file), an HS256 secret and an
admin key; seeds objects and resumable sessions; then runs schemathesis against the server's /openapi.json (or
docs/openapi.json when the server does not serve it) once per caller: anonymous, a signed-in user, a credential that
does not verify, the admin, and finally the admin on POST /internal/reset alone (it wipes everything). Every run is
bounded in examples per operation and by a hard timeout.

Checks: no 5xx but those an operation documents by their exact code (hooks.py), status codes, content types, response headers and bodies as documented (the content-type and body
checks honour the document's `x-silo-empty-body` and `x-silo-media-query`, see hooks.py). At the end the server must
still be running and answer `GET /`. Prints requests sent and failures per check; writes every failing request and
its response to OUT/failures.md. Exit status 0 only when nothing failed.
"""
import argparse
import base64
import collections
import concurrent.futures
import gzip
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "tests"))
from silo_process import request, start_silo  # noqa: E402

BUCKET = "demo.appspot.com"
PROJECT = "demo-silo"
ADMIN_KEY = "schemathesis-admin-" + hashlib.sha256(os.urandom(16)).hexdigest()[:24]
CHECKS = [
    "silo_not_a_server_error",
    "status_code_conformance",
    "silo_content_type_conformance",
    "response_headers_conformance",
    "silo_response_schema_conformance",
]

# Objects seeded before the runs (name, bytes, content type, extra metadata for a multipart upload).
SEED = [
    ("public/hello.txt", b"hello world", "text/plain", None),
    ("public/data.bin", bytes(range(256)) * 16, "application/octet-stream", None),
    ("public/empty", b"", "application/octet-stream", None),
    ("public/notes.txt.gz", gzip.compress(b"compressed notes\n" * 50, mtime=0), "text/plain", {"contentEncoding": "gzip"}),
    ("public/a b+c%.txt", b"an awkward name", "text/plain", {"metadata": {"k": "v"}}),
    ("users/alice/notes.txt", b"alice's notes", "text/plain", {"cacheControl": "no-cache"}),
    ("users/alice/deleteme.txt", b"delete me", "text/plain", None),
    ("users/bob/secret.txt", b"bob's secret", "text/plain", None),
]
# Names uploads and copies write to (kept apart from the seeded reads so those stay predictable).
WRITES = ["public/fuzz.bin", "users/alice/fuzz.bin", "users/bob/fuzz.bin", "elsewhere/fuzz.bin"]


def log(text):
    print(text, flush=True)


def toml_string(value):
    return json.dumps(value)


def write_config(path, sessions, tokens, generations):
    """The schemathesis config: path and query parameters draw seeded values often enough to meet real objects
    and sessions; the rest of the time they are generated from the document."""
    dictionaries = {
        "buckets": [BUCKET],
        "objects": [name for name, *_ in SEED],
        "writes": WRITES + ["users/alice/notes.txt"],
        "sessions": sessions,
        "tokens": tokens,
        "generations": generations,
        "alt": ["media", "json"],
        "protocols": ["resumable", "multipart"],
        "commands": ["start", "upload", "upload, finalize", "finalize", "query", "cancel"],
        "offsets": ["0"],
        "ranges": ["bytes=0-4", "bytes=5-", "bytes=-3", "bytes=1000000-", "bytes=0-1,3-4"],
        "etags": ["*"],
        "encodings": ["identity", "gzip"],
        "content-ranges": ["bytes */*", "bytes 0-9/10", "bytes 0-9/*", "bytes */0", "bytes 0-*/10"],
        "booleans": ["true"],
    }
    parameters = {
        "path.bucket": ("buckets", 0.75),
        "path.destinationBucket": ("buckets", 0.75),
        "path.object": ("objects", 0.6),
        "path.destinationObject": ("writes", 0.5),
        "query.name": ("writes", 0.6),
        "query.upload_id": ("sessions", 0.6),
        "query.token": ("tokens", 0.5),
        "query.delete_token": ("tokens", 0.5),
        "query.generation": ("generations", 0.3),
        "query.alt": ("alt", 0.7),
        "query.versions": ("booleans", 0.5),
        "query.includeTrailingDelimiter": ("booleans", 0.5),
        "header.X-Goog-Upload-Protocol": ("protocols", 0.6),
        "header.X-Goog-Upload-Command": ("commands", 0.8),
        "header.X-Goog-Upload-Offset": ("offsets", 0.5),
        "header.Range": ("ranges", 0.5),
        "header.If-None-Match": ("etags", 0.3),
        "header.Accept-Encoding": ("encodings", 0.5),
        "header.Content-Range": ("content-ranges", 0.7),
    }
    lines = ["# Written by tests/schemathesis/run.py for one run."]
    for name, values in dictionaries.items():
        lines += [f"[dictionaries.{name}]", "values = [" + ", ".join(toml_string(v) for v in values) + "]", ""]
    lines.append("[parameters]")
    for key, (dictionary, probability) in parameters.items():
        lines.append(f'"{key}" = {{ dictionary = "{dictionary}", probability = {probability} }}')
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def seed(port, admin, alice):
    """Uploads SEED as the admin; starts resumable sessions (v0 for alice, GCS for the admin). Returns (session ids,
    download tokens, generations)."""
    tokens, generations, sessions = [], [], []
    for name, data, content_type, extra in SEED:
        target = f"/v0/b/{BUCKET}/o?name=" + urllib.parse.quote(name, safe="")
        if extra is None:
            status, _, body = request(port, "POST", target, data, {**admin, "Content-Type": content_type})
        else:
            boundary = "seedboundary"
            meta = json.dumps({"contentType": content_type, **extra}).encode()
            payload = (
                f"--{boundary}\r\nContent-Type: application/json\r\n\r\n".encode() + meta
                + f"\r\n--{boundary}\r\nContent-Type: {content_type}\r\n\r\n".encode() + data
                + f"\r\n--{boundary}--".encode()
            )
            status, _, body = request(port, "POST", target, payload, {
                **admin, "X-Goog-Upload-Protocol": "multipart",
                "Content-Type": f"multipart/related; boundary={boundary}"})
        if status != 200:
            raise RuntimeError(f"seeding {name}: {status} {body[:300]!r}")
        record = json.loads(body)
        tokens.append(record["downloadTokens"].split(",")[0])
        generations.append(int(record["generation"]))
    for i in range(4):
        name = f"users/alice/session-{i}.bin"
        status, headers, body = request(port, "POST", f"/v0/b/{BUCKET}/o?name=" + urllib.parse.quote(name, safe=""),
                                        b"", {**alice, "X-Goog-Upload-Protocol": "resumable",
                                              "X-Goog-Upload-Command": "start"})
        if status != 200:
            raise RuntimeError(f"starting a v0 session: {status} {body[:300]!r}")
        url = {k.lower(): v for k, v in headers.items()}["x-goog-upload-url"]
        sessions.append(urllib.parse.parse_qs(urllib.parse.urlsplit(url).query)["upload_id"][0])
    for i in range(2):
        status, headers, body = request(port, "POST", f"/upload/storage/v1/b/{BUCKET}/o?uploadType=resumable",
                                        json.dumps({"name": f"public/gcs-session-{i}.bin"}).encode(),
                                        {**admin, "Content-Type": "application/json"})
        if status != 200:
            raise RuntimeError(f"starting a GCS session: {status} {body[:300]!r}")
        location = {k.lower(): v for k, v in headers.items()}["location"]
        sessions.append(urllib.parse.parse_qs(urllib.parse.urlsplit(location).query)["upload_id"][0])
    return sessions, tokens, generations


def read_events(path):
    """(interactions, check results) from a schemathesis NDJSON report: one entry per test case."""
    cases = []
    if not os.path.exists(path):
        return cases
    with open(path) as f:
        for line in f:
            try:
                event = json.loads(line)
            except json.JSONDecodeError:
                continue  # a run killed by its timeout may leave half a line
            finished = event.get("ScenarioFinished")
            if not finished:
                continue
            recorder = finished["recorder"]
            for case_id, interaction in recorder.get("interactions", {}).items():
                case = recorder.get("cases", {}).get(case_id, {}).get("value", {})
                cases.append((case, interaction, recorder.get("checks", {}).get(case_id, [])))
    return cases


def decode_body(body):
    if body is None:
        return b""
    if isinstance(body, dict) and "$base64" in body:
        return base64.b64decode(body["$base64"])
    if isinstance(body, dict) and "string" in body:
        return body["string"].encode()
    return str(body).encode()


def show_bytes(data, limit=600):
    text = data[:limit].decode("utf-8", "backslashreplace")
    return text + (f"… ({len(data)} bytes)" if len(data) > limit else "")


def failure_message(check):
    info = check.get("failure_info") or {}
    failure = info.get("failure") or {}
    title = failure.get("title") or check.get("name")
    message = failure.get("message") or ""
    return f"{title}: {message}".strip().rstrip(":")


# The schemathesis processes running now (two run side by side, each in a thread of its own).
RUNNING = set()


def stop_runs_and_exit(*_):
    """SIGTERM from run.sh's overall timeout: the runs' threads cannot be interrupted, so their processes are
    stopped here; then the main thread unwinds through its `finally`s."""
    for proc in list(RUNNING):
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    sys.exit(124)


def run_schemathesis(args, name, schema, base_url, config, out, headers, extra):
    report = os.path.join(out, f"{name}.ndjson")
    cmd = [
        os.path.join(args.venv, "bin", "schemathesis"), "--config-file", config, "--no-color", "run", schema,
        "--checks", ",".join(CHECKS + args.also), "--phases", args.phases, "--max-examples", str(args.max_examples),
        "--seed", str(args.seed), "--workers", "1", "--request-timeout", "10",
        "--generation-with-security-parameters", "false", "--report", "ndjson", "--report-ndjson-path", report,
        "--suppress-health-check", "all", "--continue-on-failure", "--generation-database", "none",
    ]
    if base_url:
        cmd += ["--url", base_url]
    for key, value in headers.items():
        cmd += ["-H", f"{key}: {value}"]
    cmd += extra
    env = dict(os.environ, SCHEMATHESIS_HOOKS="hooks", PYTHONPATH=HERE)
    started = time.time()
    with open(os.path.join(out, f"{name}.log"), "w") as logfile:
        proc = subprocess.Popen(cmd, stdout=logfile, stderr=subprocess.STDOUT, env=env, cwd=out,
                                start_new_session=True)
        RUNNING.add(proc)
        timed_out = False
        try:
            code = proc.wait(timeout=args.run_timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            code = None
        finally:
            # Also when run.sh's overall timeout stops us (SIGTERM, see main): leave nothing running.
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
            RUNNING.discard(proc)
        code = proc.returncode if code is None else code
    return report, code, timed_out, time.time() - started


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--binary", default=os.path.join(REPO, ".build/release/silo"))
    parser.add_argument("--venv", default=os.path.join(REPO, ".venv/schemathesis"))
    parser.add_argument("--max-examples", type=int, default=int(os.environ.get("SCHEMATHESIS_MAX_EXAMPLES", 15)))
    parser.add_argument("--seed", type=int, default=int(os.environ.get("SCHEMATHESIS_SEED", 20261201)))
    parser.add_argument("--phases", default="examples,coverage,fuzzing,stateful")
    parser.add_argument("--run-timeout", type=float, default=120, help="hard bound on each schemathesis run (s)")
    parser.add_argument("--out", help="keep reports here (default: a temporary directory, removed unless failing)")
    parser.add_argument("--also", action="append", default=[], help="an informational check to run as well (e.g. "
                        "negative_data_rejection): its failures are reported but do not fail the run; repeatable")
    parser.add_argument("--only", action="append", default=[], help="run only these callers (anonymous, user, "
                        "bad-credential, admin, admin-reset); repeatable")
    parser.add_argument("schemathesis_args", nargs=argparse.REMAINDER,
                        help="after --: more `schemathesis run` options for every run (e.g. --include-operation-id)")
    args = parser.parse_args()
    if args.schemathesis_args[:1] == ["--"]:
        args.schemathesis_args = args.schemathesis_args[1:]

    # run.sh's overall timeout sends SIGTERM: unwind through the `finally`s so the server and schemathesis stop.
    signal.signal(signal.SIGTERM, stop_runs_and_exit)
    started = time.time()
    document = os.path.join(REPO, "docs/openapi.json")
    validator = os.path.join(args.venv, "bin", "openapi-spec-validator")
    if subprocess.run([validator, document]).returncode != 0:
        log("FAIL: docs/openapi.json is not a valid OpenAPI document")
        return 1
    out = args.out or tempfile.mkdtemp(prefix="silo-schemathesis-")
    os.makedirs(out, exist_ok=True)
    work = tempfile.mkdtemp(prefix="silo-schemathesis-data-")
    secret = os.path.join(work, "auth-secret")
    with open(secret, "w") as f:
        f.write(base64.b64encode(os.urandom(48)).decode() + "\n")
    keys = os.path.join(work, "admin-keys")
    with open(keys, "w") as f:
        f.write(ADMIN_KEY + "\n")
    proc, port, _ = start_silo(
        args.binary, "--data", os.path.join(work, "data"), "--rules", os.path.join(HERE, "storage.rules"),
        "--auth-secret", secret, "--admin-key-file", keys, "--project", PROJECT, "--threads", "4",
        # Secured: the bucket exists from startup; uploads never create one.
        "--bucket", BUCKET)
    base = f"http://127.0.0.1:{port}"
    log(f"silo serve ({args.binary}) on {base}: rules, HS256 tokens, admin key; reports in {out}")
    failed = False
    try:
        alice_token = subprocess.run(
            [args.binary, "token", "--uid", "alice", "--auth-secret", secret, "--project", PROJECT, "--lifetime",
             "7200"], check=True, capture_output=True, text=True).stdout.strip()
        admin = {"Authorization": f"Bearer {ADMIN_KEY}"}
        alice = {"Authorization": f"Firebase {alice_token}"}
        sessions, tokens, generations = seed(port, admin, alice)
        log(f"seeded {len(SEED)} objects and {len(sessions)} resumable sessions in {BUCKET}")
        config = os.path.join(out, "schemathesis.toml")
        write_config(config, sessions, tokens, generations)

        with open(document, "rb") as f:
            on_disk = f.read()
        status, headers, served = request(port, "GET", "/openapi.json")
        # Loaded from a file (what the server served, or docs/openapi.json): schemathesis would fetch a URL with
        # each run's credentials, and the bad-credential run's are refused.
        extra_all = []
        base_url = base
        if status == 200:
            schema = os.path.join(out, "served-openapi.json")
            with open(schema, "wb") as f:
                f.write(served)
            if served != on_disk:
                log("FAIL: GET /openapi.json differs from docs/openapi.json")
                failed = True
            else:
                log("schema: GET /openapi.json (identical to docs/openapi.json)")
        else:
            schema = document
            extra_all = ["--exclude-path", "/openapi.json"]
            log(f"schema: docs/openapi.json (this server answers GET /openapi.json with {status}; that operation is "
                "left out)")

        runs = [
            ("anonymous", {}, []),
            ("user", alice, []),
            ("bad-credential", {"Authorization": "Firebase not.a.token"}, ["--max-examples", "3"]),
            ("admin", admin, ["--exclude-path", "/internal/reset"]),
            ("admin-reset", admin, ["--include-path", "/internal/reset", "--max-examples", "2", "--phases",
                                    args.phases.replace(",stateful", "")]),
        ]
        totals = collections.Counter()
        failures = collections.Counter()
        details = []
        rows = []
        selected = [(n, h, e + args.schemathesis_args) for n, h, e in runs if not args.only or n in args.only]

        def launch(run):
            name, run_headers, extra = run
            return run_schemathesis(args, name, schema, base_url, config, out, run_headers, extra_all + extra)

        # Two runs at a time (CI's machine has two cores; each run is one Python process): `make schemathesis` took
        # 88 s here instead of 172 s. The reset run empties the server, so it runs last and alone. Outcomes do not
        # depend on the order: every check is per response.
        side_by_side = [r for r in selected if r[0] != "admin-reset"]
        last = [r for r in selected if r[0] == "admin-reset"]
        with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
            outcomes = list(pool.map(launch, side_by_side)) + [launch(r) for r in last]
        for (name, _, _), (report, code, timed_out, elapsed) in zip(side_by_side + last, outcomes):
            cases = read_events(report)
            statuses = collections.Counter()
            run_failures = collections.Counter()
            for case, interaction, checks in cases:
                response = interaction.get("response") or {}
                statuses[response.get("status_code", "no response")] += 1
                bad = [c for c in checks if c.get("status") == "failure"]
                for check in bad:
                    run_failures[check["name"]] += 1
                if bad:
                    details.append((name, case, interaction, bad))
            errors = "" if code in (0, 1) and not timed_out else (" TIMED OUT" if timed_out else f" exit {code}")
            if errors or (code == 1 and not run_failures):
                failed = True
                errors = errors or " (schemathesis reported errors: see the log)"
            totals["requests"] += len(cases)
            failures.update(run_failures)
            rows.append((name, len(cases), elapsed, dict(sorted(statuses.items(), key=lambda kv: str(kv[0]))),
                         dict(run_failures), errors))
        alive = proc.poll() is None
        probe = request(port, "GET", "/")[0] if alive else None
        if not alive or probe != 200:
            failed = True
        if any(failures.get(check) for check in CHECKS):
            failed = True

        log("")
        log(f"{'run':<15} {'requests':>8} {'seconds':>8}  statuses / failures")
        for name, count, elapsed, statuses, run_failures, errors in rows:
            log(f"{name:<15} {count:>8} {elapsed:>8.1f}  {statuses}")
            if run_failures or errors:
                log(f"{'':<34}failures: {run_failures}{errors}")
        log("")
        log(f"requests sent: {totals['requests']}")
        for check in CHECKS:
            log(f"  {check:<34} {failures.get(check, 0)} failing responses")
        for check in args.also:
            log(f"  {check:<34} {failures.get(check, 0)} failing responses (informational)")
        log(f"server alive at the end: {alive}; GET / → {probe}")
        log(f"total time: {time.time() - started:.0f} s")
        write_details(os.path.join(out, "failures.md"), details)
        if details:
            log(f"failing requests and responses: {os.path.join(out, 'failures.md')}")
        log("schemathesis: FAILED" if failed else "schemathesis: 0 failures")
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
        shutil.rmtree(work, ignore_errors=True)
        if not args.out and not failed:
            shutil.rmtree(out, ignore_errors=True)
    return 1 if failed else 0


def write_details(path, details):
    """Every failing request once per (run, check, operation, status), exactly as sent and answered."""
    seen = set()
    lines = ["# Failing requests from the last run", ""]
    for run, case, interaction, bad in details:
        req, resp = interaction["request"], interaction.get("response") or {}
        key = (run, tuple(sorted(c["name"] for c in bad)), case.get("method"), case.get("path"),
               resp.get("status_code"))
        if key in seen:
            continue
        seen.add(key)
        lines.append(f"## {run}: {case.get('method')} {case.get('path')} → {resp.get('status_code')}")
        for check in bad:
            lines.append(f"- `{check['name']}`: {failure_message(check)}".replace("\n", " "))
        lines.append("")
        lines.append("```")
        lines.append(f"{req['method']} {req['uri']}")
        for header, values in req.get("headers", {}).items():
            for value in values:
                lines.append(f"{header}: {value}")
        body = decode_body(req.get("body"))
        if body:
            lines.append("")
            lines.append(show_bytes(body))
        lines.append("```")
        lines.append("```")
        lines.append(f"HTTP {resp.get('status_code')}")
        for header, values in (resp.get("headers") or {}).items():
            for value in values:
                lines.append(f"{header}: {value}")
        body = decode_body(resp.get("content"))
        if body:
            lines.append("")
            lines.append(show_bytes(body))
        lines.append("```")
        lines.append("")
    with open(path, "w") as f:
        f.write("\n".join(lines))


if __name__ == "__main__":
    sys.exit(main())
