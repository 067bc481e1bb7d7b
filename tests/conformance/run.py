"""Runs google-cloud-storage's retry conformance tests (tests/conformance of its sdist) against one live
`silo serve --test-faults`, in place of storage-testbench. Started by run.sh, which prepares the virtualenv and the
unpacked sdist.

The suite's module runs `docker pull` and `docker run` (the testbench image) when it is imported; here Silo is the
testbench, so `docker` on PATH is a stub that does nothing. One Silo in emulator mode on 127.0.0.1 port 0 with a fresh
data directory; the clients reach it through STORAGE_EMULATOR_HOST. Stops the server on the way out, whatever happens.

Writes OUT/conformance.xml (junit) and OUT/conformance.log, prints the counts.
Exit: 0 when every selected test passed (or CONFORMANCE_REPORT_ONLY=1), 1 when one failed, 2 when the run broke.
"""
import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
from silo_process import start_silo  # noqa: E402


def read_skips(path):
    """skips.txt: `test-id-prefix  # reason` a line; blank lines and lines starting with # are ignored."""
    entries = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line and not line.startswith("#"):
                test, _, reason = line.partition("#")
                entries.append((test.strip(), reason.strip()))
    return entries


def client_env(endpoint, stub_dir):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("GOOGLE_", "GCLOUD_", "CLOUDSDK_", "API_ENDPOINT_OVERRIDE"))}
    dead = "http://127.0.0.1:9"  # the discard port: a stray request fails at once
    env.update({
        "STORAGE_EMULATOR_HOST": endpoint,
        "PATH": stub_dir + os.pathsep + env.get("PATH", ""),
        "NO_GCE_CHECK": "true",
        "GCE_METADATA_HOST": "127.0.0.1:9",
        "GCE_METADATA_IP": "127.0.0.1:9",
        "HTTP_PROXY": dead, "HTTPS_PROXY": dead, "http_proxy": dead, "https_proxy": dead, "grpc_proxy": dead,
        "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost",
        "PYTHONPATH": HERE + os.pathsep + env.get("PYTHONPATH", ""),
        "PYTHONDONTWRITEBYTECODE": "1",
        "CONFORMANCE_SLEEP_SCALE": os.environ.get("CONFORMANCE_SLEEP_SCALE", "0.1"),
    })
    return env


def counts(junit):
    """passed, failed, errors, skipped from the junit XML."""
    result = {"passed": 0, "failed": 0, "error": 0, "skipped": 0}
    failures = []
    for case in ET.parse(junit).getroot().iter("testcase"):
        outcome = "passed"
        for child in case:
            if child.tag in ("failure", "error", "skipped"):
                outcome = {"failure": "failed", "error": "error", "skipped": "skipped"}[child.tag]
        result[outcome] += 1
        if outcome in ("failed", "error"):
            failures.append(case.get("name"))
    return result, failures


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary", required=True)
    ap.add_argument("--src", required=True, help="unpacked sdist root (holds tests/conformance)")
    ap.add_argument("--python", required=True, help="python of the venv with google-cloud-storage and pytest")
    ap.add_argument("--skips", default=os.path.join(HERE, "skips.txt"))
    ap.add_argument("--out", required=True)
    args = ap.parse_args()

    def on_term(signum, frame):
        raise SystemExit(f"signal {signum}")
    signal.signal(signal.SIGTERM, on_term)

    out = os.path.abspath(args.out)
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    data = tempfile.mkdtemp(prefix="silo-conformance-")
    stub = os.path.join(data, "bin")
    os.makedirs(stub)
    with open(os.path.join(stub, "docker"), "w") as f:
        f.write("#!/bin/sh\n# The suite starts storage-testbench with docker; Silo is already running in its place.\nexit 0\n")
    os.chmod(os.path.join(stub, "docker"), 0o755)
    junit = os.path.join(out, "conformance.xml")
    skips = read_skips(args.skips)
    proc = None
    started = time.time()
    try:
        proc, port, _ = start_silo(os.path.abspath(args.binary), "--data", os.path.join(data, "silo"),
                                   "--test-faults", "--drain-seconds", "2",
                                   *os.environ.get("CONFORMANCE_SILO_ARGS", "").split())
        endpoint = f"http://127.0.0.1:{port}"
        print(f"silo serve --test-faults on {endpoint} (pid {proc.pid})", flush=True)
        cmd = [args.python, "-m", "pytest", "tests/conformance", "-p", "harness_plugin", "-p", "no:cacheprovider",
               f"--junitxml={junit}", "-o", "junit_family=xunit2", "-o", "asyncio_default_fixture_loop_scope=function", "-q", "-rfE", "--tb=short",
               "--timeout", os.environ.get("CONFORMANCE_TEST_TIMEOUT", "120"),
               # Four tests at a time (pytest-xdist), as the library's own CI runs this suite in parallel: a test
               # mostly waits out its retries' backoff, so four on two cores took 25 s where one at a time took 71.
               "-n", os.environ.get("CONFORMANCE_WORKERS", "4"),
               *[f"--deselect={test}" for test, _ in skips],
               *os.environ.get("CONFORMANCE_PYTEST_ARGS", "").split()]
        with open(os.path.join(out, "conformance.log"), "w") as log:
            run = subprocess.Popen(cmd, cwd=args.src, env=client_env(endpoint, stub), stdout=subprocess.PIPE,
                                   stderr=subprocess.STDOUT, text=True)
            for line in run.stdout:
                log.write(line)
                sys.stdout.write(line)
            run.wait()
        print(f"pytest exit {run.returncode} in {time.time() - started:.0f} s", flush=True)
    finally:
        if proc:
            proc.terminate()
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        shutil.rmtree(data, ignore_errors=True)

    if not os.path.exists(junit):
        print("conformance: pytest wrote no junit XML", file=sys.stderr)
        return 2
    result, failures = counts(junit)
    for name in failures:
        print(f"FAILED {name}")
    print(f"conformance: {result['passed']} passed, {result['failed'] + result['error']} failed, "
          f"{result['skipped']} skipped ({len(skips)} deselection entries in skips.txt)")
    if result["passed"] == 0:
        return 2
    bad = result["failed"] + result["error"]
    if bad and os.environ.get("CONFORMANCE_REPORT_ONLY") == "1":
        print("CONFORMANCE_REPORT_ONLY=1: failures reported, exit 0")
        return 0
    return 1 if bad else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except SystemExit:
        raise
    except Exception as e:  # the run broke (no server, no venv, …): not a test failure
        import traceback
        traceback.print_exc()
        print(f"conformance: the run broke: {e}", file=sys.stderr)
        sys.exit(2)
