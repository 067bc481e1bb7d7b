"""Accessibility and small screens, on the signed-in console that test_console.py left behind: every form control has
a label and every button a name, Tab reaches every visible control, text keeps WCAG AA contrast, the keyboard alone
opens folders and closes dialogs, and at phone width nothing scrolls sideways."""
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import WebDriverWait

from conftest import BUCKET

UNLABELLED = """
return Array.from(document.querySelectorAll("input, select, textarea")).filter((e) => {
  if (e.type === "hidden") return false;
  if (e.getAttribute("aria-label") || e.getAttribute("aria-labelledby")) return false;
  if (e.id && document.querySelector(`label[for="${CSS.escape(e.id)}"]`)) return false;
  return !e.closest("label");
}).map((e) => e.outerHTML.slice(0, 120));
"""

UNNAMED_BUTTONS = """
return Array.from(document.querySelectorAll("button")).filter((b) =>
  !(b.textContent.trim() || b.getAttribute("aria-label") || b.getAttribute("aria-labelledby"))
).map((b) => b.outerHTML.slice(0, 120));
"""

# Marks every control a keyboard user must reach: visible, enabled, not taken out of the tab order.
MARK_CONTROLS = """
let n = 0;
const controls = Array.from(document.querySelectorAll("a[href], button, input, select, textarea, [tabindex]"))
  .filter((e) => !e.disabled && e.getAttribute("tabindex") !== "-1" && e.getClientRects().length > 0
    && getComputedStyle(e).visibility !== "hidden");
for (const e of controls) e.dataset.a11y = String(++n);
return controls.map((e) => e.dataset.a11y);
"""

# The contrast ratio of every visible text against its effective background (WCAG 2.x relative luminance).
LOW_CONTRAST = """
function rgba(text) {
  const m = text.match(/rgba?\\(([^)]+)\\)/);
  if (!m) return [255, 255, 255, 1];
  const p = m[1].split(/[ ,/]+/).filter(Boolean).map(Number);
  return [p[0], p[1], p[2], p.length > 3 ? p[3] : 1];
}
function luminance([r, g, b]) {
  const c = [r, g, b].map((v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; });
  return 0.2126 * c[0] + 0.7152 * c[1] + 0.0722 * c[2];
}
function background(e) {
  for (let n = e; n; n = n.parentElement) {
    const bg = rgba(getComputedStyle(n).backgroundColor);
    if (bg[3] > 0.5) return bg;
  }
  return [255, 255, 255, 1];
}
const bad = [];
const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
for (let t = walker.nextNode(); t; t = walker.nextNode()) {
  if (!t.textContent.trim()) continue;
  const e = t.parentElement;
  if (!e || e.getClientRects().length === 0 || e.closest("[hidden]") || e.disabled) continue;
  const s = getComputedStyle(e);
  if (s.visibility === "hidden" || s.position === "absolute" && s.clip === "rect(0px, 0px, 0px, 0px)") continue;
  const fg = luminance(rgba(s.color));
  const bg = luminance(background(e));
  const ratio = (Math.max(fg, bg) + 0.05) / (Math.min(fg, bg) + 0.05);
  const large = parseFloat(s.fontSize) >= 24 || (parseFloat(s.fontSize) >= 18.66 && Number(s.fontWeight) >= 700);
  if (ratio < (large ? 3 : 4.5)) bad.push(`${ratio.toFixed(2)} ${e.tagName} ${t.textContent.trim().slice(0, 40)}`);
}
return bad;
"""


def tab_through(browser, expected):
    browser.execute_script("document.activeElement && document.activeElement.blur(); window.scrollTo(0, 0);")
    body = browser.find_element(By.TAG_NAME, "body")
    body.send_keys(Keys.TAB)
    reached = []
    for _ in range(len(expected) * 3 + 20):
        mark = browser.execute_script("return document.activeElement && document.activeElement.dataset.a11y || null")
        if mark:
            reached.append(mark)
        browser.switch_to.active_element.send_keys(Keys.TAB)
        if set(expected) <= set(reached):
            break
    return reached


