"""Runs google-cloud-storage's own system tests, then our gcsfs/pandas checks, against one live `silo serve`.

Started by run.sh (which prepares the virtualenvs and the unpacked sdist). One Silo in emulator mode on 127.0.0.1
port 0, with a fresh data directory; in front of it the capture relay (capture.py), whose port is what the clients
get as STORAGE_EMULATOR_HOST, so every exchange is recorded in OUT/http.jsonl. Stops the server and the relay on the
way out, whatever happens (also on SIGTERM from run.sh's global timeout). Writes OUT/*.xml (junit), OUT/*.log (pytest
output) and OUT/failures.md (report.py: every failing test with the exchanges that failed during it).

Exit: 0 when every test passed (or GCS_SYSTEM_REPORT_ONLY=1), 1 when any failed or errored, 2 when the run broke.
"""
import argparse
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, HERE)
from silo_process import start_silo  # noqa: E402
from capture import Relay  # noqa: E402
import report  # noqa: E402

PROJECT = "silo-gcs-system"


def read_skips(path):
    """skips.txt: `test-id-prefix  # reason` a line; blank lines and lines starting with # are ignored."""
    entries = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            test, _, reason = line.partition("#")
            entries.append((test.strip(), reason.strip()))
    return entries


def client_env(endpoint, out):
    env = os.environ.copy()
    for k in list(env):
        if k.startswith(("GOOGLE_", "GCLOUD_", "CLOUDSDK_", "API_ENDPOINT_OVERRIDE", "RUN_RAPID", "RUN_RCU",
                         "RUN_SYSTEM_TESTS_ON_PREPROD", "TEST_UNIVERSE")):
            del env[k]
    dead = "http://127.0.0.1:9"  # the discard port: nothing listens, so a stray request fails at once
    gcloud = os.path.join(out, "gcloud-config")
    os.makedirs(gcloud, exist_ok=True)
    env.update({
        # The variable the client library reads to talk to an emulator: anonymous credentials, no auth.
        "STORAGE_EMULATOR_HOST": endpoint,
        # The project the emulator-mode client and the tests' bucket creation use.
        "GOOGLE_CLOUD_PROJECT": PROJECT,
        "GCLOUD_PROJECT": PROJECT,
        # No credential discovery outside this machine: no gcloud config, no metadata server, no proxy but a dead one.
        "CLOUDSDK_CONFIG": gcloud,
        "NO_GCE_CHECK": "true",
        "GCE_METADATA_HOST": "127.0.0.1:9",
        "GCE_METADATA_IP": "127.0.0.1:9",
        "HTTP_PROXY": dead, "HTTPS_PROXY": dead, "http_proxy": dead, "https_proxy": dead,
        "grpc_proxy": dead,
        "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost",
        # gcsfs's experimental zonal/HNS support probes buckets over gRPC (minutes of timeouts against any emulator).
        "GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT": "false",
        # The requester-pays tests bill this project (userProject=); Silo has nothing to bill.
        "GOOGLE_CLOUD_TESTS_USER_PROJECT": PROJECT,
        "GCS_SYSTEM_MARKERS": os.path.join(out, "markers.jsonl"),
        "GCS_SYSTEM_PROPAGATION_SECONDS": os.environ.get("GCS_SYSTEM_PROPAGATION_SECONDS", "0"),
        "PYTHONPATH": HERE + os.pathsep + env.get("PYTHONPATH", ""),
        "PYTHONDONTWRITEBYTECODE": "1",
    })
    return env


SIGNING_TESTS = "tests/system/test__signing.py"


def service_account_targets(junit, src):
    """The tests of the emulator pass that skipped for want of a service-account credential, and test__signing.py
    (which the emulator pass leaves out: signing needs a private key, and the anonymous client has none)."""
    cases = report.parse_junit(junit, set()) or []
    ids = [c["id"] for c in cases if c["outcome"] == "skipped" and "service account credential" in c["message"]]
    if os.path.exists(os.path.join(src, SIGNING_TESTS)):
        ids.append(SIGNING_TESTS)
    return ids


