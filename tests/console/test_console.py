"""The web console driven in headless Chromium through its users' flows, each step checked through the APIs (not
only on screen) and kept as a screenshot. The tests run in file order and share one browser session."""
import json
import os
import struct
import time
import urllib.parse
import zlib

import pytest
from selenium.common.exceptions import StaleElementReferenceException, TimeoutException
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support import expected_conditions as EC
from selenium.webdriver.support.ui import Select, WebDriverWait

from conftest import ADMIN_KEY, BUCKET, md5_base64

FOLDER = "photos"
BIG = 20 * 1024 * 1024


def wait(driver, condition, timeout=30):
    try:
        return WebDriverWait(driver, timeout).until(condition)
    except TimeoutException:
        # Say what the console said: its last status message and the browser's log.
        toast = driver.execute_script("return document.getElementById('toast').textContent")
        log = [e["message"][:300] for e in driver.get_log("browser")][-10:]
        raise AssertionError(f"timed out; console said {toast!r}; browser log: {log}") from None


def by_id(driver, element_id):
    return driver.find_element(By.ID, element_id)


def visible(driver, element_id, timeout=30):
    return wait(driver, EC.visibility_of_element_located((By.ID, element_id)), timeout)


def png(width, height):
    """A real PNG (a colour gradient), so the preview has pixels to decode."""
    rows = b"".join(b"\x00" + b"".join(bytes((x * 8 % 256, y * 10 % 256, 160)) for x in range(width))
                    for y in range(height))

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")


def object_path(name):
    return f"/storage/v1/b/{BUCKET}/o/{urllib.parse.quote(name, safe='')}"


def row_button(driver, label):
    """The name button of the listing row whose label ends with `label` (looked up in one script call, so a
    listing re-rendered meanwhile cannot leave a stale half-answer)."""
    return driver.execute_script(
        "return Array.from(document.querySelectorAll('#object-rows td:first-child button'))"
        ".find((b) => b.textContent.trim().endsWith(arguments[0])) || null", label)


def open_row(driver, label):
    """Clicks that row's button, again if the listing re-rendered under the click."""
    def attempt(d):
        button = row_button(d, label)
        if button is None:
            return False
        try:
            button.click()
            return True
        except StaleElementReferenceException:
            return False
    wait(driver, attempt)


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    directory = tmp_path_factory.mktemp("uploads")
    contents = {
        "island.png": png(32, 24),
        "notes.txt": b"Field notes\n" + b"line of text\n" * 200,
        "survey.bin": os.urandom(BIG),
    }
    paths = {}
    for name, data in contents.items():
        path = directory / name
        path.write_bytes(data)
        paths[name] = str(path)
    return contents, paths


def test_sign_in(silo, browser, shot):
    browser.get(silo.base + "/console")
    visible(browser, "signin")
    assert browser.current_url.endswith("/console/")
    shot("sign-in")
    key = by_id(browser, "admin-key")
    assert key.get_attribute("type") == "password"
    key.send_keys("not-the-key")
    key.send_keys(Keys.ENTER)
    wait(browser, lambda d: "Sign-in failed" in by_id(d, "signin-error").text)
    shot("sign-in-refused")
    key.send_keys(ADMIN_KEY)
    by_id(browser, "signin-form").find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    visible(browser, "files")
    wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, f"#buckets button[data-bucket='{BUCKET}']"))
    # The key lives in sessionStorage only: not in the URL, not on the page, not in localStorage or a cookie.
    assert browser.execute_script("return sessionStorage.getItem('silo.console.adminKey')") == ADMIN_KEY
    assert ADMIN_KEY not in browser.current_url
    assert ADMIN_KEY not in browser.page_source
    assert browser.execute_script("return localStorage.length") == 0
    assert browser.get_cookies() == []
    assert by_id(browser, "admin-key").get_attribute("value") == ""
    shot("signed-in")


def test_create_folder_and_browse_into_it(silo, browser, shot):
    by_id(browser, "new-folder").click()
    name = visible(browser, "folder-name")
    name.send_keys(FOLDER)
    name.send_keys(Keys.ENTER)
    wait(browser, lambda d: row_button(d, FOLDER) is not None)
    assert silo.json("GET", object_path(FOLDER + "/"))["size"] in ("0", 0)
    shot("folder-created")
    open_row(browser, FOLDER)
    wait(browser, lambda d: d.find_element(By.CSS_SELECTOR, "#breadcrumbs [aria-current=page]").text == FOLDER)
    assert "empty" in by_id(browser, "list-status").text
    shot("inside-folder")


