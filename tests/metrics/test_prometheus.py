"""A real Prometheus (Debian's `prometheus`) scrapes Silo on 127.0.0.1 with the admin key, as docs/operations.md
configures it, and its HTTP API answers a query for a Silo metric."""
import json
import os
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.parse
import urllib.request

import pytest

from conftest import BUCKET

PROMETHEUS = shutil.which("prometheus")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def query(port, expression):
    url = f"http://127.0.0.1:{port}/api/v1/query?" + urllib.parse.urlencode({"query": expression})
    with urllib.request.urlopen(url, timeout=10) as r:
        answer = json.load(r)
    assert answer["status"] == "success", answer
    return answer["data"]["result"]


@pytest.mark.skipif(PROMETHEUS is None, reason="prometheus is not installed (scripts/install-deps.sh installs it)")
def test_prometheus_scrapes_silo(silo):
    for i in range(5):
        assert silo.request("POST", f"/v0/b/{BUCKET}/o?name=public%2Fprom{i}", body=b"p")[0] == 200
    folder = tempfile.mkdtemp(prefix="silo-prometheus-")
    port = free_port()
    config = os.path.join(folder, "prometheus.yml")
    with open(config, "w") as f:
        f.write(f"""global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: silo
    metrics_path: /metrics
    authorization:
      type: Bearer
      credentials_file: {silo.key_file}
    static_configs:
      - targets: ["127.0.0.1:{silo.port}"]
""")
    proc = subprocess.Popen([PROMETHEUS, f"--config.file={config}", f"--storage.tsdb.path={folder}/data",
                             f"--web.listen-address=127.0.0.1:{port}"],
                            stdout=subprocess.DEVNULL, stderr=open(os.path.join(folder, "prometheus.log"), "w"))
    try:
        result = []
        # Prometheus needs a moment to start and a scrape or two; poll its API (no bound on how long is asserted,
        # only an overall give-up so that a broken setup fails instead of hanging).
        deadline = time.time() + 120
        while time.time() < deadline:
            try:
                result = query(port, f'sum(silo_http_requests_total{{route="firebase_bucket",code="200"}})')
                if result and float(result[0]["value"][1]) >= 5:
                    break
            except OSError:
                pass
            time.sleep(0.5)
        assert result and float(result[0]["value"][1]) >= 5, open(os.path.join(folder, "prometheus.log")).read()[-3000:]
        up = query(port, 'up{job="silo"}')
        assert up and up[0]["value"][1] == "1"
        # Prometheus parsed the histogram into series it can aggregate.
        assert query(port, 'sum(silo_http_request_duration_seconds_count{route="firebase_bucket"})')
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        shutil.rmtree(folder, ignore_errors=True)
