// Status page: embedding and extraction lifecycles, failures with a retry button.
"use strict";

(function () {
  const { api, el, clear, fmt, errorBox, toast, can, pages } = window.KG;

  const REFRESH_MS = 5000;
  let timer = null;

  function kv(rows) {
    return el("dl", { class: "fields" }, rows.filter(([, v]) => v !== undefined)
      .map(([k, v]) => [el("dt", {}, k), el("dd", {}, v === null ? "–" : typeof v === "number" ? fmt(v, 3) : String(v))]));
  }

  function embeddingPanel(s, failures, refresh) {
    const rows = s.rows.map((r) => el("tr", {}, [r.kind, r.total, r.pending, r.embedded, r.failed, r.dead].map((v) => el("td", {}, fmt(v)))));
    const retry = el("button", { type: "button", id: "retry-embeddings", disabled: !can("write") || !(s.failed + s.dead) }, "Retry failed and dead");
    retry.addEventListener("click", async () => {
      try {
        const r = await api("POST", "/api/embeddings/retry", { dead: true });
        toast("Re-queued " + r.requeued + " row(s) for embedding.");
      } catch (e) {
        toast(e.message);
      }
      refresh();
    });
    return el("section", { class: "panel", id: "embedding-status", "aria-labelledby": "emb-h" },
      el("h2", { id: "emb-h" }, "Embeddings"),
      kv([["model", s.model], ["dims", s.dims], ["embedded", fmt(s.percent_embedded, 1) + " %"], ["total", s.total],
        ["pending", s.pending], ["failed", s.failed], ["dead", s.dead], ["stale", s.stale],
        ["failure rate", fmt(s.failure_rate, 3)], ["mean ms per text", s.mean_latency_ms_per_text]]),
      el("div", { class: "scroll" }, el("table", {}, el("thead", {}, el("tr", {}, ["kind", "total", "pending", "embedded", "failed", "dead"].map((h) => el("th", {}, h)))), el("tbody", {}, rows))),
      el("h3", {}, "Failures"),
      failures.length ? el("ul", { class: "failures", id: "embedding-failures" }, failures.map((f) =>
        el("li", {}, el("span", { class: "kind" }, f.kind), " ", f.kind === "object" ? window.KG.objectLink(f.id) : f.id,
          " · " + f.status + " after " + f.attempts + " attempt(s)", el("pre", { class: "error-text" }, f.last_error || "")))) : el("p", { class: "muted" }, "None."),
      retry);
  }

  function extractionPanel(s, refresh) {
    const retry = el("button", { type: "button", id: "retry-extraction", disabled: !can("write") || !Object.keys(s.failures || {}).length }, "Retry failed and dead chunks");
    retry.addEventListener("click", async () => {
      try {
        const r = await api("POST", "/api/extraction/retry", { dead: true });
        const job = await api("POST", "/api/extraction/run", {});
        toast("Re-queued " + r.requeued + " chunk(s); extraction job " + job.id + " started.");
      } catch (e) {
        toast(e.message);
      }
      refresh();
    });
    const failures = Object.entries(s.failures || {});
    return el("section", { class: "panel", id: "extraction-status", "aria-labelledby": "ext-h" },
      el("h2", { id: "ext-h" }, "Extraction"),
      kv(Object.entries(s.counts || {}).map(([k, v]) => ["chunks " + k, v]).concat([
        ["entities", s.entities], ["relationships", s.relationships], ["prompt tokens", s.prompt_tokens],
        ["completion tokens", s.completion_tokens], ["cost (USD)", s.cost_usd]])),
      // no empty "Extractors" heading before anything was extracted (issue 35, #6)
      Object.keys(s.extractors || {}).length ? [el("h3", {}, "Extractors"), kv(Object.entries(s.extractors))] : null,
      el("h3", {}, "Rejected"),
      Object.keys(s.rejected || {}).length ? kv(Object.entries(s.rejected)) : el("p", { class: "muted" }, "Nothing rejected."),
      el("h3", {}, "Failures"),
      failures.length ? el("ul", { class: "failures", id: "extraction-failures" }, failures.map(([chunk, error]) =>
        el("li", {}, el("code", {}, chunk), el("pre", { class: "error-text" }, error)))) : el("p", { class: "muted" }, "None."),
      retry);
  }

  async function draw(out) {
    let emb, ext, failures, overview;
    try {
      [emb, ext, failures, overview] = await Promise.all([
        api("GET", "/api/embeddings/status"), api("GET", "/api/extraction/status"),
        api("GET", "/api/explore/embedding-failures"), api("GET", "/api/explore/overview")]);
    } catch (e) {
      clear(out).appendChild(errorBox(e));
      return;
    }
    const refresh = () => draw(out);
    clear(out).append(
      el("section", { class: "panel", id: "counts" }, el("h2", {}, "Project " + overview.project),
        el("p", { class: "muted" }, "kgsearch " + window.KG.state.session.version),
        kv(Object.entries(overview.counts)), el("p", { class: "muted" }, "Object types: " + (overview.object_types.join(", ") || "none"))),
      el("div", { class: "status-grid" }, embeddingPanel(emb, failures, refresh), extractionPanel(ext, refresh)),
      el("p", { class: "muted" }, "Updated " + new Date().toLocaleTimeString() + "; refreshes every " + REFRESH_MS / 1000 + " s."));
  }

  pages.status = {
    title: "Status",
    leave() {
      clearInterval(timer);
    },
    async show(root) {
      const out = el("div", { id: "status-out" });
      root.append(el("h1", {}, "Status"), out);
      await draw(out);
      clearInterval(timer);
      timer = setInterval(() => {
        if (document.activeElement && document.activeElement.tagName === "BUTTON") return;
        draw(out);
      }, REFRESH_MS);
    },
  };
})();
