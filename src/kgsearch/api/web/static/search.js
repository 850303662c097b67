// Search page: the query form, result cards per kind, and the explain panel.
"use strict";

(function () {
  const { api, el, clear, fmt, json, objectLink, errorBox, can, pages, state } = window.KG;

  const RECIPES = [
    "", "hybrid_rrf", "hybrid_mmr", "relationships", "objects_typed", "chunks", "multi_hop",
    "expand", "naive", "local", "global", "hybrid", "mix", "mentions",
  ];

  function select(id, options, chosen, attrs) {
    return el("select", Object.assign({ id, name: id }, attrs || {}),
      options.map(([value, label]) => el("option", { value, selected: value === chosen }, label)));
  }

  function legs(foundBy) {
    return el("ul", { class: "legs", "aria-label": "found by" },
      (foundBy || []).map((f) => el("li", { class: "leg", title: "rank " + f.rank + ", score " + fmt(f.score, 4) },
        f.leg, " ", el("span", { class: "muted" }, "#" + f.rank + " · " + fmt(f.score, 3)))));
  }

  function shown(v) {
    if (typeof v === "string") return v;
    if (Array.isArray(v) && v.every((x) => typeof x === "string")) return v.join(", ");
    return JSON.stringify(v);
  }

  function fields(map) {
    const entries = Object.entries(map || {}).filter(([k]) => !k.startsWith("_"));
    if (!entries.length) return null;
    return el("dl", { class: "fields" }, entries.map(([k, v]) =>
      [el("dt", {}, k), el("dd", {}, shown(v))]));
  }

  // Names of objects by id: those of the results, then one bounded read for the rest
  // (relationship ends, explain hits outside the fused list).
  async function resolveNames(names, ids) {
    const missing = [...new Set(ids)].filter((id) => id && !names[id]).slice(0, 100);
    if (!missing.length) return names;
    try {
      const g = await api("POST", "/api/explore/subgraph", { ids: missing, depth: 0, limit: missing.length });
      for (const n of g.nodes) names[n.id] = n.name;
    } catch (e) {
      // none of them is an object any more: the ids stay
    }
    return names;
  }

  // Rows not embedded yet are found by keywords only: say so above the results (issue
  // 35, #17). The project's share is read at most every 15 s.
  let embedded = { at: -Infinity, report: null };
  async function notEmbedded() {
    if (performance.now() - embedded.at > 15000) {
      embedded = { at: performance.now(), report: await api("GET", "/api/embeddings/status").catch(() => null) };
    }
    const r = embedded.report;
    if (!r || r.percent_embedded >= 100) return null;
    return el("p", { class: "warning", id: "not-embedded" },
      fmt(100 - r.percent_embedded, r.percent_embedded > 99 ? 1 : 0) + " % of this project's rows are not embedded yet: until they are, " +
      "search finds them by their words only (BM25), not by meaning. See the Status page.");
  }

  function card(r, index, top, names) {
    // relevance as the CLI shows it: relative to the best hit of the list
    const relevance = top > 0 ? r.score / top : 0;
    const head = el("div", { class: "card-head" },
      el("span", { class: "kind kind-" + r.type }, r.type === "graph" ? "object" : r.type),
      el("span", { class: "score", title: "fused score " + fmt(r.score, 4) + " (relevance: relative to the top hit)" },
        "relevance " + relevance.toFixed(2)));
    const body = [];
    if (r.type === "graph") {
      head.appendChild(el("h3", {}, objectLink(r.id, r.name || r.key)));
      head.appendChild(el("span", { class: "type" }, r.object_type));
      body.push(fields(r.fields));
      if (r.text) body.push(el("details", {}, el("summary", {}, "embedded text"), el("pre", { class: "embedded" }, r.text)));
      body.push(el("p", { class: "actions" },
        el("a", { href: "#/graph/" + encodeURIComponent(r.id), class: "button" }, "Graph")));
    } else if (r.type === "relationship") {
      head.appendChild(el("h3", {}, r.triplet_text || r.relationship_type));
      body.push(el("p", { class: "triple" },
        objectLink(r.source_id, names[r.source_id] || "source"), " —", el("span", { class: "type" }, r.relationship_type), "→ ",
        objectLink(r.target_id, names[r.target_id] || "target")));
      body.push(fields(r.properties));
    } else {
      head.appendChild(el("h3", {}, "text " + (r.source_id ? "from " + r.source_id : "") + (r.section ? " · " + r.section : "")));
      body.push(el("p", { class: "snippet" }, r.snippet || r.text || ""));
    }
    body.push(legs(r.found_by));
    return el("article", { class: "card", "data-kind": r.type, "data-id": r.id, tabindex: "-1", "aria-posinset": index + 1 },
      head, body);
  }

  function timings(meta, roundTrip) {
    const t = (meta && meta.executionTime) || {};
    return el("p", { class: "latency" },
      "this search: ", el("strong", {}, fmt(t.totalMs, 1) + " ms"), " on the server, ",
      fmt(roundTrip, 1) + " ms round trip · ",
      Object.entries(t).filter(([k]) => k !== "totalMs").map(([k, v]) => k.replace(/Ms$/, "") + " " + fmt(v, 1) + " ms").join(" · "));
  }

  function explainPanel(ex, names) {
    const label = (key) => {
      const kind = key.split(":")[0];
      const id = key.split(":").slice(1).join(":");
      if (names[id]) return names[id] + " (" + kind + ")";
      return kind + " " + (id.length > 14 ? id.slice(0, 8) + "…" : id);
    };
    const t = (ex.metadata && ex.metadata.executionTime) || {};
    const legMs = ex.leg_ms || {};
    const legTables = Object.entries(ex.legs || {}).map(([leg, hits]) =>
      el("div", { class: "leg-table", "data-leg": leg },
        el("h4", {}, leg, " ", el("span", { class: "muted" }, hits.length + " hits" +
          (legMs[leg] !== undefined ? " · " + fmt(legMs[leg], 1) + " ms" : ""))),
        el("table", {},
          el("thead", {}, el("tr", {}, el("th", {}, "rank"), el("th", {}, "hit"), el("th", { class: "num" }, "score"))),
          el("tbody", {}, hits.map((h) => el("tr", {}, el("td", {}, h.rank), el("td", { title: h.key }, label(h.key)),
            el("td", { class: "num" }, fmt(h.score, 4))))))));
    const fused = el("ol", { class: "fused" }, (ex.fused || []).map((f) =>
      el("li", {}, el("span", { class: "kind kind-" + f.type }, f.type === "graph" ? "object" : f.type), " ", names[f.id] || f.id, " ",
        el("span", { class: "muted" }, fmt(f.score, 4) + " · " + (f.found_by || []).map((l) => l.leg + " #" + l.rank).join(", ")))));
    const stages = el("table", { class: "stages" },
      el("tbody", {}, Object.entries(t).map(([k, v]) => el("tr", {}, el("th", {}, k.replace(/Ms$/, "")), el("td", {}, fmt(v, 2) + " ms")))));
    const statements = Object.entries(ex.statements || {}).map(([stage, list]) =>
      el("details", {}, el("summary", {}, stage + " · " + list.length + " SQL"),
        list.map((s) => el("pre", { class: "sql" }, s.sql + "\n-- " + JSON.stringify(s.params).slice(0, 400)))));
    return el("section", { id: "explain", class: "panel explain", "aria-label": "explain" },
      el("h2", {}, "Explain"),
      el("div", { class: "explain-grid" },
        el("div", {}, el("h3", {}, "Time per stage"),
          el("p", { class: "muted small" }, "of the explain run: a second run of the same search that also records each stage's SQL, so its times differ from the line above"),
          stages,
          el("h3", {}, "Fused order"), fused),
        el("div", { class: "legs-grid" }, legTables)),
      statements.length ? el("div", {}, el("h3", {}, "Statements"), statements) : null);
  }

  function form(params) {
    const types = (state.overview && state.overview.object_types) || [];
    return el("form", { id: "search-form", class: "search-form", role: "search" },
      el("div", { class: "row" },
        el("label", { for: "q", class: "sr" }, "Query"),
        el("input", { id: "q", name: "q", type: "search", required: true, maxlength: "800",
          placeholder: "Ask the graph… (press / to focus)", value: params.get("q") || "", autofocus: true }),
        el("button", { type: "submit" }, "Search")),
      el("div", { class: "row options" },
        el("label", {}, "Recipe ", select("recipe", RECIPES.map((r) => [r, r || "default"]), params.get("recipe") || "")),
        el("label", {}, "Results ", select("result-types", [["both", "everything"], ["graph", "graph only"], ["text", "text only"]], params.get("types") || "both")),
        el("label", {}, "Object type ", select("type-filter", [["", "any"]].concat(types.map((t) => [t, t])), params.get("type") || "")),
        el("label", {}, "Type hint ", el("input", { id: "type-hint", list: "type-list", size: "10", value: params.get("hint") || "" }),
          el("datalist", { id: "type-list" }, types.map((t) => el("option", { value: t })))),
        el("label", {}, "Limit ", el("input", { id: "limit", type: "number", min: "1", max: "100", value: params.get("limit") || "10" })),
        can("debug") ? el("label", {}, el("input", { id: "explain-on", type: "checkbox", checked: params.get("explain") !== "0" }), " Explain") : null));
  }

  async function run(out, form) {
    const q = form.querySelector("#q").value.trim();
    if (!q) return;
    const body = { query: q, limit: Number(form.querySelector("#limit").value) || 10,
      resultTypes: form.querySelector("#result-types").value };
    const recipe = form.querySelector("#recipe").value;
    if (recipe) body.recipe = recipe;
    const typeFilter = form.querySelector("#type-filter").value;
    if (typeFilter) body.filters = { object_types: [typeFilter] };
    const hint = form.querySelector("#type-hint").value.trim();
    if (hint) body.typeHint = hint;
    const explainOn = form.querySelector("#explain-on");
    const params = new URLSearchParams({ q });
    if (recipe) params.set("recipe", recipe);
    if (typeFilter) params.set("type", typeFilter);
    if (hint) params.set("hint", hint);
    history.replaceState(null, "", "#/search?" + params.toString());
    clear(out).appendChild(el("p", { class: "muted", role: "status" }, "Searching…"));
    const t0 = performance.now();
    let res;
    try {
      res = await api("POST", "/api/search/unified", body);
    } catch (e) {
      clear(out).appendChild(errorBox(e));
      return;
    }
    const roundTrip = performance.now() - t0;
    clear(out);
    out.appendChild(timings(res.metadata, roundTrip));
    for (const w of (res.metadata && res.metadata.warnings) || []) out.appendChild(el("p", { class: "warning" }, w));
    const unembedded = await notEmbedded();
    if (unembedded) out.appendChild(unembedded);
    const names = {};
    for (const r of res.results) names[r.id] = r.name || r.triplet_text || (r.snippet || "").slice(0, 60);
    await resolveNames(names, res.results.filter((r) => r.type === "relationship").flatMap((r) => [r.source_id, r.target_id]));
    const top = res.results.reduce((m, r) => Math.max(m, r.score), 0);
    const list = el("div", { id: "results", class: "results" },
      res.results.length ? res.results.map((r, i) => card(r, i, top, names)) : el("p", { class: "muted" }, "No results."));
    const layout = el("div", { class: "search-layout" }, list);
    out.appendChild(layout);
    if (explainOn && explainOn.checked) {
      try {
        const ex = await api("POST", "/api/search/explain", body);
        const legIds = Object.values(ex.legs || {}).flat().map((h) => h.key)
          .filter((k) => k.startsWith("object:")).map((k) => k.slice("object:".length));
        await resolveNames(names, legIds);
        layout.appendChild(explainPanel(ex, names));
      } catch (e) {
        layout.appendChild(errorBox(e));
      }
    }
  }

  pages.search = {
    title: "Search",
    async show(root, arg, params) {
      const f = form(params);
      const out = el("div", { id: "search-out", "aria-live": "polite" });
      f.addEventListener("submit", (event) => {
        event.preventDefault();
        run(out, f);
      });
      root.append(el("h1", { class: "sr" }, "Search"), f, out);
      if (!state.overview) {
        window.KG.overview().then((o) => {
          if (!o || !f.isConnected) return;
          const filter = f.querySelector("#type-filter");
          const list = f.querySelector("#type-list");
          for (const t of o.object_types) {
            filter.appendChild(el("option", { value: t }, t));
            list.appendChild(el("option", { value: t }));
          }
        });
      }
      f.querySelector("#q").focus();
      if (params.get("q")) run(out, f);
    },
  };
})();
