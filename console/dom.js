// Small DOM helpers. Every text from the server (object names, metadata, rules) goes in as text nodes, never as
// markup: object names are untrusted input.

export function el(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
    else if (name === "dataset") Object.assign(node.dataset, value);
    else node.setAttribute(name, value === true ? "" : String(value));
  }
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

export function $(id) {
  return document.getElementById(id);
}

export function clear(node) {
  while (node.firstChild) node.firstChild.remove();
  return node;
}

// A short message for screen readers and sighted users alike (the element is a polite live region).
export function announce(text, isError = false) {
  const toast = $("toast");
  toast.textContent = text;
  toast.classList.toggle("error", isError);
  clearTimeout(announceTimer);
  announceTimer = setTimeout(() => {
    if (toast.textContent === text) toast.textContent = "";
  }, 8000);
}
let announceTimer = null;

// Asks before something irreversible; resolves true when confirmed. A modal <dialog> traps focus and closes on
// Escape, so the keyboard path is the browser's own.
export function confirmAction(text, confirmLabel) {
  const dialog = $("confirm");
  $("confirm-text").textContent = text;
  $("confirm-ok").textContent = confirmLabel;
  dialog.returnValue = "";
  dialog.showModal();
  $("confirm-cancel").focus();
  return new Promise((resolve) => {
    dialog.addEventListener("close", () => resolve(dialog.returnValue === "ok"), { once: true });
  });
}
