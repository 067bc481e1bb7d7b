"""Uploaded content against the console that shares its origin, in the real browser (docs/threat-model.md, "User
content and the console's origin"). An ordinary user uploads a page and an SVG that read the console's admin key
from sessionStorage, and the cookies, and use the key to delete another user's object; an administrator signed in to
the console opens their download URLs in the same tab. Also a text object asked for as text/html through the XML
API, an uploaded script pulled into the console's own page, and cross-origin calls as another site's page makes them.
Each must see nothing of the console and do nothing with its key, and the console's own previews keep working
(test_console.py)."""
import http.server
import json
import os
import shutil
import subprocess
import tempfile
import threading
import urllib.parse

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

from conftest import BINARY
from silo_process import request, start_silo
from test_console import visible, wait

ADMIN_KEY = "console-user-content-admin-key-5d1e3f"
BUCKET = "content-test"
PROJECT = "content-project"
COOKIE = "silo-console-marker=only-for-the-console"
RULES = """rules_version = '2';
service firebase.storage {
  match /b/{bucket}/o {
    match /users/{uid}/{file=**} {
      allow read, write: if request.auth != null && request.auth.uid == uid;
    }
  }
}
"""
VICTIM = "users/bob/diary.txt"

# What every attack reports: what it could read, and what its DELETE with the key it found answered. The element it
# appends is the evidence that its script ran at all.
STEAL = """
(function () {
  var seen = {key: null, cookie: null, origin: String(self.origin), errors: []};
  try { seen.key = sessionStorage.getItem('silo.console.adminKey'); } catch (e) { seen.errors.push(String(e)); }
  try { seen.cookie = document.cookie; } catch (e) { seen.errors.push(String(e)); }
  var out = document.createElementNS(document.documentElement.namespaceURI, 'text');
  out.setAttribute('id', 'loot');
  out.textContent = JSON.stringify(seen);
  document.documentElement.appendChild(out);
  if (seen.key) {
    fetch('/storage/v1/b/BUCKET/o/' + encodeURIComponent('VICTIM'),
          {method: 'DELETE', headers: {Authorization: 'Bearer ' + seen.key}})
      .then(function (r) { out.setAttribute('data-delete', String(r.status)); });
  }
})();
""".replace("BUCKET", BUCKET).replace("VICTIM", VICTIM)

PAGE = ("<!doctype html><html><head><title>Quarterly report</title></head><body>"
        "<h1 id=\"shown\">Quarterly report</h1><script>" + STEAL + "</script></body></html>")
SVG = ('<svg xmlns="http://www.w3.org/2000/svg" width="200" height="80" onload="' + STEAL.replace('"', "&quot;")
       + '"><text id="shown" x="10" y="40">chart</text></svg>')
SCRIPT = "window.__uploaded = sessionStorage.getItem('silo.console.adminKey') || 'ran';"


class Server:
    def __init__(self, port, scratch):
        self.port = port
        self.base = f"http://127.0.0.1:{port}"
        self.scratch = scratch

    def token(self, uid):
        out = subprocess.run([BINARY, "token", "--uid", uid, "--auth-secret", os.path.join(self.scratch, "secret"),
                              "--project", PROJECT], capture_output=True, text=True, timeout=30, check=True)
        return out.stdout.strip()

    def call(self, method, path, body=b"", headers=None):
        return request(self.port, method, path, body=body, headers=headers or {})

    def admin(self, method, path, body=b"", headers=None):
        return self.call(method, path, body, {"Authorization": f"Bearer {ADMIN_KEY}", **(headers or {})})

    def upload_as(self, uid, name, data, content_type):
        """A v0 upload with the user's own ID token, as the Firebase SDKs send one; returns the download URL the
        reply hands the uploader."""
        status, _, body = self.call("POST", f"/v0/b/{BUCKET}/o?name={urllib.parse.quote(name, safe='')}",
                                    data.encode() if isinstance(data, str) else data,
                                    {"Authorization": "Firebase " + self.token(uid), "Content-Type": content_type})
        assert status == 200, body
        token = json.loads(body)["downloadTokens"]
        return (f"{self.base}/v0/b/{BUCKET}/o/{urllib.parse.quote(name, safe='')}?alt=media&token="
                + urllib.parse.quote(token))

    def put_victim(self):
        """Bob's object, stored by the admin (again, if an attack on an unfixed server deleted it)."""
        status, _, body = self.admin("POST", f"/v0/b/{BUCKET}/o?name={urllib.parse.quote(VICTIM, safe='')}",
                                     b"bob's diary", {"Content-Type": "text/plain"})
        assert status == 200, body

    def victim_exists(self):
        return self.admin("GET", f"/storage/v1/b/{BUCKET}/o/{urllib.parse.quote(VICTIM, safe='')}")[0] == 200