def seed_public_bucket(port):
    """test_anonymous_client_access_to_public_bucket lists and downloads one object of Google's public Landsat
    bucket. That dataset is Google's, not GCS's behaviour: the stand-in is a bucket of that name holding one
    object readable by allUsers (an ACL grant Silo enforces on secured servers, tests/gcs and GCSPublicAccessTests)."""
    import json
    import urllib.request
    base = f"http://127.0.0.1:{port}"

    def call(method, path, body):
        request = urllib.request.Request(base + path, data=body, method=method,
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.read()

    call("POST", "/storage/v1/b?project=" + PROJECT, json.dumps({"name": "gcp-public-data-landsat"}).encode())
    call("POST", "/upload/storage/v1/b/gcp-public-data-landsat/o?uploadType=media&name=index.csv.gz"
         "&predefinedAcl=publicRead", b"stand-in for Google's Landsat index\n")


def make_service_account_key(out):
    """A throwaway service-account key for the system-sa pass, written to OUT/service-account.json: Silo registers
    it (`--service-account`), so its token endpoint grants it access tokens and signed URLs and POST policies made
    with it are verified in full. Returns (path, key info)."""
    import json
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                            serialization.NoEncryption()).decode()
    info = {
        "type": "service_account", "project_id": PROJECT, "private_key_id": "gcs-system", "private_key": pem,
        "client_email": f"gcs-system@{PROJECT}.iam.gserviceaccount.com", "client_id": "100000000000000000001",
        "token_uri": "https://oauth2.googleapis.com/token",
    }
    path = os.path.join(out, "service-account.json")
    with open(path, "w") as f:
        json.dump(info, f)
    return path, info


def service_account_env(env, endpoint, path, info):
    """The client pointed at Silo as a custom endpoint (API_ENDPOINT_OVERRIDE, the library's variable for testing
    against a non-production host) with the default credentials of the run's service-account key, whose token_uri
    is now Silo's own token endpoint (through the relay, so the grant is recorded too). The library signs URLs for
    its api_endpoint, so they reach Silo with the host they were signed for."""
    import json
    with open(path, "w") as f:
        json.dump({**info, "token_uri": f"{endpoint}/token"}, f)
    sa = dict(env)
    del sa["STORAGE_EMULATOR_HOST"]
    sa.update({"API_ENDPOINT_OVERRIDE": endpoint, "GOOGLE_APPLICATION_CREDENTIALS": path})
    return sa


