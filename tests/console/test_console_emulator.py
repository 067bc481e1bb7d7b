"""The console on a server in emulator mode (loopback, no rules, no key): it opens without signing in, and the v0
token calls, which need the emulator's admin, work."""
import json
import os
import shutil
import tempfile
import urllib.parse

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from conftest import BINARY
from silo_process import request, start_silo


@pytest.fixture(scope="module")
def emulator():
    scratch = tempfile.mkdtemp(prefix="silo-console-emulator-")
    proc, port, banner = start_silo(BINARY, "--data", os.path.join(scratch, "data"), cwd=scratch)
    assert request(port, "POST", "/storage/v1/b", body=b'{"name":"open-bucket"}',
                   headers={"Content-Type": "application/json"})[0] == 200
    yield port
    proc.terminate()
    proc.wait(timeout=30)
    shutil.rmtree(scratch, ignore_errors=True)


def test_opens_without_a_key_and_manages_tokens(emulator, browser, shot, tmp_path):
    browser.get(f"http://127.0.0.1:{emulator}/console/")
    wait = WebDriverWait(browser, 30)
    wait.until(lambda d: d.find_element(By.ID, "files").is_displayed())
    assert not browser.find_element(By.ID, "signin").is_displayed()
    assert "Emulator mode" in browser.find_element(By.ID, "mode").text
    assert not browser.find_element(By.ID, "sign-out").is_displayed()
    # The emulator also serves its default bucket, listed first: choose ours.
    wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#buckets button[data-bucket='open-bucket']"))[0].click()
    wait.until(lambda d: d.find_element(By.CSS_SELECTOR, "#breadcrumbs [aria-current=page]").text == "open-bucket")
    path = tmp_path / "hello.json"
    path.write_text('{"hello": "world", "n": [1, 2, 3]}')
    browser.find_element(By.ID, "file-input").send_keys(str(path))
    wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#uploads li[data-file='hello.json'][data-state=done]"))
    button = wait.until(lambda d: d.execute_script(
        "return Array.from(document.querySelectorAll('#object-rows button'))"
        ".find((b) => b.textContent.trim() === 'hello.json') || null"))
    button.click()
    # JSON is previewed pretty-printed.
    pre = wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#preview pre[data-preview=json]"))[0]
    assert '"hello": "world"' in pre.text
    count = len(browser.find_elements(By.CSS_SELECTOR, "#tokens li[data-token-suffix]"))
    browser.find_element(By.ID, "token-create").click()
    wait.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "#tokens li[data-token-suffix]")) == count + 1)
    status, _, body = request(emulator, "GET", "/storage/v1/b/open-bucket/o/" + urllib.parse.quote("hello.json"))
    assert status == 200, body
    tokens = json.loads(body).get("metadata", {}).get("firebaseStorageDownloadTokens", "").split(",")
    assert len(tokens) == count + 1, body
    assert status == 200 and len(tokens) == count + 1
    shot("emulator-mode")
    # Without rules the playground says so, and simulates the allow-everything policy.
    browser.find_element(By.ID, "tab-rules").click()
    wait.until(lambda d: "No rules are loaded" in d.find_element(By.ID, "toast").text)
    browser.find_element(By.ID, "sim-path").send_keys("anything.txt")
    browser.find_element(By.ID, "simulate").click()
    wait.until(lambda d: d.find_element(By.ID, "sim-decision").text == "Allowed")
    assert "no rules are loaded" in browser.find_element(By.ID, "sim-reason").text
    shot("emulator-rules")


def test_previews_load_the_sandboxed_media_urls(emulator, browser, shot):
    """In emulator mode the previews load media URLs directly (there is no key to fetch them with), and every such
    answer is sandboxed (docs/threat-model.md, "User content and the console's origin"): the image, the PDF and the
    audio still show."""
    from test_console import media_ready, open_row, pdf, png, row_button, wav
    for name, data, kind in (("shot.png", png(40, 30), "image/png"),
                             ("paper.pdf", pdf("Emulator paper"), "application/pdf"), ("beep.wav", wav(), "audio/wav")):
        status, headers, body = request(emulator, "POST", "/v0/b/open-bucket/o?name=" + name, body=data,
                                        headers={"Content-Type": kind})
        assert status == 200, body
    status, headers, _ = request(emulator, "GET", "/v0/b/open-bucket/o/paper.pdf?alt=media")
    assert status == 200 and "sandbox" in headers.get("Content-Security-Policy", ""), headers
    browser.get(f"http://127.0.0.1:{emulator}/console/")
    wait = WebDriverWait(browser, 30)
    wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#buckets button[data-bucket='open-bucket']"))[0].click()
    wait.until(lambda d: row_button(d, "shot.png") is not None)
    open_row(browser, "shot.png")
    image = wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#preview img[data-preview=image]"))[0]
    assert "/storage/v1/b/open-bucket/o/" in image.get_attribute("src")
    wait.until(lambda d: d.execute_script("return arguments[0].complete && arguments[0].naturalWidth", image) == 40)
    open_row(browser, "beep.wav")
    wait.until(lambda d: media_ready(d, "#preview audio[data-preview=audio]"))
    open_row(browser, "paper.pdf")
    frame = wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#preview iframe[data-preview=pdf]"))[0]
    assert "/storage/v1/b/open-bucket/o/paper.pdf" in frame.get_attribute("src")
    # The framed document is sandboxed (an opaque origin the console cannot look into): look from inside it.
    browser.switch_to.frame(frame)
    try:
        wait.until(lambda d: d.execute_script("return document.contentType") == "application/pdf")
    finally:
        browser.switch_to.default_content()
    shot("emulator-preview-pdf")
