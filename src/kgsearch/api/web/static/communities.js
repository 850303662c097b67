// Communities page: the current build (levels, sizes, modularity, staleness), the
// communities of a level with their report titles, sizes and ratings; one community's
// report with its findings, its parent and children, its members and its subgraph.
"use strict";

(function () {
  const { api, ApiError, el, append, clear, fmt, objectLink, errorBox, toast, can, pages } = window.KG;

  const PAGE = 50;
  const communityHref = (id) => "#/community/" + encodeURIComponent(id);

  function buildButton(root, again) {
    if (!can("write")) return null;
    const status = el("span", { class: "muted", role: "status", id: "build-status" });
    const button = el("button", { type: "button", id: "build" }, again ? "Build again" : "Build communities");
    button.addEventListener("click", async () => {
      button.disabled = true;
      status.textContent = "Building… (seconds to minutes on a large graph)";
      try {
        const r = await api("POST", "/api/communities/build", {});
        toast(r.build ? "Built " + fmt(r.build.communities) + " communities on " + r.build.levels + " level(s)." : (r.reason || "Nothing built."));
        pages.communities.show(clear(root), null, new URLSearchParams()).catch((e) => root.appendChild(errorBox(e)));
      } catch (e) {
        status.textContent = "";
        status.appendChild(errorBox(e));
        button.disabled = false;
      }
    });
    return el("span", {}, button, " ", status);
  }

  function summary(s) {
    const b = s.build;
    return el("dl", { class: "fields", id: "build-summary" },
      [["build", b.id + " (generation " + b.generation + ")"], ["built", (b.created_at || "").replace("T", " ").slice(0, 19)],
        ["objects", fmt(b.nodes) + " (" + fmt(b.isolated) + " in no community)"], ["modularity", fmt(b.modularity, 3)],
        ["reports", fmt(s.reports) + (s.missing_reports ? " (" + fmt(s.missing_reports) + " missing)" : "")]]
        .map(([k, v]) => [el("dt", {}, k), el("dd", {}, v)]));
  }

  pages.communities = {
    title: "Communities",
    async show(root, arg, params) {
      const status = await api("GET", "/api/communities/status");
      const head = el("section", { class: "panel", id: "communities" }, el("div", { class: "row" }, el("h1", {}, "Communities"), buildButton(root, Boolean(status.build))));
      root.appendChild(head);
      if (!status.build) {
        head.appendChild(el("p", { class: "muted", id: "no-communities" },
          "No communities yet: build them here (write scope) or run `kgsearch communities build`."));
        return;
      }
      const levels = Object.keys(status.by_level).map(Number).sort((a, b) => a - b);
      const level = params.get("level") !== null ? Number(params.get("level")) : levels[0];
      const offset = Number(params.get("offset") || 0);
      head.appendChild(summary(status));
      if (status.stale) head.appendChild(el("p", { class: "warning", id: "stale" }, "The graph changed since this build: build again to include the changes."));
      for (const w of status.build.warnings || []) head.appendChild(el("p", { class: "warning" }, w));
      head.appendChild(el("nav", { class: "tabs", "aria-label": "levels", id: "levels" }, levels.map((l) =>
        el("a", { href: "#/communities?level=" + l, "aria-current": l === level ? "page" : null, "data-level": String(l) },
          "level " + l + " · " + fmt(status.by_level[l]) + (l === 0 ? " (coarsest)" : "")))));
      const page = await api("GET", "/api/communities?level=" + level + "&limit=" + PAGE + "&offset=" + offset);
      const rows = page.items.map((c) => el("tr", { "data-id": c.id },
        el("td", {}, el("a", { href: communityHref(c.id), class: "community-title" }, c.title || c.id)),
        el("td", { class: "num" }, fmt(c.size)),
        el("td", { class: "num" }, c.rating === undefined || c.rating === null ? "–" : fmt(c.rating, 1)),
        el("td", { class: "num" }, fmt(c.rank, 1))));
      const pager = [];
      if (offset > 0) pager.push(el("a", { class: "button", href: "#/communities?level=" + level + "&offset=" + Math.max(0, offset - PAGE) }, "← Previous"));
      if (offset + page.items.length < page.total) pager.push(el("a", { class: "button", id: "next-communities", href: "#/communities?level=" + level + "&offset=" + (offset + PAGE) }, "Next →"));
      root.appendChild(el("section", { class: "panel" },
        el("h2", {}, "Level " + level + ": communities " + (page.items.length ? (offset + 1) + "–" + (offset + page.items.length) : "0") + " of " + fmt(page.total) + ", largest first"),
        el("div", { class: "scroll" }, el("table", { class: "doc-table", id: "community-table" },
          el("thead", {}, el("tr", {}, ["report", "members", "rating", "rank"].map((h) => el("th", { scope: "col" }, h)))),
          el("tbody", {}, rows))),
        pager.length ? el("div", { class: "row" }, pager) : null));
    },
  };

  function findings(report, names) {
    if (!report.findings || !report.findings.length) return null;
    return [el("h3", {}, "Findings"), el("ol", { class: "findings" }, report.findings.map((f) =>
      el("li", {}, el("strong", {}, f.summary), f.explanation ? el("p", { class: "muted" }, f.explanation) : null,
        f.objects && f.objects.length ? el("p", { class: "small" }, f.objects.map((o, i) => [i ? ", " : "", objectLink(o, names[o] || o)])) : null,
        f.relationships && f.relationships.length ? el("p", { class: "small" }, f.relationships.map((r, i) =>
          [i ? ", " : "", el("a", { href: "#/relationship/" + encodeURIComponent(r) },
            f.relationships.length === 1 ? "the relationship" : "relationship " + (i + 1))])) : null)))];
  }

  pages.community = {
    title: "Community",
    async show(root, id) {
      let d;
      try {
        d = await api("GET", "/api/communities/" + encodeURIComponent(id) + "?members=500");
      } catch (e) {
        if (e instanceof ApiError && e.status === 404) throw new ApiError(404, "not_found", "no community " + id + " in the current build (it may be from an older one)");
        throw e;
      }
      const c = d.community;
      const r = d.report;
      const names = {};
      for (const m of d.members) names[m.id] = m.name || m.key;
      const byType = {};
      for (const m of d.members) byType[m.type] = (byType[m.type] || 0) + 1;
      append(root, [
        el("section", { class: "panel", id: "community" },
          el("p", {}, el("a", { href: "#/communities?level=" + c.level }, "← Level " + c.level)),
          el("h1", { id: "community-title" }, r ? r.title : c.id),
          el("p", { class: "muted" }, "level " + c.level + " · " + fmt(c.size) + " members · rank " + fmt(c.rank, 1) +
            (r ? " · rating " + fmt(r.rating, 1) + " · " + r.method + " report" + (r.model ? " by " + r.model : "") : "")),
          el("p", { class: "row" },
            el("a", { class: "button", id: "community-graph", href: "#/graph?community=" + encodeURIComponent(c.id) }, "Show its subgraph"),
            c.parent ? el("a", { href: communityHref(c.parent), id: "parent" }, "↑ parent community") : null),
          r ? el("p", { class: "description", id: "report-summary" }, r.summary) : el("p", { class: "muted" }, "No report written yet."),
          r && r.rating_explanation ? el("p", { class: "muted small" }, "Rating: " + r.rating_explanation) : null,
          r ? findings(r, names) : null,
          d.children.length ? [el("h3", {}, "Split into (" + d.children.length + ")"),
            el("ul", { id: "children" }, d.children.map((ch) => el("li", {}, el("a", { href: communityHref(ch) }, ch))))] : null),
        el("section", { class: "panel", id: "members" },
          el("h2", {}, "Members (" + fmt(d.members.length) + (d.members.length < c.size ? " of " + fmt(c.size) : "") + ")"),
          el("p", { class: "muted small" }, Object.entries(byType).sort((a, b) => b[1] - a[1]).map(([t, n]) => t + " " + n).join(" · ")),
          el("ul", { class: "member-list" }, d.members.map((m) =>
            el("li", {}, objectLink(m.id, m.name || m.key), " ", el("span", { class: "type" }, m.type))))),
      ]);
    },
  };
})();
