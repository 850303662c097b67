// Graph page: an object's neighbourhood drawn with sigma.js (WebGL) over a graphology
// graph, laid out with ForceAtlas2. Click a node to expand it; filter and colour by type.
"use strict";

(function () {
  const { api, ApiError, el, clear, fmt, objectLink, errorBox, toast, pages } = window.KG;

  const VENDOR = "/ui/static/vendor/";
  const PALETTE = ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1",
    "#ff9da7", "#9c755f", "#bab0ac", "#1f77b4", "#17becf"];
  const LAYOUT_BUDGET_MS = 600;
  const FA2_MAX_NODES = 2000;
  const BIG = 2000;
  const NO_COMMUNITY = "#c8ccd2";
  // labels are drawn right of their node in sigma's default font
  const LABEL_FONT = "14px Arial";
  const FIT_LABELS_MAX_NODES = 200;
  const ALL_LABELS_MAX_NODES = 50;
  const EDGE_LABELS_MAX_NODES = 20;
  let libs = null;
  // an object id (a UUID); anything else typed or linked is read as a name
  const ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

  function loadScript(src) {
    return new Promise((resolve, reject) => {
      const s = document.createElement("script");
      s.src = src;
      s.onload = resolve;
      s.onerror = () => reject(new Error("could not load " + src));
      document.head.appendChild(s);
    });
  }

  // The graph libraries load on the first visit of this page only.
  function loadLibs() {
    if (!libs) {
      libs = loadScript(VENDOR + "graphology.umd.min.js")
        .then(() => Promise.all([loadScript(VENDOR + "graphology-library.min.js"), loadScript(VENDOR + "sigma.min.js")]))
        .then(() => ({
          Graph: window.graphology.MultiGraph || window.graphology,
          fa2: window.graphologyLibrary.layoutForceAtlas2,
          Sigma: window.Sigma.Sigma || window.Sigma.default || window.Sigma,
          rendering: window.Sigma.rendering,
        }));
    }
    return libs;
  }

  class View {
    constructor(lib, container, info, legend, status) {
      this.lib = lib;
      this.container = container;
      this.info = info;
      this.legend = legend;
      this.status = status;
      this.graph = new lib.Graph({ allowSelfLoops: false });
      this.colours = new Map();
      this.communityColours = new Map();
      this.colourBy = "type";
      this.hiddenTypes = new Set();
      this.selected = null;
      this.renderer = null;
      this.expanded = new Set();
    }

    colour(type) {
      if (!this.colours.has(type)) this.colours.set(type, PALETTE[this.colours.size % PALETTE.length]);
      return this.colours.get(type);
    }

    communityColour(community) {
      if (community === null || community === undefined) return NO_COMMUNITY;
      const c = this.communityColours;
      if (!c.has(community)) c.set(community, PALETTE[c.size % PALETTE.length]);
      return c.get(community);
    }

    nodeColour(a) {
      return this.colourBy === "community" ? this.communityColour(a.community) : this.colour(a.type_);
    }

    hasCommunities() {
      return this.communityColours.size > 0 || this.graph.someNode((_, a) => a.community !== null && a.community !== undefined);
    }

    // Colour the nodes by "type" or by "community" (their coarsest community).
    setColourBy(by) {
      this.colourBy = by;
      this.graph.updateEachNodeAttributes((_, a) => Object.assign(a, { color: this.nodeColour(a) }), { attributes: ["color"] });
      this.legend.classList.toggle("by-community", by === "community");
      this.container.dataset.colourBy = by;
      if (this.renderer) this.renderer.refresh();
    }

    // Adds nodes and edges; new nodes start near `around` (or on rings by hop count).
    add(data, around) {
      const g = this.graph;
      const centre = around && g.hasNode(around) ? g.getNodeAttributes(around) : { x: 0, y: 0 };
      // each node's coarsest community, when the project has communities
      const groups = data.node_communities || [];
      const communityOf = new Map();
      data.nodes.forEach((n, i) => { if (groups[i] >= 0) communityOf.set(n.id, data.communities[groups[i]]); });
      const fresh = data.nodes.filter((n) => !g.hasNode(n.id));
      const perRing = {};
      for (const n of fresh) perRing[n.depth] = (perRing[n.depth] || 0) + 1;
      const seen = {};
      for (const n of fresh) {
        const i = (seen[n.depth] = (seen[n.depth] || 0) + 1);
        const angle = (2 * Math.PI * i) / perRing[n.depth] + n.depth;
        const radius = around ? 4 + Math.min(20, fresh.length * 0.2) + (i % 3) : n.depth * 10 + (i % 7);
        const attrs = {
          label: n.name, type_: n.type, depth: n.depth, community: communityOf.get(n.id) ?? null,
          x: centre.x + radius * Math.cos(angle), y: centre.y + radius * Math.sin(angle),
          size: n.depth === 0 && !around ? 9 : 4, hidden: this.hiddenTypes.has(n.type),
        };
        this.colour(n.type);
        g.addNode(n.id, Object.assign(attrs, { color: this.nodeColour(attrs) }));
      }
      // edges are [source index, target index, type index]; one edge per pair and type
      for (const [a, b, t] of data.edges) {
        const source = data.nodes[a].id;
        const target = data.nodes[b].id;
        const type = data.edge_types[t];
        const key = source + "|" + target + "|" + type;
        if (source === target || g.hasEdge(key)) continue;
        // associations are drawn fainter than stated relationships
        const faint = type === "co_mentioned";
        g.addEdgeWithKey(key, source, target, { label: type.replace(/_/g, " "), size: faint ? 1 : 1.5, color: faint ? "#dfe2e8" : "#a9b1bf" });
      }
      g.forEachNode((id, a) => {
        if (a.depth !== 0 || around) g.setNodeAttribute(id, "size", Math.min(14, 3 + Math.log2(1 + g.degree(id))));
      });
      return fresh.length;
    }

    // A radial tree: each seed's descendants (by hop count, through the first edge
    // that reaches them) share its angle in proportion to their own descendants; a
    // ring's radius grows with the nodes on it. Linear time, readable at any size.
    radial() {
      const g = this.graph;
      const children = new Map();
      const roots = [];
      const placed = new Set();
      g.forEachNode((id, a) => {
        children.set(id, []);
        if (a.depth === 0) {
          roots.push(id);
          placed.add(id);
        }
      });
      let frontier = roots.slice();
      const perRing = [roots.length];
      while (frontier.length) {
        const next = [];
        for (const id of frontier) {
          const depth = g.getNodeAttribute(id, "depth");
          g.forEachNeighbor(id, (other, a) => {
            if (!placed.has(other) && a.depth === depth + 1) {
              placed.add(other);
              children.get(id).push(other);
              next.push(other);
            }
          });
        }
        if (next.length) perRing.push(next.length);
        frontier = next;
      }
      const weight = new Map();
      const measure = (id) => {
        let w = 1;
        for (const c of children.get(id)) w += measure(c);
        weight.set(id, w);
        return w;
      };
      let total = 0;
      for (const r of roots) total += measure(r);
      const radius = perRing.map((n, d) => (d === 0 ? (roots.length > 1 ? 5 : 0) : Math.max(d * 10, (n * 1.2) / (2 * Math.PI))));
      for (let d = 1; d < radius.length; d++) radius[d] = Math.max(radius[d], radius[d - 1] * 1.4 + 8);
      const place = (id, from, to, depth) => {
        const angle = (from + to) / 2;
        g.mergeNodeAttributes(id, { x: radius[depth] * Math.cos(angle), y: radius[depth] * Math.sin(angle) });
        let start = from;
        const kids = children.get(id);
        const sum = kids.reduce((acc, c) => acc + weight.get(c), 0) || 1;
        for (const c of kids) {
          const share = ((to - from) * weight.get(c)) / sum;
          place(c, start, start + share, depth + 1);
          start += share;
        }
      };
      let start = 0;
      for (const r of roots) {
        const share = (2 * Math.PI * weight.get(r)) / total;
        place(r, start, start + share, 0);
        start += share;
      }
      // nodes no tree edge reached keep their ring positions
    }

    // ForceAtlas2 in slices until the time budget is spent (Barnes-Hut past 1000
    // nodes), from the radial layout; past FA2_MAX_NODES the radial layout stays.
    layout(budget) {
      const g = this.graph;
      if (g.order < 2 || g.order > FA2_MAX_NODES) return 0;
      const settings = Object.assign(this.lib.fa2.inferSettings(g), { barnesHutOptimize: g.order > 1000 });
      const t0 = performance.now();
      let iterations = 0;
      const step = g.order > 1000 ? 2 : 10;
      while (performance.now() - t0 < budget && iterations < 300) {
        this.lib.fa2.assign(g, { iterations: step, settings });
        iterations += step;
      }
      return iterations;
    }

    render() {
      if (this.renderer) {
        this.renderer.refresh();
        return;
      }
      // past BIG nodes: 1-pixel line edges, point nodes, and no edges or labels while
      // the camera moves (CPU-rendered WebGL stays responsive)
      const big = this.graph.order > BIG;
      const R = this.lib.rendering;
      // edge labels: every one on a small graph, else the hovered edge's and those
      // of the selected node's edges
      const small = this.graph.order <= EDGE_LABELS_MAX_NODES;
      this.renderer = new this.lib.Sigma(this.graph, this.container, {
        renderEdgeLabels: true,
        edgeLabelSize: 12,
        edgeReducer: (edge, data) => {
          const g = this.graph;
          const shown = edge === this.hoveredEdge ||
            (this.selected && g.hasNode(this.selected) && g.hasExtremity(edge, this.selected));
          if (shown) return Object.assign({}, data, { forceLabel: true, color: "#5d6675", size: 2 });
          return small ? data : Object.assign({}, data, { label: "" });
        },
        defaultEdgeType: big ? "thin" : "line",
        defaultNodeType: big ? "point" : "circle",
        edgeProgramClasses: R ? { thin: R.EdgeLineProgram } : {},
        nodeProgramClasses: R ? { point: R.NodePointProgram } : {},
        hideEdgesOnMove: big,
        hideLabelsOnMove: big,
        // a small graph shows every label; a big one those of its larger nodes
        labelRenderedSizeThreshold: this.graph.order <= ALL_LABELS_MAX_NODES ? 0 : 7,
        stagePadding: 60,
        nodeReducer: (node, data) => (node === this.selected ? Object.assign({}, data, { highlighted: true }) : data),
      });
      this.fitLabels();
      this.renderer.on("clickNode", ({ node }) => this.select(node, true));
      this.renderer.on("enterNode", ({ node }) => { this.container.style.cursor = "pointer"; this.hover(node); });
      this.renderer.on("leaveNode", () => { this.container.style.cursor = ""; });
      this.hoverEdges();
    }

    // The edge under the pointer (within 6 px, away from its ends) shows its label and
    // "source —type→ target" in the status line. Found here rather than by sigma's edge
    // events: one pass over the edges per animation frame, for graphs up to BIG edges.
    hoverEdges() {
      let pending = false;
      this.container.addEventListener("mousemove", (event) => {
        if (pending || this.graph.size > BIG) return;
        pending = true;
        requestAnimationFrame(() => {
          pending = false;
          if (this.renderer) this.edgeAt(event);
        });
      });
    }

    edgeAt(event) {
      const box = this.container.getBoundingClientRect();
      const x = event.clientX - box.left;
      const y = event.clientY - box.top;
      let best = null;
      let bestDistance = 6;
      this.graph.forEachEdge((edge, attrs, s, t, sa, ta) => {
        if (sa.hidden || ta.hidden) return;
        const p = this.renderer.graphToViewport(sa);
        const q = this.renderer.graphToViewport(ta);
        if (Math.hypot(x - p.x, y - p.y) < 10 || Math.hypot(x - q.x, y - q.y) < 10) return;
        const dx = q.x - p.x;
        const dy = q.y - p.y;
        const t2 = Math.max(0, Math.min(1, ((x - p.x) * dx + (y - p.y) * dy) / (dx * dx + dy * dy || 1)));
        const d = Math.hypot(x - (p.x + t2 * dx), y - (p.y + t2 * dy));
        if (d < bestDistance) {
          bestDistance = d;
          best = edge;
        }
      });
      if (best === this.hoveredEdge) return;
      const changed = [this.hoveredEdge, best].filter((e) => e && this.graph.hasEdge(e));
      this.hoveredEdge = best;
      if (best) {
        const g = this.graph;
        this.status.textContent = g.getNodeAttribute(g.source(best), "label") + " —" + g.getEdgeAttribute(best, "label") +
          "→ " + g.getNodeAttribute(g.target(best), "label");
      }
      this.renderer.refresh({ partialGraph: { edges: changed }, skipIndexation: true });
    }

    // A small graph fills the canvas, so the label of a node at its right edge (drawn
    // right of the node) would be cut off: zoom out until every label fits.
    fitLabels() {
      const g = this.graph;
      if (g.order === 0 || g.order > FIT_LABELS_MAX_NODES) return;
      const width = this.container.clientWidth;
      const ctx = document.createElement("canvas").getContext("2d");
      ctx.font = LABEL_FONT;
      const margin = 8;
      let ratio = 1;
      g.forEachNode((id, a) => {
        const p = this.renderer.graphToViewport(a);
        const reach = this.renderer.getNodeDisplayData(id).size + 4 + ctx.measureText(String(a.label)).width;
        const room = width / 2 - margin - reach;
        const dx = p.x - width / 2;
        if (dx > 0) ratio = Math.max(ratio, room > 0 ? dx / room : 3);
      });
      if (ratio > 1) this.renderer.getCamera().setState({ ratio: Math.min(ratio, 3) });
    }

    hover(node) {
      this.status.textContent = this.graph.getNodeAttribute(node, "label") + " (" + this.graph.getNodeAttribute(node, "type_") + ")";
    }

    async select(node, expand) {
      const a = this.graph.getNodeAttributes(node);
      clear(this.info).append(
        el("h2", {}, a.label),
        el("p", {}, el("span", { class: "type" }, a.type_), " · degree " + this.graph.degree(node)),
        el("p", {}, objectLink(node, "Open object page")),
        el("button", { type: "button", id: "expand", onclick: () => this.expand(node) }, "Expand"));
      // redraw only the two nodes whose highlight changed (no re-indexing of the graph)
      const changed = [node];
      if (this.selected && this.selected !== node && this.graph.hasNode(this.selected)) changed.push(this.selected);
      this.selected = node;
      const edges = changed.flatMap((n) => this.graph.edges(n));
      this.renderer.refresh({ partialGraph: { nodes: changed, edges }, skipIndexation: true });
      if (expand) await this.expand(node);
    }

    async expand(node) {
      if (this.expanded.has(node)) return;
      this.expanded.add(node);
      this.status.textContent = "Expanding…";
      const data = await api("POST", "/api/explore/subgraph", { ids: [node], depth: 1, limit: 500, associations: true });
      const added = this.add(data, node);
      this.layout(added > 0 ? 300 : 0);
      this.updateLegend();
      this.renderer.refresh();
      this.publish();
      this.status.textContent = "Added " + added + " node(s)" + (data.truncated ? " (more exist)" : "") + ".";
    }

    updateLegend() {
      const counts = new Map();
      this.graph.forEachNode((_, a) => counts.set(a.type_, (counts.get(a.type_) || 0) + 1));
      clear(this.legend);
      if (this.hasCommunities() && !document.getElementById("colour-by")) {
        const pick = el("select", { id: "colour-by" },
          el("option", { value: "type", selected: this.colourBy === "type" }, "type"),
          el("option", { value: "community", selected: this.colourBy === "community" }, "community"));
        pick.addEventListener("change", () => this.setColourBy(pick.value));
        this.legend.before(el("label", { class: "colour-by" }, "Colour by ", pick));
      }
      for (const [type, n] of [...counts.entries()].sort((x, y) => y[1] - x[1])) {
        const box = el("input", { type: "checkbox", checked: !this.hiddenTypes.has(type), "data-type": type });
        box.addEventListener("change", () => {
          if (box.checked) this.hiddenTypes.delete(type);
          else this.hiddenTypes.add(type);
          this.graph.forEachNode((id, a) => { if (a.type_ === type) this.graph.setNodeAttribute(id, "hidden", !box.checked); });
          this.publish();
        });
        this.legend.appendChild(el("li", {}, el("label", {}, box,
          el("span", { class: "swatch", style: null, "data-colour": this.colour(type) }), type, " ", el("span", { class: "muted" }, "(" + n + ")"))));
      }
      // colours are set through the CSSOM (no inline style attribute with data)
      for (const swatch of this.legend.querySelectorAll(".swatch")) swatch.style.backgroundColor = swatch.dataset.colour;
    }

    visible() {
      let n = 0;
      this.graph.forEachNode((_, a) => { if (!a.hidden) n += 1; });
      return n;
    }

    publish() {
      this.container.dataset.nodes = String(this.graph.order);
      this.container.dataset.edges = String(this.graph.size);
      this.container.dataset.visible = String(this.visible());
    }

    find(text) {
      const needle = text.trim().toLowerCase();
      if (!needle) return;
      let hit = null;
      this.graph.forEachNode((id, a) => { if (!hit && String(a.label).toLowerCase().includes(needle)) hit = id; });
      if (!hit) {
        toast("No node matches.");
        return;
      }
      this.centre(hit);
      this.select(hit, false);
    }

    // Centre the camera on a node, zoomed so that its neighbours stay in view (the
    // framed graph spans about 1 unit at ratio 1).
    centre(node) {
      const pos = this.renderer.getNodeDisplayData(node);
      let reach = 0;
      this.graph.forEachNeighbor(node, (other) => {
        const p = this.renderer.getNodeDisplayData(other);
        if (p && !p.hidden) reach = Math.max(reach, Math.hypot(p.x - pos.x, p.y - pos.y));
      });
      const ratio = reach ? Math.min(1.2, Math.max(0.15, reach * 2.4)) : 0.5;
      this.renderer.getCamera().animate({ x: pos.x, y: pos.y, ratio }, { duration: 300 });
    }

    kill() {
      if (this.renderer) this.renderer.kill();
    }
  }

  let view = null;

  function subgraphBody(id, params) {
    // associations (objects the same passages name, edge type co_mentioned) are drawn
    // too: a graph built from documents holds most of its links that way
    if (Array.isArray(id)) return { ids: id, depth: 0, limit: id.length, associations: false };
    return {
      ids: [id],
      depth: Number(params.get("depth") || 1),
      limit: Number(params.get("limit") || 500),
      associations: params.get("associations") !== "0",
    };
  }

  // Opened straight on a graph: fetch the libraries and the subgraph while the
  // session is checked (the page takes the request over if it asks the same).
  let early = null;
  const opened = location.hash.match(/^#\/graph\/([^?]+)(?:\?(.*))?$/);
  if (opened) {
    loadLibs().catch(() => null);
    const body = subgraphBody(decodeURIComponent(opened[1]), new URLSearchParams(opened[2] || ""));
    early = { key: JSON.stringify(body), promise: api("POST", "/api/explore/subgraph", body) };
    early.promise.catch(() => null);
  }

  function fetchSubgraph(body) {
    const key = JSON.stringify(body);
    if (early && early.key === key) {
      const promise = early.promise;
      early = null;
      // sent before the user signed in, it may have been refused: ask again
      return promise.catch(() => api("POST", "/api/explore/subgraph", body));
    }
    early = null;
    return api("POST", "/api/explore/subgraph", body);
  }

  // Objects whose name matches `text` (an object search, graph results only): one
  // exact match opens at once, several are offered as buttons; an id opens as it is.
  async function pick(text, picker, go, asName) {
    clear(picker);
    if (!text) return;
    const res = await api("POST", "/api/search/unified", { query: text, resultTypes: "graph", relationships: null, limit: 8 });
    const hits = res.results.filter((r) => r.type === "graph");
    const exact = hits.filter((r) => String(r.name || "").toLowerCase() === text.toLowerCase());
    if (exact.length === 1) return go(exact[0].id);
    if (!hits.length) {
      if (!asName && ID.test(text)) return go(text);
      if (!asName) picker.appendChild(el("li", { class: "muted" }, "No object is named like “" + text + "”."));
      return;
    }
    picker.appendChild(el("li", { class: "muted", id: "picker-note" }, exact.length
      ? "Several objects have this name; pick one:" : "No object is named exactly “" + text + "”; the closest:"));
    if (exact.length) hits.splice(0, hits.length, ...exact);
    for (const r of hits) {
      picker.appendChild(el("li", {}, el("button", { type: "button", "data-id": r.id, onclick: () => go(r.id) },
        r.name || r.key, " ", el("span", { class: "type" }, r.object_type))));
    }
    picker.querySelector("button").focus();
  }

  pages.graph = {
    title: "Graph",
    leave() {
      if (view) view.kill();
      view = null;
    },
    async show(root, id, params) {
      const started = performance.now();
      const depth = Number(params.get("depth") || 1);
      const limit = Number(params.get("limit") || 500);
      const community = params.get("community");
      const picker = el("ul", { id: "picker", class: "picker", "aria-label": "objects with this name" });
      const seedForm = el("form", { class: "row graph-form", autocomplete: "off" },
        el("label", {}, "Object ", el("input", { id: "seed", type: "search", value: "", required: true, size: "28",
          placeholder: "a name (or an id)" })),
        el("label", {}, "Depth ", el("select", { id: "depth" }, [1, 2, 3].map((d) => el("option", { value: d, selected: d === depth }, d)))),
        el("label", {}, "Max nodes ", el("input", { id: "max-nodes", type: "number", min: "1", max: "10000", value: limit })),
        el("button", { type: "submit" }, "Show"));
      const go = (seed) => {
        location.hash = "#/graph/" + encodeURIComponent(seed) + "?depth=" + seedForm.querySelector("#depth").value +
          "&limit=" + seedForm.querySelector("#max-nodes").value;
      };
      seedForm.addEventListener("submit", (event) => {
        event.preventDefault();
        pick(seedForm.querySelector("#seed").value.trim(), picker, go).catch((e) => clear(picker).appendChild(errorBox(e)));
      });
      root.append(el("h1", { class: "sr" }, "Graph"), seedForm, picker);
      if (!id && !community) {
        root.appendChild(el("p", { class: "muted", id: "graph-hint" }, "Type an object's name and pick it, or open a graph from a search result, an object page or a community."));
        seedForm.querySelector("#seed").focus();
        return;
      }
      let seeds = id;
      let title = null;
      if (community) {
        const d = await api("GET", "/api/communities/" + encodeURIComponent(community) + "?members=100");
        seeds = d.members.map((m) => m.id);
        title = el("p", { id: "graph-community" }, "Subgraph of the community ",
          el("a", { href: "#/community/" + encodeURIComponent(community) }, d.report ? d.report.title : community),
          d.community.size > seeds.length ? " (its first " + seeds.length + " of " + d.community.size + " members)" : "");
        if (!seeds.length) throw new Error("the community has no live members");
      }
      const status = el("p", { id: "graph-status", class: "muted", role: "status" }, "Loading…");
      const container = el("div", { id: "graph", class: "graph", "aria-label": "graph view (click a node to expand it)" });
      const info = el("aside", { id: "graph-info", class: "panel" }, el("p", { class: "muted" }, "Click a node to expand it."));
      const legend = el("ul", { id: "legend", class: "legend", "aria-label": "types (untick to hide)" });
      const find = el("input", { id: "find-node", type: "search", placeholder: "Find a node (Enter)" });
      root.append(title || "", status, el("div", { class: "graph-layout" }, container,
        el("div", { class: "graph-side" }, find, info, el("h2", {}, "Types"), legend)));
      let lib, data;
      try {
        [lib, data] = await Promise.all([loadLibs(), fetchSubgraph(subgraphBody(seeds, params))]);
      } catch (e) {
        status.textContent = "";  // no "Loading…" left over an error
        if (!community && e instanceof ApiError && e.status === 404 && !ID.test(id)) {
          // not an object id of this project: read it as a name
          container.closest(".graph-layout").remove();
          status.remove();
          seedForm.querySelector("#seed").value = id;
          await pick(id, picker, go, true);
          if (!picker.querySelector("button")) root.appendChild(errorBox(e));
          return;
        }
        throw e;
      }
      const fetched = performance.now();
      const v = (view = new View(lib, container, info, legend, status));
      v.add(data, null);
      const built = performance.now();
      v.radial();
      const iterations = v.layout(LAYOUT_BUDGET_MS);
      const laidOut = performance.now();
      v.render();
      container.dataset.buildMs = String(Math.round(built - fetched));
      container.dataset.layoutMs = String(Math.round(laidOut - built));
      container.dataset.renderMs = String(Math.round(performance.now() - laidOut));
      v.updateLegend();
      v.publish();
      find.addEventListener("keydown", (event) => {
        if (event.key === "Enter") v.find(find.value);
      });
      requestAnimationFrame(() => {
        const ready = performance.now();
        container.dataset.readyMs = String(Math.round(ready - started));
        container.dataset.readyAt = String(Math.round(ready));
        container.dataset.fetchMs = String(Math.round(fetched - started));
        container.dataset.iterations = String(iterations);
        container.dataset.ready = "1";
        status.textContent = fmt(data.nodes.length) + " nodes, " + fmt(v.graph.size) + " edges" +
          (data.truncated ? " (cut at " + limit + ")" : "") + " · ready in " + Math.round(ready - started) + " ms";
      });
      window.KG.graphView = v;
    },
  };
})();
