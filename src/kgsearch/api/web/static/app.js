// kgsearch web UI: the shell (API calls, the key, routing, DOM helpers).
// Every piece of data is put into the page as text (textContent / text nodes),
// never as markup; the server's Content-Security-Policy allows only its own scripts.
"use strict";

(function () {
  const KEY = "kgsearch.key";
  const pages = {};
  const state = { session: null, overview: null };

  class ApiError extends Error {
    constructor(status, code, message, details) {
      super(message);
      this.status = status;
      this.code = code;
      this.details = details || {};
    }
  }

  function key() {
    return sessionStorage.getItem(KEY);
  }

  function authHeaders() {
    const k = key();
    return k ? { Authorization: "Bearer " + k } : {};
  }

  async function api(method, path, body) {
    const headers = Object.assign({ Accept: "application/json" }, authHeaders());
    const init = { method, headers };
    if (body instanceof FormData) {
      init.body = body; // multipart: the browser sets the boundary
    } else if (body !== undefined) {
      headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    let res;
    try {
      res = await fetch(path, init);
    } catch (e) {
      throw new ApiError(0, "network", "the server did not answer (" + e.message + ")");
    }
    let data = null;
    try {
      data = await res.json();
    } catch (e) {
      data = null;
    }
    if (!res.ok) {
      const err = (data && data.error) || {};
      const error = new ApiError(res.status, err.code || "error", err.message || res.statusText, err.details);
      if (res.status === 401) showLogin(loginMessage(error));
      throw error;
    }
    return data;
  }

  function loginMessage(error) {
    if (error.status === 401 && key()) {
      return "The API key was not accepted (" + error.message + "). Check the key, or create a new one.";
    }
    return "This server needs an API key.";
  }

  // el("div", {class: "x", onclick: f}, "text", child) — strings become text nodes.
  function el(tag, props, ...children) {
    const node = document.createElement(tag);
    for (const [name, value] of Object.entries(props || {})) {
      if (value === null || value === undefined || value === false) continue;
      if (name.startsWith("on") && typeof value === "function") {
        node.addEventListener(name.slice(2), value);
      } else if (name === "class") {
        node.className = value;
      } else if (name === "text") {
        node.textContent = String(value);
      } else if (name === "value") {
        node.value = value;
      } else if (value === true) {
        node.setAttribute(name, "");
      } else {
        node.setAttribute(name, String(value));
      }
    }
    append(node, children);
    return node;
  }

  function append(node, children) {
    for (const child of children.flat(Infinity)) {
      if (child === null || child === undefined || child === false) continue;
      node.appendChild(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  }

  function clear(node) {
    while (node.firstChild) node.removeChild(node.firstChild);
    return node;
  }

  function fmt(n, digits) {
    if (n === null || n === undefined) return "–";
    if (typeof n !== "number") return String(n);
    return Number.isInteger(n) ? n.toLocaleString("en") : n.toFixed(digits === undefined ? 3 : digits);
  }

  function json(value) {
    return JSON.stringify(value, null, 2);
  }

  function objectLink(id, label) {
    return el("a", { href: "#/object/" + encodeURIComponent(id), class: "objlink" }, label || id);
  }

  function errorBox(error) {
    const text = error instanceof ApiError
      ? error.message + " (" + error.status + " " + error.code + ")"
      : String(error && error.message ? error.message : error);
    return el("p", { class: "error", role: "alert" }, text);
  }

  function toast(text) {
    const box = document.getElementById("toast");
    box.textContent = text;
    box.classList.add("on");
    clearTimeout(toast.timer);
    toast.timer = setTimeout(() => box.classList.remove("on"), 3000);
  }

  // The project overview (object types for the search filters): fetched once, only by
  // the pages that show it (counting a large store takes a moment).
  function overview() {
    if (!state.overviewReady) {
      state.overviewReady = api("GET", "/api/explore/overview").then((o) => (state.overview = o), () => null);
    }
    return state.overviewReady;
  }

  function can(scope) {
    // admin holds every scope (kgsearch.keys.holds)
    const scopes = state.session ? state.session.scopes : [];
    return scopes.indexOf(scope) >= 0 || scopes.indexOf("admin") >= 0;
  }

  // routing: #/page/arg?query
  function parseHash() {
    const raw = location.hash.replace(/^#\/?/, "");
    const [path, query] = raw.split("?");
    const parts = path.split("/");
    const name = parts[0] || "search";
    const arg = parts.length > 1 ? decodeURIComponent(parts.slice(1).join("/")) : null;
    return { name, arg, params: new URLSearchParams(query || "") };
  }

  let current = null;
  // pages reached from another page's links highlight that page in the navigation
  const PARENT = { object: "search", relationship: "ask", passage: "ask", document: "documents", community: "communities" };

  async function route() {
    if (!state.session) return;
    const { name, arg, params } = parseHash();
    const page = pages[name] || pages.search;
    if (current && current.leave) current.leave();
    current = page;
    for (const a of document.querySelectorAll("nav a")) {
      const on = a.dataset.page === (PARENT[name] || name);
      if (on) a.setAttribute("aria-current", "page");
      else a.removeAttribute("aria-current");
    }
    const root = clear(document.getElementById("page"));
    document.title = (page.title || name) + " · kgsearch";
    try {
      await page.show(root, arg, params);
    } catch (e) {
      if (!(e instanceof ApiError && e.status === 401)) root.appendChild(errorBox(e));
    }
  }

  function showLogin(message) {
    state.session = null;
    clear(document.getElementById("page"));
    document.getElementById("who").textContent = "";
    const box = document.getElementById("login");
    box.hidden = false;
    const err = document.getElementById("login-error");
    err.textContent = message || "";
    err.hidden = !message || message === "This server needs an API key.";
    document.getElementById("login-key").focus();
  }

  async function start() {
    try {
      state.session = await api("GET", "/api/explore/session");
    } catch (e) {
      if (!(e instanceof ApiError && e.status === 401)) {
        const login = document.getElementById("login");
        login.hidden = false;
        const err = document.getElementById("login-error");
        err.hidden = false;
        err.textContent = "The server refused this page: " + e.message;
      }
      return;
    }
    document.getElementById("login").hidden = true;
    const s = state.session;
    document.getElementById("who").textContent =
      "project " + s.project + (s.keyless ? " · keyless (local)" : " · key " + s.key_id);
    document.getElementById("logout").hidden = s.keyless;
    route();
  }

  document.addEventListener("DOMContentLoaded", () => {
    document.getElementById("login-form").addEventListener("submit", (event) => {
      event.preventDefault();
      const input = document.getElementById("login-key");
      sessionStorage.setItem(KEY, input.value.trim());
      input.value = "";
      start();
    });
    document.getElementById("logout").addEventListener("click", () => {
      sessionStorage.removeItem(KEY);
      showLogin("");
    });
    window.addEventListener("hashchange", route);
    document.addEventListener("keydown", (event) => {
      const typing = /INPUT|TEXTAREA|SELECT/.test(document.activeElement.tagName);
      if (event.key === "/" && !typing) {
        const q = document.getElementById("q");
        if (q) {
          event.preventDefault();
          q.focus();
        }
      }
    });
    start();
  });

  window.KG = { api, authHeaders, ApiError, el, append, clear, fmt, json, objectLink, errorBox, toast, can, overview, pages, state };
})();
