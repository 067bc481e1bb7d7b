// The object panel: fields and metadata (GCS JSON API get and patch), preview and download (the GCS JSON API's
// media, or a v0 download-token URL), delete, and download tokens (the v0 API's create_token / delete_token).

import { authHeaders, call, errorMessage, gcs, humanSize, session, v0 } from "./api.js";
import { $, announce, clear, confirmAction, el } from "./dom.js";

const TOKENS_KEY = "firebaseStorageDownloadTokens";
// Bigger objects are not fetched for a preview; text shows its first part only.
const PREVIEW_MEDIA_LIMIT = 64 * 1024 * 1024;
const PREVIEW_TEXT_BYTES = 256 * 1024;

let current = null; // { bucket, name, object, onChange }
let previewURL = null;

export function closeDetail() {
  $("detail").hidden = true;
  releasePreview();
  current = null;
}

function releasePreview() {
  if (previewURL) URL.revokeObjectURL(previewURL);
  previewURL = null;
  clear($("preview"));
}

export async function showDetail(bucket, name, onChange) {
  let object;
  try {
    object = await call("GET", gcs.object(bucket, name));
  } catch (error) {
    announce(`Could not read ${name}: ${error.message}`, true);
    return;
  }
  current = { bucket, name, object, onChange };
  $("detail").hidden = false;
  $("detail-name").textContent = `${bucket}/${name}`;
  renderFields(object);
  renderMetadata(object);
  renderTokens(object);
  $("detail-heading").focus({ preventScroll: false });
  await renderPreview(object);
}

function renderFields(object) {
  const list = clear($("detail-fields"));
  const rows = [
    ["Size", `${humanSize(object.size)} (${object.size} bytes)`],
    ["Type", object.contentType || "—"],
    ["Created", object.timeCreated ? new Date(object.timeCreated).toLocaleString() : "—"],
    ["Updated", object.updated ? new Date(object.updated).toLocaleString() : "—"],
    ["Generation", object.generation],
    ["Metageneration", object.metageneration],
    ["MD5", object.md5Hash || "—"],
    ["CRC32C", object.crc32c || "—"],
  ];
  for (const [label, value] of rows) list.append(el("dt", {}, label), el("dd", {}, String(value ?? "—")));
}

function customRow(key = "", value = "") {
  const index = $("custom-rows").children.length;
  const keyInput = el("input", { id: `custom-key-${index}`, class: "custom-key", value: key, autocomplete: "off" });
  const valueInput = el("input", { id: `custom-value-${index}`, class: "custom-value", value, autocomplete: "off" });
  const row = el(
    "li",
    {},
    el("div", { class: "field" }, el("label", { for: keyInput.id }, "Key"), keyInput),
    el("div", { class: "field" }, el("label", { for: valueInput.id }, "Value"), valueInput),
    el("button", { type: "button", "aria-label": `Remove field ${key || index + 1}`, onclick: () => row.remove() }, "Remove"),
  );
  $("custom-rows").append(row);
  return keyInput;
}

function renderMetadata(object) {
  for (const field of ["contentType", "cacheControl", "contentDisposition", "contentLanguage"]) {
    $(`meta-${field}`).value = object[field] || "";
  }
  clear($("custom-rows"));
  for (const [key, value] of Object.entries(object.metadata || {})) {
    if (key !== TOKENS_KEY) customRow(key, value);
  }
}

// PATCH sends what changed: a custom key absent from the form is removed with null, the token key is left alone.
async function saveMetadata(event) {
  event.preventDefault();
  if (!current) return;
  const patch = { metadata: {} };
  for (const field of ["contentType", "cacheControl", "contentDisposition", "contentLanguage"]) {
    const value = $(`meta-${field}`).value.trim();
    if (value !== (current.object[field] || "")) patch[field] = value === "" ? null : value;
  }
  const edited = {};
  for (const row of $("custom-rows").children) {
    const key = row.querySelector(".custom-key").value.trim();
    if (key) edited[key] = row.querySelector(".custom-value").value;
  }
  for (const key of Object.keys(current.object.metadata || {})) {
    if (key !== TOKENS_KEY && !(key in edited)) patch.metadata[key] = null;
  }
  Object.assign(patch.metadata, edited);
  try {
    const updated = await call("PATCH", gcs.object(current.bucket, current.name), { body: patch });
    current.object = updated;
    renderFields(updated);
    renderMetadata(updated);
    announce("Metadata saved.");
  } catch (error) {
    announce(`Could not save metadata: ${error.message}`, true);
  }
}

function tokensOf(object) {
  const text = (object.metadata || {})[TOKENS_KEY] || "";
  return text.split(",").filter((t) => t !== "");
}

function renderTokens(object) {
  const list = clear($("tokens"));
  const tokens = tokensOf(object);
  if (tokens.length === 0) list.append(el("li", {}, "No download tokens."));
  for (const token of tokens) {
    const item = el(
        "li",
        { dataset: { tokenSuffix: token.slice(-6) } },
        el("code", {}, `…${token.slice(-6)}`),
        el("button", { type: "button", onclick: () => copyURL(token, item), "aria-label": `Copy download URL of token ending ${token.slice(-6)}` }, "Copy URL"),
        el("button", { type: "button", class: "danger", onclick: () => revokeToken(token), "aria-label": `Revoke token ending ${token.slice(-6)}` }, "Revoke"),
      );
    list.append(item);
  }
}

async function copyURL(token, item) {
  const url = v0.tokenURL(current.bucket, current.name, token);
  try {
    await navigator.clipboard.writeText(url);
    announce("Download URL copied.");
  } catch (_) {
    // No clipboard here (no permission, or not a secure origin): show the URL, selected, to copy by hand. Only on
    // request: the list itself never shows a whole token.
    const field = el("input", { readonly: true, value: url, "aria-label": "Download URL", class: "token-url" });
    item.querySelector(".token-url")?.remove();
    item.append(field);
    field.focus();
    field.select();
  }
}

