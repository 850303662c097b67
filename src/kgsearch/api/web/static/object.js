// Object page: properties, description with provenance, relationships in and out,
// mentions, embedding status with the exact embedded text, and communities.
"use strict";

(function () {
  const { api, ApiError, el, fmt, json, objectLink, errorBox, pages } = window.KG;

  // An object's communities (one per level, coarsest first): shown when the server
  // has the route and the object has communities, hidden on 404/405.
  const COMMUNITIES_OF = (id) => "/api/graph/objects/" + encodeURIComponent(id) + "/communities";
  const INTERNAL = new Set(["_chunks", "_provenance", "_extracted", "_summary", "_merged"]);

  function value(v) {
    if (typeof v === "string") return v;
    if (Array.isArray(v) && v.every((x) => typeof x === "string")) return v.join(", ");
    return JSON.stringify(v);
  }

  function table(headers, rows, attrs) {
    return el("div", { class: "scroll" }, el("table", attrs || {},
      el("thead", {}, el("tr", {}, headers.map((h) => el("th", { scope: "col" }, h)))),
      el("tbody", {}, rows)));
  }

  function section(id, title, ...content) {
    return el("section", { id, class: "panel", "aria-labelledby": id + "-h" }, el("h2", { id: id + "-h" }, title), content);
  }

  function properties(o) {
    const entries = Object.entries(o.properties).filter(([k]) => !INTERNAL.has(k) && k !== "description");
    const rows = [["type", o.type], ["key", o.key], ["id", o.id],
      ["labels", o.labels.join(", ")], ["tags", o.tags.join(", ")],
      ["created", o.created_at], ["updated", o.updated_at]].concat(entries.map(([k, v]) => [k, value(v)]));
    return section("props", "Properties",
      el("dl", { class: "fields wide" }, rows.filter(([, v]) => v !== "").map(([k, v]) => [el("dt", {}, k), el("dd", {}, v)])));
  }

  function provenance(o, chunks) {
    const p = o.properties;
    const texts = {};
    for (const c of chunks) texts[c.id] = c;
    const parts = [];
    if (typeof p.description === "string" && p.description) parts.push(el("p", { class: "description" }, p.description));
    else parts.push(el("p", { class: "muted" }, "No description."));
    const prov = p._provenance;
    if (prov && typeof prov === "object") {
      parts.push(el("dl", { class: "fields" }, Object.entries(prov).map(([k, v]) => [el("dt", {}, k), el("dd", {}, value(v))])));
    }
    const contributions = p._chunks && typeof p._chunks === "object" ? Object.entries(p._chunks) : [];
    if (contributions.length) {
      parts.push(el("h3", {}, "What each source chunk said"));
      parts.push(el("ul", { class: "contrib" }, contributions.map(([chunkId, entries]) => {
        const chunk = texts[chunkId];
        return el("li", {},
          el("div", { class: "muted" }, "chunk ", chunkId, chunk && chunk.source_id ? " · source " + chunk.source_id : ""),
          (Array.isArray(entries) ? entries : []).map((e) => el("p", {}, e && e.description ? value(e.description) : value(e))),
          chunk ? el("details", {}, el("summary", {}, "chunk text"), el("p", { class: "chunk" }, chunk.text)) : null);
      })));
    }
    return section("provenance", "Description and provenance", parts);
  }

  function relationships(view) {
    const id = view.object.id;
    const rows = view.relationships.map((rv) => {
      const r = rv.relationship;
      const other = rv.other ? objectLink(rv.other.id, rv.other.name) : el("span", { class: "muted" }, rv.direction === "out" ? r.target_id : r.source_id);
      return el("tr", { "data-direction": rv.direction },
        el("td", {}, rv.direction === "out" ? "→ out" : "← in"),
        el("td", {}, r.type),
        el("td", {}, other, rv.other ? el("span", { class: "type" }, rv.other.type) : null),
        el("td", {}, r.description || r.label || ""),
        el("td", {}, fmt(r.weight, 2)));
    });
    const note = view.relationships_total > view.relationships.length
      ? el("p", { class: "muted" }, "Showing " + view.relationships.length + " of " + view.relationships_total + ".") : null;
    return section("rels", "Relationships (" + view.relationships_total + ")",
      rows.length ? table(["", "type", "other end", "description", "weight"], rows, { class: "rels" }) : el("p", { class: "muted" }, "None."),
      note, el("p", {}, el("a", { class: "button", href: "#/graph/" + encodeURIComponent(id) }, "Open in graph")));
  }

  function mentions(view) {
    return section("mentions", "Mentions (" + view.chunks_total + " chunks)",
      view.chunks.length ? el("ul", { class: "mentions" }, view.chunks.map((c) =>
        el("li", {}, el("div", { class: "muted" }, c.source_id ? "source " + c.source_id + " · " : "", "chunk ", c.id),
          el("p", { class: "chunk" }, c.text)))) : el("p", { class: "muted" }, "No chunk mentions this object."));
  }

  function embedding(o) {
    const e = o.embedding || {};
    const rows = [["status", e.status], ["model", e.model], ["dims", e.dims], ["embedded at", e.embedded_at],
      ["text version", e.text_version], ["attempts", e.attempts], ["last error", e.last_error]]
      .filter(([, v]) => v !== null && v !== undefined && v !== "");
    const stale = e.embedded_text && e.text && e.embedded_text !== e.text;
    return section("embedding", "Embedding",
      el("dl", { class: "fields" }, rows.map(([k, v]) => [el("dt", {}, k), el("dd", { class: k === "status" ? "status-" + v : "" }, String(v))])),
      el("h3", {}, "Exact embedded text"),
      e.embedded_text ? el("pre", { class: "embedded", id: "embedded-text" }, e.embedded_text) : el("p", { class: "muted" }, "Not embedded yet."),
      stale || (!e.embedded_text && e.text) ? [el("h3", {}, stale ? "Current text (changed since; will be re-embedded)" : "Text to embed"),
        el("pre", { class: "embedded" }, e.text)] : null);
  }

  async function communities(root, id) {
    let data;
    try {
      data = await api("GET", COMMUNITIES_OF(id));
    } catch (e) {
      if (e instanceof ApiError && (e.status === 404 || e.status === 405)) return;
      root.appendChild(section("communities", "Communities", errorBox(e)));
      return;
    }
    const items = Array.isArray(data) ? data : (data && (data.communities || data.items)) || [];
    if (!items.length) return;
    root.appendChild(section("communities", "Communities",
      el("ul", {}, items.map((c) => el("li", {},
        el("strong", {}, c.title || c.id || ""), " ",
        el("span", { class: "muted" }, c.level !== undefined ? "level " + c.level : "", c.size ? " · " + c.size + " members" : ""),
        c.summary ? el("p", {}, c.summary) : null)))));
  }

  pages.object = {
    title: "Object",
    async show(root, id) {
      if (!id) {
        root.appendChild(el("p", {}, "Open an object from a search result."));
        return;
      }
      const view = await api("GET", "/api/explore/objects/" + encodeURIComponent(id));
      const o = view.object;
      document.title = o.properties && typeof o.properties.name === "string" ? o.properties.name + " · kgsearch" : document.title;
      root.append(
        el("nav", { class: "crumbs" }, el("button", { type: "button", class: "link", onclick: () => history.back() }, "← back")),
        el("h1", { id: "object-name" }, typeof o.properties.name === "string" && o.properties.name ? o.properties.name : o.key,
          " ", el("span", { class: "type" }, o.type)),
        el("div", { class: "object-grid" },
          el("div", {}, provenance(o, view.chunks), relationships(view), mentions(view)),
          el("div", { id: "object-side" }, properties(o), embedding(o))));
      communities(root.querySelector("#object-side"), id);
    },
  };
})();
