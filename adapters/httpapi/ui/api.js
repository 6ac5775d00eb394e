// The API client: JSON over fetch, with the API token (when the server
// asks for one) kept in sessionStorage and sent as a bearer token.
const tokenKey = "nomarr-token";

export class HTTPError extends Error {
  constructor(status, msg) { super(msg); this.status = status; }
}

function headers(extra) {
  const h = Object.assign({Accept: "application/json"}, extra || {});
  const t = sessionStorage.getItem(tokenKey);
  if (t) h.Authorization = "Bearer " + t;
  return h;
}

async function call(method, path, data) {
  const init = {method, headers: headers(data === undefined ? {} : {"Content-Type": "application/json"}), credentials: "same-origin"};
  if (data !== undefined) init.body = JSON.stringify(data);
  const r = await fetch(path, init);
  let body = null;
  try { body = await r.json(); } catch (_) { /* not JSON */ }
  if (r.status === 401) askToken();
  if (!r.ok) throw new HTTPError(r.status, (body && body.error) || r.statusText);
  return body;
}

export const get = path => call("GET", path);
export const post = (path, body) => call("POST", path, body);

function askToken() {
  const f = document.getElementById("auth");
  f.hidden = false;
  f.onsubmit = e => {
    e.preventDefault();
    sessionStorage.setItem(tokenKey, document.getElementById("tok").value);
    location.reload();
  };
}

// el builds an element; text is set with textContent only (paths and tags
// are data, never markup).
export function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v == null || v === false) continue;
    if (k === "class") e.className = v;
    else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v === true ? "" : v);
  }
  for (const k of kids.flat()) {
    if (k == null) continue;
    e.append(k instanceof Node ? k : document.createTextNode(String(k)));
  }
  return e;
}

export function showError(err) {
  document.getElementById("err").textContent = err ? String(err.message || err) : "";
}

// label turns a score key into words: "happy_musicnn_mood_happy" → "happy (mood_happy)".
export function scoreLabel(k) {
  const [cls, head] = k.split("_musicnn_");
  return head && cls !== head ? cls + " (" + head + ")" : cls;
}

export const fmt = x => (Math.round(x * 1000) / 1000).toFixed(3);