def run_pytest(label, python, targets, cwd, env, out, extra, timeout):
    junit = os.path.join(out, f"{label}.xml")
    log = os.path.join(out, f"{label}.log")
    cmd = [python, "-m", "pytest", *targets, "-p", "harness_plugin", "-p", "no:cacheprovider", f"--junitxml={junit}",
           "-o", "junit_family=xunit2", "-o", "junit_logging=no", "-rfEs", "-q", "--tb=short",
           "--timeout", os.environ.get("GCS_SYSTEM_TEST_TIMEOUT", "120"), *extra]
    print(f"\n=== {label}: {' '.join(targets)} ({python})", flush=True)
    started = time.time()
    with open(log, "w") as logf:
        proc = subprocess.Popen(cmd, cwd=cwd, env={**env, "GCS_SYSTEM_LABEL": label}, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True)
        try:
            deadline = started + timeout
            for line in proc.stdout:
                logf.write(line)
                sys.stdout.write(line)
                if time.time() > deadline:
                    raise subprocess.TimeoutExpired(cmd, timeout)
            proc.wait(timeout=max(1, deadline - time.time()))
        except subprocess.TimeoutExpired:
            print(f"=== {label}: over its {timeout} s budget, stopped", flush=True)
            proc.kill()
            proc.wait()
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    print(f"=== {label}: pytest exit {proc.returncode} in {time.time() - started:.0f} s", flush=True)
    return junit


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary", required=True)
    ap.add_argument("--system-src", help="unpacked sdist root (holds tests/system)")
    ap.add_argument("--system-python", help="python of the venv with google-cloud-storage and the test dependencies")
    ap.add_argument("--skips", default=os.path.join(HERE, "skips.txt"))
    ap.add_argument("--gcsfs", action="append", default=[], metavar="LABEL=PYTHON",
                    help="run test_gcsfs_versions.py with this venv's python (repeatable)")
    ap.add_argument("--out", required=True)
    ap.add_argument("--budget", type=float, default=float(os.environ.get("GCS_SYSTEM_BUDGET", "600")),
                    help="seconds for all pytest runs together")
    args = ap.parse_args()

    def on_term(signum, frame):
        raise SystemExit(f"signal {signum}")
    signal.signal(signal.SIGTERM, on_term)

    out = os.path.abspath(args.out)
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    data = tempfile.mkdtemp(prefix="silo-gcs-system-")
    t0 = time.time()
    proc = relay = None
    junits = []
    try:
        key_path, key_info = make_service_account_key(out)
        # The relay is bound first: the clients reach Silo at its address, which is then Silo's public URL — the host
        # the library signs URLs and token requests for (Silo takes only its own addresses for those).
        relay = Relay(0, os.path.join(out, "http.jsonl"))
        endpoint = f"http://127.0.0.1:{relay.port}"
        proc, port, banner = start_silo(os.path.abspath(args.binary), "--data", data, "--drain-seconds", "2",
                                        "--service-account", key_path, "--public-url", endpoint)
        # Unregistered signers pass unverified in emulator mode: make sure the system-sa pass checks signatures.
        if key_info["client_email"] not in banner:
            raise RuntimeError("silo serve did not list the run's service account:\n" + banner)
        relay.upstream_port = port
        relay.start()
        print(f"silo serve on 127.0.0.1:{port} (pid {proc.pid}), clients through the capture relay at {endpoint}")
        env = client_env(endpoint, out)
        seed_public_bucket(port)

        if args.system_src:
            skips = read_skips(args.skips)
            deselect = [f"--deselect={test}" for test, _ in skips]
            deselect += ["-o", "asyncio_default_fixture_loop_scope=function"]
            deselect += shlex.split(os.environ.get("GCS_SYSTEM_PYTEST_ARGS", ""))
            junits.append(run_pytest("system", args.system_python, ["tests/system"], args.system_src, env, out,
                                     deselect + [f"--deselect={SIGNING_TESTS}"],
                                     max(30, args.budget - (time.time() - t0))))
            # Second pass: what the anonymous emulator client could not run (tests behind the service_account
            # fixture, and URL signing, which needs a private key) with a throwaway service-account key.
            again = service_account_targets(junits[-1], args.system_src)
            if again and os.environ.get("GCS_SYSTEM_SA_PASS", "1") != "0":
                sa_env = service_account_env(env, endpoint, key_path, key_info)
                junits.append(run_pytest("system-sa", args.system_python, again, args.system_src, sa_env, out,
                                         deselect, max(30, args.budget - (time.time() - t0))))
        for spec in args.gcsfs:
            label, _, python = spec.partition("=")
            junits.append(run_pytest(label, python, [os.path.join(HERE, "test_gcsfs_versions.py")], HERE, env, out,
                                     ["--rootdir", HERE], max(30, args.budget - (time.time() - t0))))
    finally:
        if relay:
            relay.stop()
        if proc:
            proc.terminate()
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        shutil.rmtree(data, ignore_errors=True)

    print()
    summary = report.write(out, junits, read_skips(args.skips) if args.system_src else [])
    print(f"wall time {time.time() - t0:.0f} s; report {os.path.join(out, 'failures.md')}")
    bad = summary["total"]["failed"] or summary["total"]["error"]
    if summary["missing"]:
        return 2
    if bad and os.environ.get("GCS_SYSTEM_REPORT_ONLY") == "1":
        print("GCS_SYSTEM_REPORT_ONLY=1: failures reported, exit 0")
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
        print(f"gcs-system: the run broke: {e}", file=sys.stderr)
        sys.exit(2)
