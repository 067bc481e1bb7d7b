"""One way to run gsutil against Silo for both client modules (JSON and XML mode): a boto config pointing every
host at the TLS listener, anonymous, with the test's CA, and no update checks."""
import os
import subprocess
import sys

GSUTIL = os.path.join(os.path.dirname(sys.executable), "gsutil")


def gsutil_runner(tls, tmp_path, prefer_api, extra_gsutil_options=""):
    config = tmp_path / "boto.cfg"
    config.write_text(f"""[Credentials]
gs_json_host = localhost
gs_json_port = {tls.port}
gs_host = localhost
gs_port = {tls.port}

[Boto]
https_validate_certificates = True
ca_certificates_file = {tls.ca}
num_retries = 1
max_retry_delay = 1

[GSUtil]
prefer_api = {prefer_api}
default_project_id = demo
software_update_check_period = 0
{extra_gsutil_options}
state_dir = {tmp_path / "state"}
""")
    env = dict(os.environ)
    env.update({
        "BOTO_CONFIG": str(config), "BOTO_PATH": str(config), "CLOUDSDK_CONFIG": str(tmp_path / "gcloud"),
        "HOME": str(tmp_path),
    })
    env.pop("STORAGE_EMULATOR_HOST", None)

    def run(*args, check=True):
        proc = subprocess.run([GSUTIL, *args], env=env, capture_output=True, text=True, errors="replace",
                              timeout=300)
        if check and proc.returncode != 0:
            raise AssertionError(f"gsutil {' '.join(args)} exited {proc.returncode}:\n{proc.stderr[-4000:]}")
        return proc

    return run
