// Starts the console: asks the server whether a key is needed (GET /console/api/session), signs in, and switches
// between the file browser and the rules playground.

import { APIError, call, session } from "./api.js";
import { $, announce } from "./dom.js";
import { showBuckets } from "./browser.js";
import { initRules } from "./rules.js";

async function probe() {
  return call("GET", "/console/api/session");
}

function showTab(name) {
  for (const tab of ["files", "rules"]) {
    $(tab).hidden = tab !== name;
    $(`tab-${tab}`).setAttribute("aria-pressed", String(tab === name));
  }
}

async function enter() {
  $("signin").hidden = true;
  $("sign-out").hidden = session.open;
  $("mode").textContent = session.open
    ? "Emulator mode: this server needs no key."
    : "Signed in with an admin key.";
  showTab("files");
  await showBuckets();
}

async function start() {
  let info;
  try {
    info = await probe();
  } catch (error) {
    // A key from an earlier sign-in that the server no longer accepts.
    if (error instanceof APIError && error.status === 401 && session.key) {
      session.key = null;
      info = await probe().catch(() => null);
    }
    if (!info) {
      announce(`The server did not answer: ${error.message}`, true);
      return;
    }
  }
  session.open = !info.signInRequired;
  if (info.admin) {
    await enter();
    return;
  }
  $("files").hidden = true;
  $("rules").hidden = true;
  $("signin").hidden = false;
  $("admin-key").focus();
}

$("signin-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const input = $("admin-key");
  session.key = input.value.trim();
  input.value = "";
  $("signin-error").textContent = "";
  try {
    const info = await probe();
    if (!info.admin) throw new Error("this key is not an admin key");
    await enter();
    announce("Signed in.");
  } catch (error) {
    session.key = null;
    $("signin-error").textContent = `Sign-in failed: ${error.message}`;
    input.focus();
  }
});

$("sign-out").addEventListener("click", () => {
  session.key = null;
  location.reload();
});

$("tab-files").addEventListener("click", () => showTab("files"));
$("tab-rules").addEventListener("click", () => showTab("rules"));

initRules();
start();
