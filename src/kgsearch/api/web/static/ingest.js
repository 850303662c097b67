// Ingest page: upload files or paste text, pick extractor and domain, watch the job.
"use strict";

(function () {
  const { api, el, append, clear, fmt, errorBox, can, pages } = window.KG;

  const POLL_MS = 500;
  let polling = null;

  function counters(progress) {
    const keys = ["documents", "documents_total", "chunks", "entities", "relationships", "prompt_tokens", "completion_tokens", "cost_usd"];
    return el("dl", { class: "fields counters" }, keys.filter((k) => progress[k] !== undefined && progress[k] !== null)
      .map((k) => [el("dt", {}, k.replace(/_/g, " ")), el("dd", { "data-counter": k }, fmt(progress[k], 4))]));
  }

  function report(result) {
    if (!result) return null;
    const ex = result.extraction || (result.processed !== undefined ? result : null);
    const parts = [el("h3", {}, "Result")];
    if (result.documents !== undefined) {
      parts.push(el("p", {}, fmt(result.documents) + " document(s), " + fmt(result.unchanged) + " unchanged, " +
        fmt(result.chunks) + " chunk(s), " + fmt(result.queued) + " queued for extraction."));
    }
    const problems = result.problems || [];
    if (problems.length) {
      parts.push(el("h4", {}, "Not ingested"));
      parts.push(el("ul", { class: "problems" }, problems.map((p) =>
        el("li", { class: "warning" }, el("strong", {}, p.path || p.source || ""), ": " + (p.reason || JSON.stringify(p))))));
    }
    if (ex) {
      parts.push(el("p", { id: "extracted" }, "Extracted " + fmt(ex.extracted) + " of " + fmt(ex.processed) + " chunk(s): " +
        fmt(ex.entities) + " entities, " + fmt(ex.relationships) + " relationships; " + fmt(ex.failed) + " failed, " + fmt(ex.dead) + " dead."));
      const rejected = Object.entries(ex.rejected || {});
      parts.push(el("h4", {}, "Rejected"));
      parts.push(rejected.length ? el("ul", { id: "rejections" }, rejected.map(([reason, n]) => el("li", {}, reason + ": " + n)))
        : el("p", { class: "muted" }, "Nothing rejected."));
      for (const e of ex.errors || []) parts.push(el("p", { class: "error" }, e));
    }
    return el("div", {}, parts);
  }

  // While a job runs: the project's extraction queue, and what this job rejected so far
  // (the project's rejections less those it had when the job started).
  function live(status, before) {
    if (!status) return null;
    const earlier = (before && before.rejected) || {};
    const rejected = Object.entries(status.rejected || {})
      .map(([r, n]) => [r, n - (earlier[r] || 0)]).filter(([, n]) => n > 0);
    return el("div", { id: "live" },
      el("p", { class: "muted" }, "Project extraction now: " +
        Object.entries(status.counts || {}).map(([k, v]) => k + " " + v).join(" · ")),
      rejected.length ? el("p", { class: "muted" }, "Rejected so far: " + rejected.map(([r, n]) => r + " " + n).join(" · ")) : null);
  }

  function watch(out, job, before) {
    clearTimeout(polling);
    const draw = (j, status) => {
      append(clear(out), [
        el("h2", {}, "Job ", el("code", {}, j.id)),
        el("p", {}, "state ", el("strong", { id: "job-state", class: "state-" + j.state }, j.state),
          j.finished_at ? " · finished " + j.finished_at : " · started " + j.started_at),
        counters(j.progress || {}),
        j.error ? el("p", { class: "error", role: "alert" }, (j.error.error || j.error).message || JSON.stringify(j.error)) : null,
        j.state === "running" ? live(status, before) : null,
        report(j.result),
        j.state === "done" ? el("p", { class: "row" }, el("a", { href: "#/search" }, "Search what was ingested →"),
          el("a", { href: "#/documents" }, "See the documents →"), el("a", { href: "#/ask" }, "Ask about them →")) : null]);
    };
    const tick = async () => {
      let j, status;
      try {
        [j, status] = await Promise.all([
          api("GET", "/api/jobs/" + encodeURIComponent(job.id)),
          api("GET", "/api/extraction/status").catch(() => null),
        ]);
      } catch (e) {
        out.appendChild(errorBox(e));
        return;
      }
      draw(j, status);
      if (j.state === "running") polling = setTimeout(tick, POLL_MS);
    };
    draw(job);
    polling = setTimeout(tick, POLL_MS);
  }

  // Files go as files (multipart): the server reads PDF, HTML, DOCX, Markdown and text
  // with the readers of `kgsearch ingest`, and refuses what it cannot read, with the reason.
  async function submit(form, out) {
    const body = new FormData();
    const files = form.querySelector("#ingest-files").files;
    for (const file of files) body.append("files", file, file.name);
    const text = form.querySelector("#ingest-text").value;
    if (text.trim()) {
      body.append("text", text);
      body.append("title", form.querySelector("#ingest-title").value.trim() || "pasted text");
    }
    const count = files.length + (text.trim() ? 1 : 0);
    if (!count) {
      clear(out).appendChild(el("p", { class: "error", role: "alert" }, "Paste some text or choose files first."));
      return;
    }
    const extractor = form.querySelector("#extractor").value;
    if (extractor) body.append("extractor", extractor);
    const domain = form.querySelector("#domain").value.trim();
    if (domain) body.append("domain", domain);
    out.hidden = false;
    clear(out).appendChild(el("p", { class: "muted" }, "Sending " + count + " document(s)…"));
    try {
      const before = await api("GET", "/api/extraction/status").catch(() => null);
      watch(out, await api("POST", "/api/documents/upload", body), before);
    } catch (e) {
      const problems = e.details && e.details.problems;
      clear(out).append(problems && problems.length
        ? el("p", { class: "error", role: "alert" }, "Nothing was ingested: no file could be read (" + e.status + ").")
        : errorBox(e), refused(problems));
    }
  }

  function refused(problems) {
    if (!problems || !problems.length) return "";
    return el("ul", { id: "refused" }, problems.map((p) => el("li", {}, el("strong", {}, p.path), ": " + p.reason)));
  }

  pages.ingest = {
    title: "Ingest",
    leave() {
      clearTimeout(polling);
    },
    async show(root) {
      const form = el("form", { id: "ingest-form", class: "panel ingest" },
        el("h1", {}, "Ingest documents"),
        can("write") ? null : el("p", { class: "warning" }, "This key lacks the write scope: ingesting will be refused."),
        el("label", { for: "ingest-files" }, "Files (PDF, HTML, DOCX, Markdown, reStructuredText, text)"),
        el("input", { id: "ingest-files", type: "file", multiple: true, accept: ".pdf,.html,.htm,.docx,.md,.markdown,.rst,.txt,.text" }),
        el("label", { for: "ingest-title" }, "Or paste text — title"),
        el("input", { id: "ingest-title", placeholder: "title" }),
        el("label", { for: "ingest-text", class: "sr" }, "Text"),
        el("textarea", { id: "ingest-text", rows: "4", placeholder: "Paste a document here" }),
        el("div", { class: "row options" },
          el("label", {}, "Extractor ", el("select", { id: "extractor" },
            [["", "server default"], ["spacy", "spaCy (offline)"], ["llm", "LLM"], ["none", "none (store only)"]].map(([v, l]) => el("option", { value: v }, l)))),
          el("label", {}, "Domain ", el("input", { id: "domain", size: "14", placeholder: "default" }))),
        el("button", { type: "submit" }, "Ingest"));
      // hidden until a job starts: an empty bordered panel says nothing (issue 35, #6)
      const out = el("section", { id: "job", class: "panel", "aria-live": "polite", hidden: true });
      form.addEventListener("submit", (event) => {
        event.preventDefault();
        submit(form, out);
      });
      append(root, [form, out]);
    },
  };
})();
