"""One secured `silo serve` (rules, an admin key) started in a scratch directory — the binary must serve the console
from anywhere — behind a proxy that can slow and cut uploads (proxy.py), and one headless Chromium (Debian's
`chromium` and `chromium-driver`) driven by selenium. Screenshots go to $CONSOLE_ARTIFACTS
(default .build/console-artifacts)."""
import base64
import json
import os
import shutil
import sys
import tempfile

import pytest
from selenium import webdriver
from selenium.webdriver.chrome.service import Service

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, HERE)
from proxy import Proxy  # noqa: E402
from silo_process import request, start_silo  # noqa: E402

BINARY = os.path.abspath(os.environ.get("SILO_BINARY", os.path.join(REPO, ".build", "release", "silo")))
ARTIFACTS = os.path.abspath(os.environ.get("CONSOLE_ARTIFACTS", os.path.join(REPO, ".build", "console-artifacts")))
ADMIN_KEY = "console-selenium-admin-key-2f6c1d0e9b8a7f65"
BUCKET = "console-test"
RULES = """rules_version = '2';
service firebase.storage {
  match /b/{bucket}/o {
    match /users/{uid}/{file=**} {
      allow read, write: if request.auth != null && request.auth.uid == uid;
    }
    match /public/{file=**} {
      allow read;
    }
  }
}
"""


class Silo:
    def __init__(self, port, proxy):
        self.port = port
        self.proxy = proxy
        self.base = f"http://127.0.0.1:{proxy.port}"

    def api(self, method, path, body=b"", headers=None, admin=True):
        """A request straight to Silo (not through the browser or the proxy): what the test checks against."""
        headers = dict(headers or {})
        if admin:
            headers["Authorization"] = f"Bearer {ADMIN_KEY}"
        if isinstance(body, (dict, list)):
            body = json.dumps(body).encode()
            headers.setdefault("Content-Type", "application/json")
        return request(self.port, method, path, body=body, headers=headers)

    def json(self, method, path, body=b"", **kw):
        status, _, data = self.api(method, path, body, **kw)
        assert 200 <= status < 300, f"{method} {path}: {status} {data[:300]!r}"
        return json.loads(data) if data else {}


@pytest.fixture(scope="session")
def silo():
    scratch = tempfile.mkdtemp(prefix="silo-console-")
    rules = os.path.join(scratch, "storage.rules")
    keys = os.path.join(scratch, "admin.keys")
    with open(rules, "w") as f:
        f.write(RULES)
    with open(keys, "w") as f:
        f.write(ADMIN_KEY + "\n")
    # cwd is the scratch directory, far from the repository: the console's files must come from the binary.
    proc, port, _ = start_silo(BINARY, "--data", os.path.join(scratch, "data"), "--rules", rules,
                               "--admin-key-file", keys, cwd=scratch)
    proxy = Proxy(port)
    server = Silo(port, proxy)
    server.json("POST", "/storage/v1/b?project=demo", {"name": BUCKET})
    yield server
    proxy.close()
    proc.terminate()
    proc.wait(timeout=30)
    shutil.rmtree(scratch, ignore_errors=True)


@pytest.fixture(scope="session")
def artifacts():
    shutil.rmtree(ARTIFACTS, ignore_errors=True)
    os.makedirs(os.path.join(ARTIFACTS, "downloads"))
    print(f"\nconsole screenshots: {ARTIFACTS}")
    return ARTIFACTS


@pytest.fixture(scope="session")
def browser(silo, artifacts):
    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium") or "/usr/bin/chromium"
    for flag in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1280,1000",
                 "--disable-gpu", "--no-first-run", "--disable-extensions"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    service = Service(executable_path=shutil.which("chromedriver") or "/usr/bin/chromedriver")
    driver = webdriver.Chrome(options=options, service=service)
    driver.set_script_timeout(60)
    driver.execute_cdp_cmd("Page.setDownloadBehavior",
                           {"behavior": "allow", "downloadPath": os.path.join(artifacts, "downloads")})
    try:
        driver.execute_cdp_cmd("Browser.grantPermissions", {
            "origin": silo.base, "permissions": ["clipboardReadWrite", "clipboardSanitizedWrite"]})
    except Exception:
        pass  # Older Chromium: the console falls back to showing the URL.
    yield driver
    driver.quit()


class Shots:
    def __init__(self, driver, directory):
        self.driver = driver
        self.directory = directory
        self.taken = []

    def __call__(self, name):
        path = os.path.join(self.directory, f"{len(self.taken) + 1:02d}-{name}.png")
        self.driver.save_screenshot(path)
        self.taken.append(os.path.basename(path))


@pytest.fixture(scope="session")
def shot(browser, artifacts):
    return Shots(browser, artifacts)


def md5_base64(data):
    import hashlib
    return base64.b64encode(hashlib.md5(data).digest()).decode()
