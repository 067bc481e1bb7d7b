// Calls to Silo's public APIs, with the admin key (if any) from sessionStorage: it lives as long as the tab,
// never in a URL, a cookie or localStorage. Which API each feature uses is written down in docs/console.md.

const KEY_NAME = "silo.console.adminKey";

export const session = {
  get key() {
    return sessionStorage.getItem(KEY_NAME);
  },
  set key(value) {
    if (value) sessionStorage.setItem(KEY_NAME, value);
    else sessionStorage.removeItem(KEY_NAME);
  },
  // Set from GET /console/api/session: no key is needed (emulator mode).
  open: false,
};

export class APIError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

export function authHeaders(extra = {}) {
  const headers = { ...extra };
  if (session.key) headers.Authorization = "Bearer " + session.key;
  // Emulator mode: `owner` is the emulator's admin credential (no secret), which the v0 token calls need.
  else if (session.open) headers.Authorization = "Bearer owner";
  return headers;
}

// fetch with the credential; throws APIError with the server's message on a non-2xx answer.
export async function call(method, url, { body, headers = {}, expect = "json" } = {}) {
  const init = { method, headers: authHeaders(headers), cache: "no-store" };
  if (body !== undefined) {
    if (typeof body === "string" || body instanceof Blob) init.body = body;
    else {
      init.body = JSON.stringify(body);
      init.headers["Content-Type"] = "application/json";
    }
  }
  const response = await fetch(url, init);
  if (!response.ok) throw new APIError(response.status, await errorMessage(response));
  if (expect === "json") {
    const text = await response.text();
    return text ? JSON.parse(text) : {};
  }
  return response;
}

export async function errorMessage(response) {
  try {
    const data = await response.json();
    if (data && data.error && data.error.message) return `${response.status}: ${data.error.message}`;
  } catch (_) {
    // Not JSON (an XML or empty answer): the status says enough.
  }
  return `${response.status} ${response.statusText}`;
}

const enc = encodeURIComponent;

// GCS JSON API paths.
export const gcs = {
  // No `project`: with one, the listing keeps that project's buckets only, and the console shows every bucket the
  // server serves (GCS requires the parameter; Silo lists all without it).
  buckets: () => "/storage/v1/b?maxResults=1000",
  list: (bucket, prefix, pageToken, pageSize) => {
    const q = new URLSearchParams({ delimiter: "/", prefix, maxResults: String(pageSize) });
    if (pageToken) q.set("pageToken", pageToken);
    return `/storage/v1/b/${enc(bucket)}/o?${q}`;
  },
  object: (bucket, name) => `/storage/v1/b/${enc(bucket)}/o/${enc(name)}`,
  media: (bucket, name) => `/storage/v1/b/${enc(bucket)}/o/${enc(name)}?alt=media`,
  insertEmpty: (bucket, name) => `/upload/storage/v1/b/${enc(bucket)}/o?uploadType=media&name=${enc(name)}`,
};

// Firebase Storage v0 API paths (uploads, download tokens).
export const v0 = {
  bucket: (bucket) => `/v0/b/${enc(bucket)}/o`,
  object: (bucket, name) => `/v0/b/${enc(bucket)}/o/${enc(name)}`,
  tokenURL: (bucket, name, token) =>
    `${location.origin}/v0/b/${enc(bucket)}/o/${enc(name)}?alt=media&token=${enc(token)}`,
};

export function humanSize(n) {
  if (n === undefined || n === null || n === "") return "";
  let value = Number(n);
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return unit === 0 ? `${value} B` : `${value.toFixed(1)} ${units[unit]}`;
}