@pytest.fixture(scope="module")
def server():
    scratch = tempfile.mkdtemp(prefix="silo-console-content-")
    for name, text in (("storage.rules", RULES), ("admin.keys", ADMIN_KEY + "\n"),
                       ("secret", "user-content-secret-" + "7" * 40 + "\n")):
        with open(os.path.join(scratch, name), "w") as f:
            f.write(text)
    proc, port, _ = start_silo(BINARY, "--data", os.path.join(scratch, "data"), "--rules",
                               os.path.join(scratch, "storage.rules"), "--admin-key-file",
                               os.path.join(scratch, "admin.keys"), "--auth-secret", os.path.join(scratch, "secret"),
                               "--project", PROJECT, "--bucket", BUCKET, cwd=scratch)
    srv = Server(port, scratch)
    yield srv
    proc.terminate()
    proc.wait(timeout=30)
    shutil.rmtree(scratch, ignore_errors=True)


@pytest.fixture(scope="module")
def signed_in(server, browser):
    """The console signed in with the admin key in the shared browser, and a cookie of the console's origin."""
    browser.get(server.base + "/console/")
    visible(browser, "signin")
    key = browser.find_element(By.ID, "admin-key")
    key.send_keys(ADMIN_KEY)
    key.send_keys(Keys.ENTER)
    visible(browser, "files")
    assert browser.execute_script("return sessionStorage.getItem('silo.console.adminKey')") == ADMIN_KEY
    # The console sets no cookie; one is planted so that reading document.cookie has something to find.
    browser.execute_script("document.cookie = arguments[0] + '; path=/'", COOKIE)
    browser.get_log("browser")
    return browser


def back_to_console(server, browser):
    browser.get(server.base + "/console/")
    visible(browser, "files")
    assert browser.execute_script("return sessionStorage.getItem('silo.console.adminKey')") == ADMIN_KEY


def expect_nothing_of_the_console(server, browser, url, what):
    """Opens `url` in the console's tab. The document is shown (its marked element is there), yet whatever runs in
    it saw neither the key nor the cookie, and the victim's object is still there."""
    server.put_victim()
    browser.get(url)
    wait(browser, lambda d: d.find_elements(By.ID, "shown"))
    loot = browser.find_elements(By.ID, "loot")
    if loot:
        seen = json.loads(loot[0].text or loot[0].get_attribute("textContent"))
        # A page that ran anyway must have run somewhere else than the console's origin.
        if seen["key"]:
            deleted = wait(browser, lambda d: d.find_element(By.ID, "loot").get_attribute("data-delete"))
            raise AssertionError(f"{what}: read the admin key from sessionStorage ({seen}) and its DELETE of "
                                 f"{VICTIM} with it answered {deleted}")
        assert "silo-console-marker" not in (seen["cookie"] or ""), f"{what}: read the console's cookie ({seen})"
    # The same reads, made by the driver inside the opened document: it holds no origin of the console's.
    origin = browser.execute_script("return String(self.origin)")
    assert origin != server.base, f"{what}: the document runs with the console's origin"
    storage = browser.execute_script(
        "try { return sessionStorage.getItem('silo.console.adminKey'); } catch (e) { return 'refused: ' + e.name; }")
    assert storage is None or storage.startswith("refused"), f"{what}: sessionStorage gave {storage!r}"
    cookie = browser.execute_script("try { return document.cookie; } catch (e) { return 'refused: ' + e.name; }")
    assert "silo-console-marker" not in cookie, f"{what}: document.cookie gave {cookie!r}"
    assert server.victim_exists(), f"{what}: the other user's object was deleted with the stolen key"
    # No script of the upload ran: the browser says why.
    log = [e["message"] for e in browser.get_log("browser")]
    assert not loot, f"{what}: the uploaded script ran ({loot[0].get_attribute('textContent')})"
    assert any("sandboxed" in m and "allow-scripts" in m for m in log), f"{what}: {log}"
    back_to_console(server, browser)


def test_an_uploaded_page_sees_nothing_of_the_console(server, signed_in):
    url = server.upload_as("mallory", "users/mallory/report.html", PAGE, "text/html")
    expect_nothing_of_the_console(server, signed_in, url, "an uploaded text/html page")


def test_an_uploaded_svg_sees_nothing_of_the_console(server, signed_in):
    url = server.upload_as("mallory", "users/mallory/chart.svg", SVG, "image/svg+xml")
    expect_nothing_of_the_console(server, signed_in, url, "an uploaded SVG with onload")


def test_an_object_asked_for_as_html_through_the_xml_api_sees_nothing(server, signed_in):
    # Bytes of the attacker's, stored as text and made public (any object a caller may read will do).
    name = "users/mallory/notes.txt"
    server.upload_as("mallory", name, PAGE, "text/plain")
    status, _, body = server.admin("PATCH", f"/storage/v1/b/{BUCKET}/o/{urllib.parse.quote(name, safe='')}"
                                   "?predefinedAcl=publicRead", b"{}", {"Content-Type": "application/json"})
    assert status == 200, body
    url = f"{server.base}/{BUCKET}/{name}?response-content-type=text%2Fhtml"
    status, headers, _ = server.call("GET", urllib.parse.urlsplit(url).path + "?" + urllib.parse.urlsplit(url).query)
    assert status == 200 and headers.get("Content-Type") == "text/html", headers
    expect_nothing_of_the_console(server, signed_in, url, "XML response-content-type=text/html")


