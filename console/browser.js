// The file browser: buckets (GCS JSON API bucket list), folders of a bucket (GCS JSON API object list with
// delimiter "/", so folders are the listing's prefixes), breadcrumbs, prefix search, paging, uploads and new
// folders.

import { call, gcs, humanSize } from "./api.js";
import { $, announce, clear, el } from "./dom.js";
import { closeDetail, showDetail } from "./detail.js";
import { uploadFile } from "./uploads.js";

const PAGE_SIZE = 100;
const state = { bucket: null, prefix: "", search: "", pageToken: null, listing: 0 };

export function currentBucket() {
  return state.bucket;
}

export async function showBuckets() {
  const list = clear($("buckets"));
  let buckets = [];
  try {
    const answer = await call("GET", gcs.buckets());
    buckets = (answer.items || []).map((b) => b.name);
  } catch (error) {
    announce(`Could not list buckets: ${error.message}`, true);
  }
  if (buckets.length === 0) list.append(el("li", {}, "No buckets yet."));
  for (const name of buckets) {
    list.append(
      el("li", {}, el("button", { type: "button", dataset: { bucket: name }, onclick: () => openBucket(name) }, name)),
    );
  }
  if (!state.bucket && buckets.length > 0) await openBucket(buckets[0]);
}

export async function openBucket(name) {
  state.bucket = name;
  for (const button of $("buckets").querySelectorAll("button")) {
    button.setAttribute("aria-current", String(button.dataset.bucket === name));
  }
  await openFolder("");
}

export async function openFolder(prefix) {
  state.prefix = prefix;
  state.search = "";
  $("search").value = "";
  closeDetail();
  renderBreadcrumbs();
  await list(false);
}

function renderBreadcrumbs() {
  const crumbs = clear($("breadcrumbs"));
  const parts = state.prefix.split("/").filter((p) => p !== "");
  const items = [{ label: state.bucket, prefix: "" }];
  let path = "";
  for (const part of parts) {
    path += part + "/";
    items.push({ label: part, prefix: path });
  }
  items.forEach((item, i) => {
    const last = i === items.length - 1;
    crumbs.append(
      el(
        "li",
        {},
        last
          ? el("span", { "aria-current": "page" }, item.label)
          : el("button", { type: "button", class: "link", onclick: () => openFolder(item.prefix) }, item.label),
      ),
    );
  });
}

// Lists the current folder (and search prefix); `more` appends the next page.
export async function list(more) {
  if (!state.bucket) return;
  const ticket = ++state.listing;
  if (!more) state.pageToken = null;
  const prefix = state.prefix + state.search;
  let page;
  try {
    page = await call("GET", gcs.list(state.bucket, prefix, more ? state.pageToken : null, PAGE_SIZE));
  } catch (error) {
    announce(`Could not list ${state.bucket}/${prefix}: ${error.message}`, true);
    return;
  }
  if (ticket !== state.listing) return; // A newer listing (typing in the search box) superseded this one.
  const rows = $("object-rows");
  if (!more) clear(rows);
  for (const folder of page.prefixes || []) {
    const label = folder.slice(state.prefix.length).replace(/\/$/, "");
    rows.append(
      el(
        "tr",
        { dataset: { prefix: folder } },
        el(
          "td",
          {},
          el("button", { type: "button", class: "link", onclick: () => openFolder(folder), "aria-label": `Folder ${label}` }, "📁 " + label),
        ),
        el("td", { class: "size" }, "—"),
        el("td", { class: "wide" }, "folder"),
        el("td", { class: "wide" }, ""),
      ),
    );
  }
  for (const item of page.items || []) {
    // A folder's own placeholder object ("photos/") is the folder, not an entry in it.
    if (item.name === state.prefix) continue;
    const label = item.name.slice(state.prefix.length);
    rows.append(
      el(
        "tr",
        { dataset: { name: item.name } },
        el("td", {}, el("button", { type: "button", class: "link", onclick: () => select(item.name) }, label)),
        el("td", { class: "size" }, humanSize(item.size)),
        el("td", { class: "wide" }, item.contentType || ""),
        el("td", { class: "wide" }, item.updated ? new Date(item.updated).toLocaleString() : ""),
      ),
    );
  }
  state.pageToken = page.nextPageToken || null;
  $("more").hidden = !state.pageToken;
  const count = rows.children.length;
  $("list-status").textContent = count === 0 ? "This folder is empty." : `${count} entr${count === 1 ? "y" : "ies"}${state.pageToken ? " (more available)" : ""}.`;
}

