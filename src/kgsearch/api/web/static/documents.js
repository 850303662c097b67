// Documents page: every ingested document with its chunks per extraction status,
// delete (two clicks) and re-extract; one document's sections and chunks with their
// extraction state, what was kept and rejected, and the failures.
"use strict";

(function () {
  const { api, el, append, clear, fmt, errorBox, toast, can, pages } = window.KG;

  // "1 relationship", "2 relationships": a count with its noun in the right number.
  function count(n, one, many) {
    return fmt(n) + " " + (n === 1 ? one : many || one + "s");
  }

  const STATUSES = ["done", "pending", "running", "failed", "dead"];
  const docHref = (id) => "#/document/" + encodeURIComponent(id);
  const docApi = (id) => "/api/documents/" + encodeURIComponent(id).replace(/%2F/g, "/");

  function size(bytes) {
    if (bytes === null || bytes === undefined) return "–";
    if (bytes < 1024) return bytes + " B";
    if (bytes < 1024 * 1024) return (bytes / 1024).toFixed(1) + " KB";
    return (bytes / 1024 / 1024).toFixed(1) + " MB";
  }

  function badges(counts) {
    const entries = STATUSES.filter((s) => counts[s]).map((s) => [s, counts[s]]);
    if (!entries.length) return el("span", { class: "muted" }, "not extracted");
    return el("span", { class: "badges" }, entries.map(([s, n]) => el("span", { class: "badge st-" + s, title: n + " chunk(s) " + s }, s + " " + n)));
  }

  // A button that asks once more before it acts (no browser dialog).
  function confirmButton(label, confirmLabel, action) {
    const button = el("button", { type: "button", class: "danger" }, label);
    let armed = false;
    button.addEventListener("click", async () => {
      if (!armed) {
        armed = true;
        button.textContent = confirmLabel;
        button.classList.add("armed");
        setTimeout(() => {
          armed = false;
          button.textContent = label;
          button.classList.remove("armed");
        }, 4000);
        return;
      }
      button.disabled = true;
      try {
        await action();
      } finally {
        button.disabled = false;
      }
    });
    return button;
  }

  async function remove(doc, onDone) {
    try {
      const r = await api("DELETE", docApi(doc.id));
      toast("Deleted " + (doc.title || doc.id) + ": " + r.chunks + " chunk(s), " + r.objects_deleted + " object(s), " +
        r.relationships_deleted + " relationship(s) no other document supports");
      onDone(r);
    } catch (e) {
      toast("Delete failed: " + e.message);
    }
  }

  function row(doc, onDeleted) {
    const tr = el("tr", { "data-id": doc.id },
      el("td", {}, el("a", { href: docHref(doc.id), class: "doc-title" }, doc.title || doc.id),
        el("div", { class: "muted small" }, doc.id)),
      el("td", {}, doc.format || "–"),
      el("td", { class: "num" }, size(doc.bytes)),
      el("td", { class: "num" }, fmt(doc.chunks)),
      el("td", {}, badges(doc.extraction)),
      el("td", { class: "muted small" }, doc.created_at.replace("T", " ").slice(0, 19)),
      el("td", {}, can("write") ? confirmButton("Delete", "Confirm delete", () => remove(doc, () => { tr.remove(); onDeleted(); })) : null));
    return tr;
  }

  pages.documents = {
    title: "Documents",
    async show(root) {
      const body = el("tbody", {});
      const more = el("button", { type: "button", id: "more-docs", hidden: true }, "More");
      const count = el("span", { class: "muted", id: "doc-count" });
      let shown = 0;
      const setCount = () => { count.textContent = shown + " document(s) shown"; };
      let cursor = null;
      const load = async () => {
        const params = new URLSearchParams({ limit: "50" });
        if (cursor) params.set("cursor", cursor);
        const page = await api("GET", "/api/documents?" + params);
        for (const d of page.items) body.appendChild(row(d, () => { shown -= 1; setCount(); }));
        shown += page.items.length;
        setCount();
        cursor = page.next_cursor;
        more.hidden = !cursor;
      };
      more.addEventListener("click", () => load().catch((e) => root.appendChild(errorBox(e))));
      append(root, [el("section", { class: "panel", id: "documents" },
        el("div", { class: "row" }, el("h1", {}, "Documents"), count,
          el("a", { href: "#/ingest", class: "button right" }, "Upload…")),
        el("div", { class: "scroll" }, el("table", { class: "doc-table" },
          el("thead", {}, el("tr", {}, ["document", "format", "size", "chunks", "extraction", "added", ""].map((h) => el("th", { scope: "col" }, h)))),
          body)),
        more)]);
      await load();
      if (!shown) body.appendChild(el("tr", {}, el("td", { colspan: "7", class: "muted" }, "No documents yet: upload some on the Ingest page.")));
    },
  };

  // --- one document -------------------------------------------------------------------
  function chunkRow(c) {
    const x = c.extraction;
    const rejected = Object.entries(x.rejected || {});
    return el("li", { class: "chunk-item st-" + x.status, "data-id": c.id, "data-status": x.status },
      el("div", { class: "chunk-head" },
        el("span", { class: "muted" }, "#" + c.position), " ",
        el("span", { class: "badge st-" + x.status }, x.status), " ",
        x.status === "done" ? el("span", {}, count(x.entities, "entity", "entities") + " · " + count(x.relationships, "relationship") +
          (x.extractor ? " · " + x.extractor : "")) : null,
        x.attempts ? el("span", { class: "muted" }, " · " + x.attempts + " attempt(s)") : null,
        rejected.length ? el("span", { class: "muted" }, " · rejected " + rejected.map(([r, n]) => r + " " + n).join(", ")) : null),
      x.last_error ? el("details", { class: "chunk-error" }, el("summary", { class: "error" }, "Error: " + x.last_error.split("\n")[0]),
        el("pre", {}, x.last_error)) : null,
      el("p", { class: "chunk" }, c.text));
  }

  function chunkList(view) {
    const groups = [];
    for (const c of view.chunks) {
      const last = groups[groups.length - 1];
      if (last && last.section === c.section) last.chunks.push(c);
      else groups.push({ section: c.section, chunks: [c] });
    }
    return groups.map((g) => el("section", { class: "doc-section" },
      el("h3", {}, g.section || "(no heading)"),
      el("ol", { class: "chunks", start: String(g.chunks[0].position + 1) }, g.chunks.map(chunkRow))));
  }

  function watchJob(job, status, done) {
    const tick = async () => {
      let j;
      try {
        j = await api("GET", "/api/jobs/" + encodeURIComponent(job.id));
      } catch (e) {
        status.textContent = "lost the job: " + e.message;
        return;
      }
      if (j.state === "running") {
        status.textContent = "extracting… " + fmt((j.progress && j.progress.chunks) || 0) + " chunk(s) so far";
        setTimeout(tick, 500);
        return;
      }
      const r = j.result || {};
      status.textContent = j.state === "done"
        ? "Extracted " + fmt(r.extracted) + " of " + count(r.processed, "chunk") + ": " + count(r.entities, "entity", "entities") + ", " +
          count(r.relationships, "relationship") + "; " + fmt(r.failed) + " failed, " + fmt(r.dead) + " dead."
        : "Job " + j.state + (j.error ? ": " + ((j.error.error || j.error).message || "") : "");
      done();
    };
    tick();
  }

  function reextractForm(id, rerender) {
    const status = el("span", { id: "reextract-status", class: "muted", role: "status" });
    const extractor = el("select", { id: "reextract-extractor" },
      [["", "as queued"], ["spacy", "spaCy (offline)"], ["llm", "LLM"]].map(([v, l]) => el("option", { value: v }, l)));
    const button = el("button", { type: "button", id: "reextract" }, "Re-extract");
    button.addEventListener("click", async () => {
      button.disabled = true;
      const body = extractor.value ? { extractor: extractor.value } : {};
      try {
        const job = await api("POST", docApi(id) + "/extract", body);
        watchJob(job, status, () => { button.disabled = false; rerender(status.textContent); });
      } catch (e) {
        button.disabled = false;
        status.textContent = "";
        status.appendChild(errorBox(e));
      }
    });
    return el("div", { class: "row" }, el("label", {}, "Extractor ", extractor), button, status);
  }

  pages.document = {
    title: "Document",
    async show(root, id, params) {
      const offset = Number(params.get("offset") || 0);
      const view = await api("GET", docApi(id) + "?limit=100&offset=" + offset);
      const d = view.document;
      const meta = [["id", d.id], ["format", d.format || "–"], ["size", size(d.bytes)], ["chunks", fmt(d.chunks)],
        ["added", d.created_at.replace("T", " ").slice(0, 19)]];
      const rerender = (message) => {
        pages.document.show(clear(root), id, params).then(() => {
          const s = root.querySelector("#reextract-status");
          if (s && message) s.textContent = message;
        }, (e) => root.appendChild(errorBox(e)));
      };
      const pager = [];
      if (offset > 0) pager.push(el("a", { href: docHref(id) + "?offset=" + Math.max(0, offset - 100), class: "button" }, "← Previous 100"));
      if (offset + view.chunks.length < d.chunks) pager.push(el("a", { href: docHref(id) + "?offset=" + (offset + 100), class: "button", id: "next-chunks" }, "Next 100 →"));
      append(root, [
        el("section", { class: "panel", id: "document" },
          el("p", {}, el("a", { href: "#/documents" }, "← Documents")),
          el("h1", { id: "doc-name" }, d.title || d.id),
          el("dl", { class: "fields" }, meta.map(([k, v]) => [el("dt", {}, k), el("dd", {}, v)])),
          el("p", { id: "doc-extraction" }, "Extraction: ", badges(d.extraction)),
          can("write") ? [reextractForm(id, rerender),
            el("div", { class: "row" }, confirmButton("Delete this document", "Confirm delete", () => remove(d, () => { location.hash = "#/documents"; })))] : null),
        el("section", { class: "panel", id: "sections" },
          el("h2", {}, "Sections (" + view.sections.length + ")"),
          view.sections.length ? el("ol", { class: "section-list" }, view.sections.map((s) => el("li", {}, s || "(no heading)")))
            : el("p", { class: "muted" }, "No headings.")),
        el("section", { class: "panel", id: "chunks" },
          el("h2", {}, "Chunks " + (view.chunks.length ? (offset + 1) + "–" + (offset + view.chunks.length) : "") + " of " + fmt(d.chunks)),
          chunkList(view),
          pager.length ? el("div", { class: "row" }, pager) : null),
      ]);
    },
  };
})();
