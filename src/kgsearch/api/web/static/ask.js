// Ask page: a question answered from the graph (POST /api/ask, streamed as server-sent
// events), each citation [E1] [R2] [S3] a link to its object, relationship or passage
// (with the global recipe, [C1] a link to its community: map-reduce over the reports),
// the context on demand; offline (--no-llm) when the key may not call the model or the
// server has none. Also the small Relationship and Passage pages citations lead to.
"use strict";

(function () {
  const { api, ApiError, el, append, clear, fmt, objectLink, errorBox, can, pages, authHeaders } = window.KG;

  const RECIPES = ["", "hybrid_rrf", "multi_hop", "local", "global", "communities", "mix", "naive", "chunks"];
  // the status of an error that arrives inside the event stream (its response was a 200)
  const STATUS = { invalid_request: 400, forbidden: 403, not_found: 404, budget_exceeded: 429,
    provider_error: 502, missing_credentials: 502, store_error: 503 };
  const CITE = /\[((?:[CERS]\d+)(?:\s*[,;]\s*[CERS]\d+)*)\]/g;

  function refHref(ref) {
    if (ref.kind === "object") return "#/object/" + encodeURIComponent(ref.id);
    if (ref.kind === "relationship") return "#/relationship/" + encodeURIComponent(ref.id);
    if (ref.kind === "community") return "#/community/" + encodeURIComponent(ref.id);
    return "#/passage/" + encodeURIComponent(ref.id);
  }

  // The answer's text with each known citation as a link (text nodes only, no markup).
  function cited(text, refs) {
    const byCite = {};
    for (const r of refs) byCite[r.cite] = r;
    const out = [];
    let last = 0;
    for (const m of text.matchAll(CITE)) {
      out.push(text.slice(last, m.index));
      const labels = m[1].split(/\s*[,;]\s*/);
      out.push("[");
      labels.forEach((label, i) => {
        if (i) out.push(", ");
        const ref = byCite[label];
        out.push(ref ? el("a", { href: refHref(ref), class: "cite cite-" + ref.kind, title: ref.text, "data-cite": label }, label) : label);
      });
      out.push("]");
      last = m.index + m[0].length;
    }
    out.push(text.slice(last));
    return out;
  }

  // A model's answer with light markdown: "# heading" lines and **bold** runs become
  // <strong> around text nodes (nothing is parsed as HTML); the rest stays as written.
  function formatted(text, refs) {
    const out = [];
    text.split("\n").forEach((line, i) => {
      if (i) out.push("\n");
      const heading = /^\s{0,3}#{1,6}\s+(.*?)[\s#]*$/.exec(line);
      if (heading) out.push(el("strong", { class: "answer-heading" }, bolded(heading[1], refs)));
      else out.push(...bolded(line, refs));
    });
    return out;
  }

  function bolded(line, refs) {
    const out = [];
    line.split(/\*\*(.+?)\*\*/).forEach((part, i) => {
      if (i % 2) out.push(el("strong", {}, cited(part, refs)));
      else if (part) out.push(...cited(part, refs));
    });
    return out;
  }

  function references(refs) {
    if (!refs.length) return el("p", { class: "muted" }, "No references.");
    return el("ol", { id: "references", class: "references" }, refs.map((r) =>
      el("li", { class: r.cited ? "cited" : "uncited", "data-cite": r.cite },
        el("a", { href: refHref(r), class: "cite cite-" + r.kind }, r.cite), " ",
        el("span", { class: "kind kind-" + (r.kind === "object" ? "graph" : r.kind === "chunk" ? "text" : r.kind) },
          r.kind === "chunk" ? "passage" : r.kind), " ",
        el("span", { class: "ref-text" }, r.text),
        r.cited ? null : el("span", { class: "muted" }, " (in the context, not cited)"))));
  }

  // How a global answer was made: the reports it read, the map calls, what was dropped.
  function globalHow(g, offline) {
    const reports = fmt(g.communities) + " community report" + (g.communities === 1 ? "" : "s");
    if (g.map !== "llm") return "Global search over " + reports + ": their most important points" + (offline ? ", no model asked." : ", then reduced by the model.");
    const dropped = g.map_failed ? " (" + fmt(g.map_failed) + " dropped)" : "";
    return "Global search over " + reports + ": " + fmt(g.map_calls) + " map call" + (g.map_calls === 1 ? "" : "s") + dropped + ", " + fmt(g.points) + " key points, one reduce.";
  }

  function rendered(answer) {
    const meta = answer.metadata || {};
    const how = meta.global ? globalHow(meta.global, answer.offline) + (answer.offline ? "" : " Answered by " + (answer.model || "the chat model") + (answer.cached ? " (from the cache)" : "") + ".")
      : answer.offline
      ? "Answered offline (no model): the passages' best sentences and the top facts, each cited."
      : "Answered by " + (answer.model || "the chat model") + (answer.cached ? " (from the cache)" : "") +
        (answer.usage && answer.usage.prompt_tokens ? " · " + fmt(answer.usage.prompt_tokens) + " + " + fmt(answer.usage.completion_tokens || 0) + " tokens" : "");
    return [
      el("p", { id: "answer-how", class: "muted" }, how),
      ((meta.warnings) || []).map((w) => el("p", { class: "warning" }, w)),
      el("h2", {}, "References"),
      references(answer.references || []),
      el("details", { id: "context" }, el("summary", {}, "Context sent to the model (" + fmt(answer.context.length) + " characters)"),
        el("pre", { class: "context" }, answer.context)),
    ];
  }

  // POST /api/ask with stream: true; calls onText(piece) as the model writes and
  // resolves with the final answer (or rejects with an ApiError).
  async function streamAsk(body, onText) {
    let res;
    try {
      res = await fetch("/api/ask", {
        method: "POST",
        headers: Object.assign({ "Content-Type": "application/json", Accept: "text/event-stream" }, authHeaders()),
        body: JSON.stringify(Object.assign({ stream: true }, body)),
      });
    } catch (e) {
      throw new ApiError(0, "network", "the server did not answer (" + e.message + ")");
    }
    if (!res.ok) {
      let data = null;
      try { data = await res.json(); } catch (e) { data = null; }
      const err = (data && data.error) || {};
      throw new ApiError(res.status, err.code || "error", err.message || res.statusText, err.details);
    }
    const reader = res.body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, { stream: true });
      let cut;
      while ((cut = buffer.indexOf("\n\n")) >= 0) {
        const block = buffer.slice(0, cut);
        buffer = buffer.slice(cut + 2);
        let event = "message";
        let data = "";
        for (const line of block.split("\n")) {
          if (line.startsWith("event: ")) event = line.slice(7);
          else if (line.startsWith("data: ")) data += line.slice(6);
        }
        const payload = data ? JSON.parse(data) : null;
        if (event === "text") onText(payload);
        else if (event === "answer") return payload;
        else if (event === "error") {
          const err = (payload && payload.error) || {};
          throw new ApiError(STATUS[err.code] || 500, err.code || "error", err.message || "the answer failed", err.details);
        }
      }
    }
    throw new ApiError(0, "network", "the answer stream ended early");
  }

  function noModel(e) {
    return e instanceof ApiError && e.status === 400 && /no chat model is configured/.test(e.message);
  }

  async function run(form, out) {
    const question = form.querySelector("#question").value.trim();
    if (!question) return;
    const body = { query: question };
    const recipe = form.querySelector("#ask-recipe").value;
    if (recipe) body.recipe = recipe;
    const useModel = form.querySelector("#use-model");
    body.llm = Boolean(useModel && useModel.checked);
    const params = new URLSearchParams({ q: question });
    if (recipe) params.set("recipe", recipe);
    if (!body.llm) params.set("llm", "0");
    history.replaceState(null, "", "#/ask?" + params.toString());
    const text = el("div", { id: "answer-text", class: "answer-text", "aria-busy": "true" });
    const rest = el("div", { id: "answer-rest" });
    append(clear(out), [el("h2", {}, "Answer"), text, rest]);
    let streamed = "";
    const onText = (piece) => {
      streamed += piece;
      text.textContent = streamed;
    };
    let answer;
    try {
      answer = await streamAsk(body, onText);
    } catch (e) {
      if (!noModel(e)) {
        text.removeAttribute("aria-busy");
        clear(text).appendChild(errorBox(e));
        return;
      }
      // no model on this server: answer offline, and say so
      if (useModel) useModel.checked = false;
      rest.appendChild(el("p", { class: "warning", id: "no-model" }, "No chat model is configured on this server: answered offline (--no-llm)."));
      try {
        answer = await streamAsk(Object.assign({}, body, { llm: false }), onText);
      } catch (e2) {
        clear(text).appendChild(errorBox(e2));
        return;
      }
    }
    text.removeAttribute("aria-busy");
    // a reference the answer's text cites is cited, whatever its flag says (the offline
    // answer lists its sources under the facts)
    const inText = new Set();
    for (const m of answer.answer.matchAll(CITE)) for (const c of m[1].split(/\s*[,;]\s*/)) inText.add(c);
    answer.references = (answer.references || []).map((r) => Object.assign({}, r, { cited: r.cited || inText.has(r.cite) }));
    append(clear(text), formatted(answer.answer, answer.references));
    append(rest, rendered(answer));
  }

  pages.ask = {
    title: "Ask",
    async show(root, arg, params) {
      const modelAllowed = can("llm");
      const form = el("form", { id: "ask-form", class: "panel ask-form" },
        el("h1", {}, "Ask"),
        el("div", { class: "row" },
          el("label", { for: "question", class: "sr" }, "Question"),
          el("input", { id: "question", type: "search", required: true, maxlength: "800",
            placeholder: "Ask a question about your documents…", value: params.get("q") || "" }),
          el("button", { type: "submit" }, "Ask")),
        el("div", { class: "row options" },
          el("label", {}, "Recipe ", el("select", { id: "ask-recipe" },
            RECIPES.map((r) => el("option", { value: r, selected: r === (params.get("recipe") || "") }, r || "default")))),
          el("label", { title: modelAllowed ? "" : "this key lacks the llm scope: answers are offline" },
            el("input", { id: "use-model", type: "checkbox", checked: modelAllowed && params.get("llm") !== "0", disabled: !modelAllowed }),
            " Use the chat model"),
          modelAllowed ? null : el("span", { class: "muted" }, "offline answers (the key lacks the llm scope)")));
      const out = el("section", { id: "answer", class: "panel answer", "aria-live": "polite" });
      form.addEventListener("submit", (event) => {
        event.preventDefault();
        run(form, out);
      });
      root.append(form, out);
      out.appendChild(el("p", { class: "muted" }, "The answer cites what it rests on: [E1] objects, [R1] relationships, [S1] passages; with the global recipe, [C1] communities (their reports are map-reduced). Click a citation to open it."));
      form.querySelector("#question").focus();
      if (params.get("q")) run(form, out);
    },
  };

  // A relationship a citation leads to: its ends (linked by name), type and text.
  pages.relationship = {
    title: "Relationship",
    async show(root, id) {
      const r = await api("GET", "/api/graph/relationships/" + encodeURIComponent(id));
      const ends = await Promise.all([r.source_id, r.target_id].map((o) =>
        api("GET", "/api/graph/objects/" + encodeURIComponent(o)).catch(() => null)));
      const name = (o, fallback) => (o && (o.properties.name || o.key)) || fallback;
      const chunks = (r.source_chunks || []).map((c) => el("li", {}, el("a", { href: "#/passage/" + encodeURIComponent(c) }, c)));
      root.appendChild(el("section", { id: "relationship", class: "panel" },
        el("h1", {}, "Relationship"),
        el("p", { class: "triple", id: "triple" },
          objectLink(r.source_id, name(ends[0], r.source_id)), " —", el("span", { class: "type" }, r.type), "→ ",
          objectLink(r.target_id, name(ends[1], r.target_id))),
        r.description ? el("p", { class: "description" }, r.description) : null,
        el("dl", { class: "fields" },
          [["id", r.id], ["label", r.label || ""], ["weight", fmt(r.weight)], ["created", r.created_at]]
            .filter(([, v]) => v !== "").map(([k, v]) => [el("dt", {}, k), el("dd", {}, v)])),
        chunks.length ? [el("h2", {}, "Passages it was extracted from"), el("ul", {}, chunks)] : null));
    },
  };

  // A passage (chunk) a citation leads to: its text, document and section.
  pages.passage = {
    title: "Passage",
    async show(root, id) {
      const c = await api("GET", "/api/chunks/" + encodeURIComponent(id));
      const section = c.metadata && typeof c.metadata.section === "string" ? c.metadata.section : "";
      root.appendChild(el("section", { id: "passage", class: "panel" },
        el("h1", {}, "Passage"),
        el("p", { class: "muted" },
          c.source_id ? ["from ", el("a", { href: "#/document/" + encodeURIComponent(c.source_id), id: "passage-doc" }, c.source_id)] : "no document",
          section ? " · " + section : "", " · position " + c.position),
        el("p", { class: "chunk", id: "passage-text" }, c.text)));
    },
  };
})();
