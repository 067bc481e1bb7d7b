// Uploads through the v0 API's resumable protocol (X-Goog-Upload-*, as the Firebase JS SDK sends it): a session is
// started, the file is sent in chunks, and after a dropped connection or a 5xx the session is queried for the bytes
// the server holds and the upload goes on from there. The protocol answers every chunk with 200, unlike the GCS
// JSON API's 308, which a browser may take for a redirect.

import { authHeaders, errorMessage, v0 } from "./api.js";

// A multiple of the server's 256 KiB granularity; a dropped connection costs at most one chunk.
const CHUNK_BYTES = 8 * 1024 * 1024;
const MAX_RETRIES = 8;

function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

// One XMLHttpRequest (fetch reports no upload progress). Resolves with {status, headers(name), text}; rejects
// with a TypeError-like object on a network failure.
function send(method, url, headers, body, onProgress) {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open(method, url);
    for (const [name, value] of Object.entries(authHeaders(headers))) xhr.setRequestHeader(name, value);
    if (onProgress) xhr.upload.onprogress = (e) => onProgress(e.loaded);
    xhr.onload = () =>
      resolve({ status: xhr.status, header: (n) => xhr.getResponseHeader(n), text: xhr.responseText });
    xhr.onerror = () => reject(new Error("connection lost"));
    xhr.onabort = () => reject(new Error("aborted"));
    xhr.send(body);
  });
}

async function failure(result) {
  const response = new Response(result.text, { status: result.status });
  return new Error(await errorMessage(response));
}

// Uploads `file` as `bucket`/`name`; `onProgress(bytesSent, total, note)` as it goes. Resolves with the object's
// v0 metadata.
export async function uploadFile(bucket, name, file, onProgress) {
  const total = file.size;
  const start = await send(
    "POST",
    `${v0.bucket(bucket)}?uploadType=resumable&name=${encodeURIComponent(name)}`,
    {
      "Content-Type": "application/json",
      "X-Goog-Upload-Protocol": "resumable",
      "X-Goog-Upload-Command": "start",
      "X-Goog-Upload-Header-Content-Length": String(total),
      "X-Goog-Upload-Header-Content-Type": file.type || "application/octet-stream",
    },
    JSON.stringify({ name, contentType: file.type || "application/octet-stream" }),
  );
  if (start.status !== 200) throw await failure(start);
  const url = start.header("X-Goog-Upload-URL");
  if (!url) throw new Error("the server started no upload session");

  let offset = 0;
  let retries = 0;
  onProgress(0, total, "");
  for (;;) {
    const end = Math.min(offset + CHUNK_BYTES, total);
    const last = end === total;
    let result;
    try {
      result = await send(
        "POST",
        url,
        {
          "X-Goog-Upload-Protocol": "resumable",
          "X-Goog-Upload-Command": last ? "upload, finalize" : "upload",
          "X-Goog-Upload-Offset": String(offset),
        },
        file.slice(offset, end),
        (loaded) => onProgress(offset + loaded, total, ""),
      );
    } catch (error) {
      result = null;
    }
    if (result && result.status === 200) {
      retries = 0;
      if (last) {
        onProgress(total, total, "");
        return JSON.parse(result.text || "{}");
      }
      offset = end;
      continue;
    }
    // A 4xx other than an offset mismatch is final; anything else (a dropped connection, 5xx, 429, an offset the
    // server does not hold) is resumed from what the server says it has.
    if (result && result.status >= 400 && result.status < 500 && result.status !== 429 && result.status !== 400) {
      throw await failure(result);
    }
    retries += 1;
    if (retries > MAX_RETRIES) {
      throw result ? await failure(result) : new Error("connection lost; gave up after retries");
    }
    onProgress(offset, total, `connection interrupted; resuming (attempt ${retries})`);
    await sleep(Math.min(250 * 2 ** (retries - 1), 8000));
    let status;
    try {
      status = await send("POST", url, { "X-Goog-Upload-Protocol": "resumable", "X-Goog-Upload-Command": "query" }, null);
    } catch (_) {
      continue; // Still unreachable: wait longer.
    }
    if (status.status !== 200) {
      if (status.status >= 400 && status.status < 500 && status.status !== 429) throw await failure(status);
      continue;
    }
    if (status.header("X-Goog-Upload-Status") === "final") {
      // The last chunk got through before the answer was lost.
      const metadata = await fetch(v0.object(bucket, name), { headers: authHeaders(), cache: "no-store" });
      if (!metadata.ok) throw new Error(await errorMessage(metadata));
      onProgress(total, total, "");
      return metadata.json();
    }
    const received = Number(status.header("X-Goog-Upload-Size-Received"));
    if (!Number.isFinite(received) || received < 0 || received > total) {
      throw new Error("the server reported an impossible upload offset");
    }
    offset = received;
    onProgress(offset, total, `resuming at ${offset} bytes`);
  }
}