def test_upload_three_files_with_progress_and_a_dropped_connection(silo, browser, shot, files):
    contents, paths = files
    # The proxy cuts the next connection that carries 5 MiB: in the middle of the big file's first chunk.
    silo.proxy.arm_drop(5 << 20)
    by_id(browser, "file-input").send_keys("\n".join(paths[n] for n in ("island.png", "notes.txt", "survey.bin")))
    seen = set()
    notes = set()
    deadline = time.time() + 180
    big_row = None
    while time.time() < deadline:
        rows = browser.find_elements(By.CSS_SELECTOR, "#uploads li")
        for row in rows:
            if row.get_attribute("data-file") == "survey.bin":
                big_row = row
        if big_row is not None:
            percent = big_row.get_attribute("data-percent")
            if percent:
                seen.add(int(percent))
            notes.add(big_row.find_element(By.CLASS_NAME, "upload-state").text)
            if 40 <= (int(percent) if percent else 0) < 100 and "mid-upload" not in notes:
                notes.add("mid-upload")
                shot("uploading")
        states = [r.get_attribute("data-state") for r in rows]
        if len(states) == 3 and all(s in ("done", "failed") for s in states):
            break
        time.sleep(0.02)
    states = {r.get_attribute("data-file"): r.get_attribute("data-state")
              for r in browser.find_elements(By.CSS_SELECTOR, "#uploads li")}
    shot("uploaded")
    assert states == {"island.png": "done", "notes.txt": "done", "survey.bin": "done"}, notes
    # The bar moved through intermediate values, and the cut connection was resumed, not restarted from zero.
    assert any(0 < p < 100 for p in seen), sorted(seen)
    assert silo.proxy.dropped == 1
    interruptions = browser.execute_script(
        "return document.querySelector(\"#uploads li[data-file='survey.bin']\").dataset.interruptions || null")
    assert interruptions is not None and int(interruptions) >= 1, sorted(notes)
    for name, data in contents.items():
        meta = silo.json("GET", object_path(f"{FOLDER}/{name}"))
        assert int(meta["size"]) == len(data), name
        assert meta["md5Hash"] == md5_base64(data), name
    wait(browser, lambda d: all(row_button(d, n) is not None for n in contents))


def test_drag_and_drop_upload(silo, browser, shot):
    # A drop event carrying a File, as the browser fires it when a file is dropped on the panel.
    browser.execute_script("""
        const data = new DataTransfer();
        data.items.add(new File(["dropped by drag and drop\\n"], "dropped.txt", { type: "text/plain" }));
        const zone = document.getElementById("dropzone");
        zone.dispatchEvent(new DragEvent("dragover", { dataTransfer: data, bubbles: true, cancelable: true }));
        zone.dispatchEvent(new DragEvent("drop", { dataTransfer: data, bubbles: true, cancelable: true }));
    """)
    wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "#uploads li[data-file='dropped.txt'][data-state=done]"))
    assert int(silo.json("GET", object_path(f"{FOLDER}/dropped.txt"))["size"]) == 25
    wait(browser, lambda d: row_button(d, "dropped.txt") is not None)
    shot("dropped")


def test_breadcrumbs_and_prefix_search(silo, browser, shot):
    browser.find_element(By.CSS_SELECTOR, "#breadcrumbs button").click()
    wait(browser, lambda d: row_button(d, FOLDER) is not None and row_button(d, "notes.txt") is None)
    open_row(browser, FOLDER)
    wait(browser, lambda d: row_button(d, "notes.txt") is not None)
    by_id(browser, "search").send_keys("no")
    wait(browser, lambda d: row_button(d, "notes.txt") is not None and row_button(d, "island.png") is None)
    assert len(browser.find_elements(By.CSS_SELECTOR, "#object-rows tr")) == 1
    shot("prefix-search")
    by_id(browser, "search").send_keys(Keys.CONTROL, "a")
    by_id(browser, "search").send_keys(Keys.DELETE)
    wait(browser, lambda d: row_button(d, "island.png") is not None)


def test_preview_image(silo, browser, shot):
    open_row(browser, "island.png")
    visible(browser, "detail")
    image = wait(browser, EC.presence_of_element_located((By.CSS_SELECTOR, "#preview img[data-preview=image]")))
    wait(browser, lambda d: d.execute_script("return arguments[0].complete && arguments[0].naturalWidth", image) == 32)
    assert image.get_attribute("alt").startswith("Preview of")
    assert by_id(browser, "detail-name").text == f"{BUCKET}/{FOLDER}/island.png"
    shot("preview-image")