def test_an_uploaded_script_cannot_join_the_console_page(server, signed_in):
    """Markup slipped into the console's page (none is known: names and metadata are inserted as text) could point
    a script element at an upload of this origin; the page's policy trusts its nonce, not the origin."""
    server.put_victim()
    url = server.upload_as("mallory", "users/mallory/tool.js", SCRIPT, "text/javascript")
    back_to_console(server, signed_in)
    signed_in.get_log("browser")
    outcome = signed_in.execute_async_script("""
        const done = arguments[arguments.length - 1];
        const script = document.createElement('script');
        script.src = arguments[0];
        script.onload = () => done('loaded: ' + window.__uploaded);
        script.onerror = () => done('refused');
        document.head.append(script);
    """, url)
    assert outcome == "refused", outcome
    assert signed_in.execute_script("return window.__uploaded === undefined")
    log = [e["message"] for e in signed_in.get_log("browser")]
    assert any("Content Security Policy" in m and "tool.js" in m for m in log), log
    assert server.victim_exists()


def test_images_and_pdfs_opened_by_their_download_urls_still_show(server, signed_in):
    """What the sandbox costs: nothing for what browsers show by themselves. A sandboxed image opened in a tab is
    drawn, a sandboxed PDF opens in the browser's viewer, as before."""
    from test_console import pdf, png
    for name, data, kind in (("users/mallory/photo.png", png(24, 16), "image/png"),
                             ("users/mallory/paper.pdf", pdf("Sandboxed paper"), "application/pdf")):
        url = server.upload_as("mallory", name, data, kind)
        _, headers, _ = server.call("GET", url[len(server.base):])
        assert "sandbox" in headers.get("Content-Security-Policy", ""), (name, headers)
        signed_in.get(url)
        if kind == "image/png":
            wait(signed_in, lambda d: d.execute_script(
                "return document.images.length === 1 && document.images[0].naturalWidth") == 24)
            assert signed_in.execute_script("return String(self.origin)") == "null"
        else:
            # Chromium's viewer keeps the URL's origin for the document it embeds the PDF in, sandbox or not; the
            # file's own scripts run in PDFium's engine, never in that document (docs/threat-model.md).
            wait(signed_in, lambda d: d.execute_script("return document.contentType") == "application/pdf")
    back_to_console(server, signed_in)


class OtherSite:
    """A page of another origin (another port of 127.0.0.1), as an app that calls Silo from the browser has."""

    def __init__(self):
        class Page(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                body = b"<!doctype html><title>another site</title><p id=shown>app</p>"
                self.send_response(200)
                self.send_header("Content-Type", "text/html")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Page)
        self.base = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


FETCH = """
const [url, init] = [arguments[0], arguments[1]];
const done = arguments[arguments.length - 1];
fetch(url, init).then(async (r) => done({status: r.status, body: (await r.text()).slice(0, 200),
                                          uploadURL: r.headers.get('X-Goog-Upload-URL')}),
                      (e) => done({error: String(e)}));
"""


def test_another_sites_page_uses_the_storage_api_but_not_the_consoles(server, browser):
    site = OtherSite()
    try:
        browser.get(site.base + "/")
        wait(browser, lambda d: d.find_elements(By.ID, "shown"))
        mallory = "Firebase " + server.token("mallory")
        # The JS SDK's calls: a resumable start (preflighted: Authorization and the X-Goog-Upload headers) whose
        # X-Goog-Upload-URL the page reads, and a metadata read.
        start = browser.execute_async_script(FETCH, f"{server.base}/v0/b/{BUCKET}/o?name=users%2Fmallory%2Fapp.txt", {
            "method": "POST", "body": "{}", "headers": {
                "Authorization": mallory, "Content-Type": "application/json", "X-Goog-Upload-Protocol": "resumable",
                "X-Goog-Upload-Command": "start", "X-Goog-Upload-Header-Content-Length": "5"}})
        assert start.get("status") == 200 and start.get("uploadURL"), start
        read = browser.execute_async_script(FETCH, f"{server.base}/v0/b/{BUCKET}/o/users%2Fmallory%2Freport.html",
                                            {"headers": {"Authorization": mallory}})
        assert read.get("status") == 200 and '"name"' in read["body"], read
        # A credentialed request gets no answer it may read: Silo reads no cookie, so it allows none.
        with_cookies = browser.execute_async_script(
            FETCH, f"{server.base}/v0/b/{BUCKET}/o/users%2Fmallory%2Freport.html",
            {"credentials": "include", "headers": {"Authorization": mallory}})
        assert "error" in with_cookies, with_cookies
        # The console's API, even with the admin key in hand, answers no other origin.
        for init in ({"headers": {"Authorization": f"Bearer {ADMIN_KEY}"}}, {}):
            session = browser.execute_async_script(FETCH, f"{server.base}/console/api/session", init)
            assert "error" in session, (init, session)
        browser.get_log("browser")
    finally:
        site.close()
