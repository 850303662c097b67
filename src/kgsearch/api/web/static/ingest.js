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
    for (const p of result.problems || []) parts.push(el("p", { class: "warning" }, (p.path || p.source || "") + ": " + (p.reason || JSON.stringify(p))));
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

  // While a job runs: the project's extraction queue and rejections so far.
  function live(status) {
    if (!status) return null;
    const rejected = Object.entries(status.rejected || {});
    return el("div", { id: "live" },
      el("p", { class: "muted" }, "Project extraction now: " +
        Object.entries(status.counts || {}).map(([k, v]) => k + " " + v).join(" · ")),
      rejected.length ? el("p", { class: "muted" }, "Rejected so far: " + rejected.map(([r, n]) => r + " " + n).join(" · ")) : null);
  }

  function watch(out, job) {
    clearTimeout(polling);
    const draw = (j, status) => {
      append(clear(out), [
        el("h2", {}, "Job ", el("code", {}, j.id)),
        el("p", {}, "state ", el("strong", { id: "job-state", class: "state-" + j.state }, j.state),
          j.finished_at ? " · finished " + j.finished_at : " · started " + j.started_at),
        counters(j.progress || {}),
        j.error ? el("p", { class: "error", role: "alert" }, (j.error.error || j.error).message || JSON.stringify(j.error)) : null,
        j.state === "running" ? live(status) : null,
        report(j.result),
        j.state === "done" ? el("p", {}, el("a", { href: "#/search" }, "Search what was ingested →")) : null]);
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

  async function submit(form, out) {
    const documents = [];
    const text = form.querySelector("#ingest-text").value;
    if (text.trim()) documents.push({ text, title: form.querySelector("#ingest-title").value.trim() || "pasted text" });
    for (const file of form.querySelector("#ingest-files").files) {
      documents.push({ text: await file.text(), title: file.name });
    }
    if (!documents.length) {
      clear(out).appendChild(el("p", { class: "error", role: "alert" }, "Paste some text or choose files first."));
      return;
    }
    const body = { documents };
    const extractor = form.querySelector("#extractor").value;
    if (extractor) body.extractor = extractor;
    const domain = form.querySelector("#domain").value.trim();
    if (domain) body.domain = domain;
    clear(out).appendChild(el("p", { class: "muted" }, "Sending " + documents.length + " document(s)…"));
    try {
      watch(out, await api("POST", "/api/documents", body));
    } catch (e) {
      clear(out).appendChild(errorBox(e));
    }
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
        el("label", { for: "ingest-files" }, "Files (plain text, Markdown, HTML…)"),
        el("input", { id: "ingest-files", type: "file", multiple: true, accept: ".txt,.md,.markdown,.html,.htm,.csv,.json,.jsonl,text/*" }),
        el("label", { for: "ingest-title" }, "Or paste text — title"),
        el("input", { id: "ingest-title", placeholder: "title" }),
        el("label", { for: "ingest-text", class: "sr" }, "Text"),
        el("textarea", { id: "ingest-text", rows: "8", placeholder: "Paste a document here" }),
        el("div", { class: "row options" },
          el("label", {}, "Extractor ", el("select", { id: "extractor" },
            [["", "server default"], ["spacy", "spaCy (offline)"], ["llm", "LLM"], ["none", "none (store only)"]].map(([v, l]) => el("option", { value: v }, l)))),
          el("label", {}, "Domain ", el("input", { id: "domain", size: "14", placeholder: "default" }))),
        el("button", { type: "submit" }, "Ingest"));
      const out = el("section", { id: "job", class: "panel", "aria-live": "polite" });
      form.addEventListener("submit", (event) => {
        event.preventDefault();
        submit(form, out);
      });
      append(root, [form, out]);
    },
  };
})();