def test_preview_text(silo, browser, shot):
    open_row(browser, "notes.txt")
    wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "#preview pre[data-preview=text]"))
    assert browser.find_element(By.CSS_SELECTOR, "#preview pre").text.startswith("Field notes")
    shot("preview-text")


def wav(seconds=1.0, rate=8000):
    """A real WAV (a 440 Hz tone, 16-bit mono), so the audio element has samples to decode and a duration."""
    import math
    frames = int(seconds * rate)
    samples = b"".join(struct.pack("<h", int(12000 * math.sin(2 * math.pi * 440 * i / rate))) for i in range(frames))
    fmt = struct.pack("<HHIIHH", 1, 1, rate, rate * 2, 2, 16)
    body = b"WAVE" + b"fmt " + struct.pack("<I", len(fmt)) + fmt + b"data" + struct.pack("<I", len(samples)) + samples
    return b"RIFF" + struct.pack("<I", len(body)) + body


def pdf(text="Silo field report"):
    """A real one-page PDF with its cross-reference table at the right offsets."""
    stream = f"BT /F1 24 Tf 72 720 Td ({text}) Tj ET".encode()
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        b"/Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length " + str(len(stream)).encode() + b" >>\nstream\n" + stream + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out = b"%PDF-1.4\n"
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n".encode() + body + b"\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    out += b"".join(f"{offset:010d} 00000 n \n".encode() for offset in offsets)
    out += f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()
    return out


# A real WebM made by the browser itself (MediaRecorder over a canvas): 64×48 VP8 frames for about half a second.
RECORD_WEBM = """
const done = arguments[arguments.length - 1];
const canvas = document.createElement("canvas");
canvas.width = 64; canvas.height = 48;
const context = canvas.getContext("2d");
const recorder = new MediaRecorder(canvas.captureStream(25), { mimeType: "video/webm;codecs=vp8" });
const chunks = [];
recorder.ondataavailable = (event) => chunks.push(event.data);
recorder.onstop = async () => {
  const bytes = new Uint8Array(await new Blob(chunks).arrayBuffer());
  let binary = "";
  for (const byte of bytes) binary += String.fromCharCode(byte);
  done(btoa(binary));
};
let frame = 0;
const timer = setInterval(() => {
  context.fillStyle = `hsl(${(frame++ * 40) % 360}, 80%, 50%)`;
  context.fillRect(0, 0, 64, 48);
}, 40);
recorder.start(100);
setTimeout(() => { clearInterval(timer); recorder.stop(); }, 700);
"""


def media_ready(driver, selector):
    """The media element's readyState, duration and video width once it has loaded metadata (None before)."""
    return driver.execute_script(
        "const m = document.querySelector(arguments[0]);"
        "return m && m.readyState >= 1 ? [m.readyState, m.duration, m.videoWidth || 0] : null", selector)


def test_preview_audio_video_and_pdf(silo, browser, shot):
    import base64
    browser.set_script_timeout(30)
    webm = base64.b64decode(browser.execute_async_script(RECORD_WEBM))
    assert webm[:4] == b"\x1a\x45\xdf\xa3", webm[:16]  # the EBML magic: a real WebM
    media = {"tone.wav": (wav(), "audio/wav"), "clip.webm": (webm, "video/webm"), "report.pdf": (pdf(), "application/pdf")}
    for name, (data, content_type) in media.items():
        status, _, body = silo.api(
            "POST", f"/upload/storage/v1/b/{BUCKET}/o?uploadType=media&name=" + urllib.parse.quote(f"{FOLDER}/{name}"),
            data, {"Content-Type": content_type})
        assert status == 200, body[:300]
    # The listing shows what is stored now: back to the bucket and into the folder again.
    browser.find_element(By.CSS_SELECTOR, "#breadcrumbs button").click()
    wait(browser, lambda d: row_button(d, FOLDER) is not None)
    open_row(browser, FOLDER)

    # Each element decoded what Silo served: a duration, and the frames' width for the video.
    open_row(browser, "tone.wav")
    wait(browser, lambda d: media_ready(d, "#preview audio[data-preview=audio]"))
    _, duration, _ = media_ready(browser, "#preview audio[data-preview=audio]")
    assert abs(duration - 1.0) < 0.05, duration
    shot("preview-audio")
    open_row(browser, "clip.webm")
    wait(browser, lambda d: (media_ready(d, "#preview video[data-preview=video]") or [0, 0, 0])[2] == 64)
    shot("preview-video")
    open_row(browser, "report.pdf")
    frame = wait(browser, EC.presence_of_element_located((By.CSS_SELECTOR, "#preview iframe[data-preview=pdf]")))
    assert frame.get_attribute("title") == "Preview of " + f"{FOLDER}/report.pdf"
    # The frame loaded what Silo served as a PDF document (the browser's viewer opens it; the page's CSP keeps
    # scripts from fetching the blob to compare bytes).
    wait(browser, lambda d: d.execute_script(
        "const f = arguments[0]; return f.contentDocument && f.contentDocument.contentType", frame) == "application/pdf")
    shot("preview-pdf")