function select(name) {
  for (const row of $("object-rows").children) row.classList.toggle("selected", row.dataset.name === name);
  showDetail(state.bucket, name, () => list(false));
}

// Uploads every file into the current folder, three at a time, each with its own progress bar.
export async function uploadAll(files) {
  if (!state.bucket) {
    announce("Choose a bucket first.", true);
    return;
  }
  const bucket = state.bucket;
  const queue = Array.from(files).map((file) => ({ file, name: state.prefix + file.name, row: uploadRow(file) }));
  const worker = async () => {
    for (let job = queue.shift(); job; job = queue.shift()) await uploadOne(bucket, job);
  };
  await Promise.all([worker(), worker(), worker()]);
  await list(false);
}

function uploadRow(file) {
  const progress = el("progress", { max: "100", value: "0", "aria-label": `Upload progress of ${file.name}` });
  const stateText = el("span", { class: "upload-state" }, "waiting");
  const row = el("li", { dataset: { file: file.name } }, el("span", { class: "upload-name" }, file.name), stateText, progress);
  $("uploads").append(row);
  return { row, progress, stateText };
}

async function uploadOne(bucket, { file, name, row }) {
  row.stateText.textContent = "starting";
  let interruptions = 0;
  try {
    await uploadFile(bucket, name, file, (sent, total, note) => {
      const percent = total === 0 ? 100 : Math.floor((sent / total) * 100);
      row.progress.value = percent;
      row.row.dataset.percent = String(percent);
      row.stateText.textContent = note || `${percent}% of ${humanSize(total)}`;
      if (note.startsWith("connection interrupted")) row.row.dataset.interruptions = String(++interruptions);
    });
    row.row.classList.add("done");
    row.row.dataset.state = "done";
    row.stateText.textContent = `uploaded (${humanSize(file.size)})`;
  } catch (error) {
    row.row.classList.add("failed");
    row.row.dataset.state = "failed";
    row.stateText.textContent = `failed: ${error.message}`;
    announce(`Upload of ${file.name} failed: ${error.message}`, true);
  }
}

// A folder is a zero-byte object whose name ends in "/" (what GCS's console creates), so it shows before anything
// is uploaded into it.
async function createFolder(event) {
  event.preventDefault();
  const name = $("folder-name").value.trim().replace(/^\/+|\/+$/g, "");
  if (!name) return;
  const folder = state.prefix + name + "/";
  try {
    await call("POST", gcs.insertEmpty(state.bucket, folder), { body: "", headers: { "Content-Type": "application/x-directory" } });
    $("folder-form").hidden = true;
    $("folder-name").value = "";
    announce(`Created folder ${name}.`);
    await list(false);
  } catch (error) {
    announce(`Could not create folder ${name}: ${error.message}`, true);
  }
}

function wire() {
  let typing = null;
  $("search").addEventListener("input", () => {
    clearTimeout(typing);
    typing = setTimeout(() => {
      state.search = $("search").value;
      list(false);
    }, 200);
  });
  $("more").addEventListener("click", () => list(true));
  $("refresh").addEventListener("click", () => list(false));
  $("upload-button").addEventListener("click", () => $("file-input").click());
  $("file-input").addEventListener("change", (event) => {
    const files = Array.from(event.target.files);
    event.target.value = "";
    if (files.length) uploadAll(files);
  });
  $("new-folder").addEventListener("click", () => {
    $("folder-form").hidden = false;
    $("folder-name").focus();
  });
  $("folder-cancel").addEventListener("click", () => {
    $("folder-form").hidden = true;
    $("new-folder").focus();
  });
  $("folder-form").addEventListener("submit", createFolder);
  const zone = $("dropzone");
  // The whole panel takes drops, so a file dropped next to the zone is not opened by the browser instead.
  const panel = $("objects-panel");
  panel.addEventListener("dragover", (event) => {
    event.preventDefault();
    zone.classList.add("over");
  });
  panel.addEventListener("dragleave", () => zone.classList.remove("over"));
  panel.addEventListener("drop", (event) => {
    event.preventDefault();
    zone.classList.remove("over");
    if (event.dataTransfer && event.dataTransfer.files.length) uploadAll(event.dataTransfer.files);
  });
}

wire();