def check_view(browser, name, shot):
    assert browser.execute_script(UNLABELLED) == [], name
    assert browser.execute_script(UNNAMED_BUTTONS) == [], name
    expected = browser.execute_script(MARK_CONTROLS)
    assert len(expected) > 5, name
    reached = tab_through(browser, expected)
    missing = [browser.execute_script(
        "return document.querySelector(`[data-a11y='${arguments[0]}']`).outerHTML.slice(0, 100)", m)
        for m in expected if m not in reached]
    assert missing == [], f"{name}: Tab never reached {missing}"
    assert browser.execute_script(LOW_CONTRAST) == [], name
    shot(f"a11y-{name}")


def press_enter(browser, script, *args):
    """Presses Enter on the element `script` finds, again if the listing re-rendered it meanwhile."""
    def attempt(d):
        element = d.execute_script(script, *args)
        if element is None:
            return False
        try:
            element.send_keys(Keys.ENTER)
            return True
        except StaleElementReferenceException:
            return False
    WebDriverWait(browser, 30).until(attempt)


ROW = ("return Array.from(document.querySelectorAll('#object-rows button'))"
       ".find((b) => b.textContent.trim().endsWith(arguments[0])) || null")


def current_crumb(d):
    return d.execute_script("return document.querySelector('#breadcrumbs [aria-current=page]').textContent")


def test_files_view_with_object_panel(browser, shot):
    # test_console.py left the console in the folder "photos".
    press_enter(browser, ROW, "island.png")
    WebDriverWait(browser, 30).until(lambda d: d.find_element(By.ID, "detail").is_displayed())
    check_view(browser, "files", shot)


def test_rules_view(browser, shot):
    browser.find_element(By.ID, "tab-rules").click()
    WebDriverWait(browser, 30).until(lambda d: d.find_element(By.ID, "rules").is_displayed())
    check_view(browser, "rules", shot)
    browser.find_element(By.ID, "tab-files").click()


def test_keyboard_alone_opens_a_folder_and_closes_a_dialog(browser, shot):
    if browser.find_elements(By.CSS_SELECTOR, "#breadcrumbs button"):
        press_enter(browser, "return document.querySelector('#breadcrumbs button')")
    WebDriverWait(browser, 30).until(lambda d: current_crumb(d) == BUCKET)
    press_enter(browser, ROW, "photos")
    WebDriverWait(browser, 30).until(lambda d: current_crumb(d) == "photos")
    press_enter(browser, ROW, "island.png")
    WebDriverWait(browser, 30).until(lambda d: d.find_element(By.ID, "detail").is_displayed())
    browser.find_element(By.ID, "delete").send_keys(Keys.ENTER)
    WebDriverWait(browser, 30).until(lambda d: d.find_element(By.ID, "confirm").is_displayed())
    # Focus starts on Cancel, the safe choice; Escape closes without deleting.
    assert browser.switch_to.active_element.get_attribute("id") == "confirm-cancel"
    browser.switch_to.active_element.send_keys(Keys.ESCAPE)
    WebDriverWait(browser, 30).until(lambda d: not d.find_element(By.ID, "confirm").is_displayed())
    assert browser.find_elements(By.XPATH, "//*[@id='object-rows']//button[contains(., 'island.png')]")


def test_phone_width(browser, shot):
    browser.set_window_size(390, 844)
    WebDriverWait(browser, 30).until(lambda d: d.execute_script("return window.innerWidth") <= 390)
    for view in ("files", "rules"):
        browser.find_element(By.ID, f"tab-{view}").click()
        WebDriverWait(browser, 30).until(lambda d: d.find_element(By.ID, view).is_displayed())
        overflow = browser.execute_script(
            "return document.documentElement.scrollWidth - document.documentElement.clientWidth")
        assert overflow <= 1, f"{view} scrolls sideways by {overflow}px at 390px"
        shot(f"phone-{view}")
    browser.find_element(By.ID, "tab-files").click()
    browser.set_window_size(1280, 1000)


def test_sign_out_forgets_the_key(browser, shot):
    browser.find_element(By.ID, "sign-out").click()
    WebDriverWait(browser, 30).until(lambda d: d.find_element(By.ID, "signin").is_displayed())
    assert browser.execute_script("return sessionStorage.getItem('silo.console.adminKey')") is None
    shot("signed-out")