async function tokenCall(query) {
  const metadata = await call("POST", `${v0.object(current.bucket, current.name)}?${query}`);
  // The v0 answer lists tokens as one comma-joined string; refresh the GCS view the panel shows.
  current.object = await call("GET", gcs.object(current.bucket, current.name));
  renderTokens(current.object);
  return metadata;
}

async function createToken() {
  try {
    await tokenCall("create_token=true");
    announce("Download token created.");
  } catch (error) {
    announce(`Could not create a token: ${error.message}`, true);
  }
}

async function revokeToken(token) {
  if (!(await confirmAction(`Revoke the token ending ${token.slice(-6)}? Its URLs stop working.`, "Revoke"))) return;
  try {
    await tokenCall(`delete_token=${encodeURIComponent(token)}`);
    announce("Download token revoked.");
  } catch (error) {
    announce(`Could not revoke the token: ${error.message}`, true);
  }
}

// Media with the caller's credential: the direct URL when no credential is needed, else fetched into a blob.
async function mediaURL(object, range) {
  if (session.open && !range) return gcs.media(current.bucket, current.name);
  const headers = authHeaders(range ? { Range: range } : {});
  const response = await fetch(gcs.media(current.bucket, current.name), { headers, cache: "no-store" });
  if (!response.ok) throw new Error(await errorMessage(response));
  return response;
}

function previewKind(type) {
  if (!type) return null;
  if (type.startsWith("image/")) return "image";
  if (type.startsWith("video/")) return "video";
  if (type.startsWith("audio/")) return "audio";
  if (type === "application/pdf") return "pdf";
  if (type === "application/json" || type.endsWith("+json")) return "json";
  if (type.startsWith("text/") || type === "application/xml" || type === "application/javascript") return "text";
  return null;
}

async function renderPreview(object) {
  releasePreview();
  const box = $("preview");
  const kind = previewKind((object.contentType || "").split(";")[0].trim().toLowerCase());
  if (!kind) {
    box.append(el("p", {}, "No preview for this type."));
    return;
  }
  const size = Number(object.size);
  try {
    if (kind === "text" || kind === "json") {
      const partial = size > PREVIEW_TEXT_BYTES;
      const response = await mediaURL(object, partial ? `bytes=0-${PREVIEW_TEXT_BYTES - 1}` : "bytes=0-");
      let text = await response.text();
      if (kind === "json" && !partial) {
        try {
          text = JSON.stringify(JSON.parse(text), null, 2);
        } catch (_) {
          // Not valid JSON: show it as it is.
        }
      }
      box.append(el("pre", { "data-preview": kind }, text));
      if (partial) box.append(el("p", { class: "hint" }, `First ${humanSize(PREVIEW_TEXT_BYTES)} shown.`));
      return;
    }
    if (size > PREVIEW_MEDIA_LIMIT && !session.open) {
      box.append(el("p", {}, `Too large to preview (${humanSize(size)}); download it instead.`));
      return;
    }
    let src = await mediaURL(object);
    if (typeof src !== "string") {
      previewURL = URL.createObjectURL(await src.blob());
      src = previewURL;
    }
    const label = `Preview of ${current.name}`;
    if (kind === "image") box.append(el("img", { src, alt: label, "data-preview": "image" }));
    else if (kind === "video") box.append(el("video", { src, controls: true, "aria-label": label, "data-preview": "video" }));
    else if (kind === "audio") box.append(el("audio", { src, controls: true, "aria-label": label, "data-preview": "audio" }));
    else if (kind === "pdf") box.append(el("iframe", { src, title: label, "data-preview": "pdf" }));
  } catch (error) {
    box.append(el("p", { class: "error-text" }, `Preview failed: ${error.message}`));
  }
}

async function download() {
  if (!current) return;
  const leaf = current.name.split("/").pop() || "download";
  const tokens = tokensOf(current.object);
  let href;
  let blobURL = null;
  if (session.open) href = gcs.media(current.bucket, current.name);
  else if (tokens.length > 0) href = v0.tokenURL(current.bucket, current.name, tokens[0]);
  else {
    try {
      const response = await mediaURL(current.object, null);
      blobURL = URL.createObjectURL(await response.blob());
      href = blobURL;
    } catch (error) {
      announce(`Download failed: ${error.message}`, true);
      return;
    }
  }
  const link = el("a", { href, download: leaf, hidden: true });
  document.body.append(link);
  link.click();
  link.remove();
  if (blobURL) setTimeout(() => URL.revokeObjectURL(blobURL), 60000);
}

async function remove() {
  if (!current) return;
  const { bucket, name, onChange } = current;
  if (!(await confirmAction(`Delete ${name}? This cannot be undone.`, "Delete"))) return;
  try {
    await call("DELETE", gcs.object(bucket, name), { expect: "none" });
    announce(`Deleted ${name}.`);
    closeDetail();
    if (onChange) await onChange();
  } catch (error) {
    announce(`Could not delete ${name}: ${error.message}`, true);
  }
}

$("metadata-form").addEventListener("submit", saveMetadata);
$("custom-add").addEventListener("click", () => customRow().focus());
$("token-create").addEventListener("click", createToken);
$("download").addEventListener("click", download);
$("delete").addEventListener("click", remove);
$("detail-close").addEventListener("click", () => {
  closeDetail();
  $("object-rows").querySelector("button")?.focus();
});
$("detail-heading").setAttribute("tabindex", "-1");