def test_edit_custom_metadata(silo, browser, shot):
    open_row(browser, "island.png")
    wait(browser, lambda d: by_id(d, "detail-name").text.endswith("island.png"))
    by_id(browser, "custom-add").click()
    key = browser.find_elements(By.CSS_SELECTOR, "#custom-rows .custom-key")[-1]
    value = browser.find_elements(By.CSS_SELECTOR, "#custom-rows .custom-value")[-1]
    key.send_keys("reviewed-by")
    value.send_keys("console test")
    content_type = by_id(browser, "meta-cacheControl")
    content_type.clear()
    content_type.send_keys("public, max-age=60")
    by_id(browser, "metadata-save").click()
    wait(browser, lambda d: "Metadata saved" in by_id(d, "toast").text)
    meta = silo.json("GET", object_path(f"{FOLDER}/island.png"))
    assert meta["metadata"]["reviewed-by"] == "console test"
    assert meta["cacheControl"] == "public, max-age=60"
    # The v0 API sees the same custom metadata.
    status, _, body = silo.api("GET", f"/v0/b/{BUCKET}/o/{urllib.parse.quote(FOLDER + '/island.png', safe='')}")
    assert status == 200 and json.loads(body)["metadata"]["reviewed-by"] == "console test"
    shot("metadata-saved")


def tokens(silo, name):
    text = silo.json("GET", object_path(name)).get("metadata", {}).get("firebaseStorageDownloadTokens", "")
    return [t for t in text.split(",") if t]


def test_create_copy_and_revoke_a_download_token(silo, browser, shot):
    name = f"{FOLDER}/island.png"
    before = tokens(silo, name)
    by_id(browser, "token-create").click()
    wait(browser, lambda d: len(tokens(silo, name)) == len(before) + 1)
    (new,) = set(tokens(silo, name)) - set(before)
    item = wait(browser, EC.presence_of_element_located((By.CSS_SELECTOR, f"#tokens li[data-token-suffix='{new[-6:]}']")))
    # The list shows only the token's end.
    assert new not in browser.find_element(By.ID, "tokens").text
    link = f"/v0/b/{BUCKET}/o/{urllib.parse.quote(name, safe='')}?alt=media&token={new}"
    assert silo.api("GET", link, admin=False)[0] == 200
    shot("token-created")
    item.find_element(By.XPATH, ".//button[text()='Copy URL']").click()
    wait(browser, lambda d: "copied" in by_id(d, "toast").text or d.find_elements(By.CSS_SELECTOR, ".token-url"))
    item.find_element(By.XPATH, ".//button[text()='Revoke']").click()
    visible(browser, "confirm")
    shot("token-revoke-confirm")
    by_id(browser, "confirm-ok").click()
    wait(browser, lambda d: new not in tokens(silo, name))
    assert silo.api("GET", link, admin=False)[0] == 403
    wait(browser, lambda d: not d.find_elements(By.CSS_SELECTOR, f"#tokens li[data-token-suffix='{new[-6:]}']"))
    shot("token-revoked")


def test_download(silo, browser, shot, artifacts, files):
    contents, _ = files
    open_row(browser, "notes.txt")
    wait(browser, lambda d: by_id(d, "detail-name").text.endswith("notes.txt"))
    by_id(browser, "download").click()
    target = os.path.join(artifacts, "downloads", "notes.txt")
    wait(browser, lambda d: os.path.exists(target) and open(target, "rb").read() == contents["notes.txt"])


def test_rules_simulation_denied_with_explain_trace(silo, browser, shot):
    by_id(browser, "tab-rules").click()
    visible(browser, "rules")
    wait(browser, lambda d: "match /users/{uid}/{file=**}" in by_id(d, "rules-source").get_attribute("value"))
    Select(by_id(browser, "sim-operation")).select_by_visible_text("get")
    by_id(browser, "sim-bucket").clear()
    by_id(browser, "sim-bucket").send_keys(BUCKET)
    by_id(browser, "sim-path").send_keys("users/alice/diary.txt")
    by_id(browser, "sim-uid").send_keys("mallory")
    by_id(browser, "simulate").click()
    visible(browser, "sim-result")
    wait(browser, lambda d: by_id(d, "sim-decision").text == "Denied")
    deciding = browser.find_element(By.CSS_SELECTOR, "#sim-trace li.deciding")
    assert "allow read, write: if request.auth != null && request.auth.uid == uid;" in deciding.text
    assert deciding.get_attribute("data-outcome") == "denied"
    assert "line 5" in deciding.text
    shot("rules-denied")
    # The same trace as JSON, for tooling.
    trace = silo.json("POST", "/console/api/rules/explain", {
        "operation": "get", "bucket": BUCKET, "path": "users/alice/diary.txt", "auth": {"uid": "mallory"}})
    assert trace["allowed"] is False
    assert trace["steps"][trace["decidingStep"]]["line"] == 5
    assert len(browser.find_elements(By.CSS_SELECTOR, "#sim-trace li")) == len(trace["steps"])
    # The owner is allowed, by the same statement.
    by_id(browser, "sim-uid").clear()
    by_id(browser, "sim-uid").send_keys("alice")
    by_id(browser, "simulate").click()
    wait(browser, lambda d: by_id(d, "sim-decision").text == "Allowed")
    shot("rules-allowed")
    by_id(browser, "tab-files").click()
    visible(browser, "files")


def test_delete_with_confirmation(silo, browser, shot):
    open_row(browser, "notes.txt")
    wait(browser, lambda d: by_id(d, "detail-name").text.endswith("notes.txt"))
    by_id(browser, "delete").click()
    visible(browser, "confirm")
    shot("delete-confirm")
    # Cancel keeps it.
    by_id(browser, "confirm-cancel").click()
    assert silo.api("GET", object_path(f"{FOLDER}/notes.txt"))[0] == 200
    by_id(browser, "delete").click()
    visible(browser, "confirm")
    by_id(browser, "confirm-ok").click()
    wait(browser, lambda d: row_button(d, "notes.txt") is None)
    assert silo.api("GET", object_path(f"{FOLDER}/notes.txt"))[0] == 404
    shot("deleted")


def test_paging_and_untrusted_names(silo, browser, shot):
    # 104 objects: more than one page of 100. One name is markup, which must show as text and run nothing.
    hostile = '<img src=x onerror="document.title=\'pwned\'">.txt'
    names = [f"many/item-{i:03d}.txt" for i in range(103)] + ["many/" + hostile]
    for name in names:
        status, _, body = silo.api("POST", f"/upload/storage/v1/b/{BUCKET}/o?uploadType=media&name="
                                   + urllib.parse.quote(name, safe=""), body=b"x", headers={"Content-Type": "text/plain"})
        assert status == 200, body
    browser.find_element(By.CSS_SELECTOR, "#breadcrumbs button").click()
    open_row(browser, "many")
    wait(browser, lambda d: len(d.find_elements(By.CSS_SELECTOR, "#object-rows tr")) == 100)
    assert by_id(browser, "more").is_displayed()
    by_id(browser, "more").click()
    wait(browser, lambda d: len(d.find_elements(By.CSS_SELECTOR, "#object-rows tr")) == 104)
    assert not by_id(browser, "more").is_displayed()
    assert row_button(browser, hostile) is not None
    assert browser.find_elements(By.CSS_SELECTOR, "#object-rows img") == []
    assert browser.title == "Silo console"
    shot("paging")
    browser.find_element(By.CSS_SELECTOR, "#breadcrumbs button").click()
    open_row(browser, FOLDER)
    wait(browser, lambda d: row_button(d, "island.png") is not None)


def test_no_policy_violations_or_errors_in_the_browser_log(browser):
    entries = browser.get_log("browser")
    violations = [e for e in entries if "Content Security Policy" in e["message"] or "Refused to" in e["message"]]
    assert violations == []
    # Expected failures (the refused sign-in's 401, the revoked token's 403 checked from Python) are not from the
    # browser's own page; any uncaught script error is.
    errors = [e for e in entries if e["level"] == "SEVERE" and "Uncaught" in e["message"]]
    assert errors == []
