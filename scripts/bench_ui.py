"""Web UI speed in a real headless Chromium: first paint of /ui, a 5,000-node graph view
laid out and interactive, and the bytes of assets transferred.

The store is the full MetaQA graph (bench-data/metaqa-full.jsonl, 43k objects, 129k
relationships; written by scripts/bench_import.py) imported into a fresh SQLite file;
the server is the real REST app (uvicorn, API keys on) on loopback.
The graph view is the neighbourhood of the best-connected object, two hops, cut at
5,000 nodes. Each figure is the median of ``--runs`` fresh browser contexts (no cache).

    .venv/bin/python scripts/bench_ui.py [--runs 5] [--nodes 5000] [--no-write]
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from benchdoc import table, write_section  # noqa: E402
from live_server import LiveServer  # noqa: E402
from playwright.sync_api import Browser, sync_playwright  # noqa: E402
from ui_browser import CHROMIUM, CHROMIUM_ARGS  # noqa: E402

from kgsearch import Engine, connect  # noqa: E402
from kgsearch.api.app import create_app  # noqa: E402
from kgsearch.testing import FakeEmbedder  # noqa: E402

FULL = ROOT / "bench-data" / "metaqa-full.jsonl"
"""The full MetaQA graph as JSONL (scripts/bench_import.py writes it from the eval data)."""
TARGETS = {"paint": 1000.0, "graph": 3000.0, "bytes": 1.5 * 1024 * 1024}

ASSETS_JS = """() => {
  const entries = [performance.getEntriesByType('navigation')[0],
                   ...performance.getEntriesByType('resource')];
  return entries.filter(e => !new URL(e.name).pathname.startsWith('/api/'))
                .map(e => ({name: new URL(e.name).pathname, bytes: e.transferSize,
                            decoded: e.decodedBodySize}));
}"""


def hub(db: Path) -> str:
    """The id of the object with the most relationships."""
    with sqlite3.connect(db) as c:
        row = c.execute(
            "SELECT id, count(*) AS n FROM (SELECT source_id AS id FROM relationships "
            "UNION ALL SELECT target_id FROM relationships) GROUP BY id ORDER BY n DESC LIMIT 1"
        ).fetchone()
    return str(row[0])


def first_paint(browser: Browser, url: str, key: str) -> dict[str, float]:
    """Navigation to first contentful paint, and to the signed-in shell."""
    ctx = browser.new_context(viewport={"width": 1280, "height": 800})
    ctx.add_init_script(f"sessionStorage.setItem('kgsearch.key', {key!r})")
    page = ctx.new_page()
    page.goto(url + "/ui/")
    page.wait_for_selector("#q")
    fcp = page.evaluate("() => performance.getEntriesByName('first-contentful-paint')[0].startTime")
    ready = page.evaluate("() => performance.now()")
    ctx.close()
    return {"fcp": float(fcp), "shell": float(ready)}


def graph_view(browser: Browser, url: str, key: str, seed: str, nodes: int) -> dict[str, Any]:
    """Open the graph page straight away: time to laid out and drawn, then the time a
    click on a node takes to select it, and the assets the whole visit transferred."""
    ctx = browser.new_context(viewport={"width": 1280, "height": 800})
    ctx.add_init_script(f"sessionStorage.setItem('kgsearch.key', {key!r})")
    page = ctx.new_page()
    page.goto(f"{url}/ui/#/graph/{seed}?depth=2&limit={nodes}")
    page.wait_for_selector("#graph[data-ready='1']", timeout=60_000)
    data = page.eval_on_selector("#graph", "e => ({...e.dataset})")
    # interactive: a click on a drawn node selects it (expanding it is a server call)
    target = page.evaluate(
        """() => { const v = window.KG.graphView; let best = null;
                   v.graph.forEachNode((id, a) => { if (!best && a.depth === 1) best = id; });
                   const p = v.renderer.graphToViewport(v.graph.getNodeAttributes(best));
                   const box = v.container.getBoundingClientRect();
                   return {id: best, x: box.left + p.x, y: box.top + p.y,
                           label: v.graph.getNodeAttribute(best, 'label')}; }"""
    )
    t0 = page.evaluate("() => performance.now()")
    page.mouse.click(target["x"], target["y"])
    page.wait_for_selector("#graph-info h2")
    clicked = page.evaluate("() => performance.now()") - t0
    # a zoom: the frame after a camera change
    zoom = page.evaluate(
        """() => new Promise(done => {
             const v = window.KG.graphView; const t = performance.now();
             v.renderer.getCamera().setState({ratio: 0.5});
             requestAnimationFrame(() => requestAnimationFrame(
               () => done(performance.now() - t))); })"""
    )
    assets = page.evaluate(ASSETS_JS)
    ctx.close()
    return {
        "nodes": int(data["nodes"]),
        "edges": int(data["edges"]),
        "ready_at": float(data["readyAt"]),
        "fetch": float(data["fetchMs"]),
        "build": float(data["buildMs"]),
        "layout": float(data["layoutMs"]),
        "draw": float(data["renderMs"]),
        "iterations": int(data["iterations"]),
        "click": float(clicked),
        "zoom": float(zoom),
        "assets": assets,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    load = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "ui.db"
        engine = Engine(connect(str(db)), embedder=FakeEmbedder(32))
        if not FULL.exists():
            raise SystemExit(f"{FULL} is missing: run scripts/bench_import.py once first")
        engine.import_files([FULL])
        key = engine.create_api_key("default", ["read", "write", "debug"])[0]
        seed = hub(db)
        reads, cpu = [], []
        for _ in range(args.runs):
            t0, c0 = time.perf_counter(), time.process_time()
            engine.subgraph([seed], depth=2, limit=args.nodes)
            reads.append((time.perf_counter() - t0) * 1000)
            cpu.append((time.process_time() - c0) * 1000)
        server = LiveServer(create_app(engine))
        url = server.start()
        try:
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
                first_paint(browser, url, key)  # warm the server's routes
                paints = [first_paint(browser, url, key) for _ in range(args.runs)]
                graphs = [graph_view(browser, url, key, seed, args.nodes) for _ in range(args.runs)]
                browser.close()
        finally:
            server.stop()
            engine.close()
    load_after = os.getloadavg()
    fcp = statistics.median(p["fcp"] for p in paints)
    shell = statistics.median(p["shell"] for p in paints)
    ready = statistics.median(g["ready_at"] for g in graphs)
    fetch = statistics.median(g["fetch"] for g in graphs)
    build = statistics.median(g["build"] for g in graphs)
    layout = statistics.median(g["layout"] for g in graphs)
    draw = statistics.median(g["draw"] for g in graphs)
    click = statistics.median(g["click"] for g in graphs)
    zoom = statistics.median(g["zoom"] for g in graphs)
    g0 = graphs[0]
    assets = g0["assets"]
    total = sum(a["bytes"] for a in assets)
    decoded = sum(a["decoded"] for a in assets)
    ok = lambda v, t: "met" if v <= t else "NOT met"  # noqa: E731
    rows = [
        ["first contentful paint of /ui", f"{fcp:.0f} ms", "≤ 1000 ms", ok(fcp, TARGETS["paint"])],
        ["signed-in shell ready (session checked)", f"{shell:.0f} ms", "", ""],
        [
            f"graph view of {g0['nodes']:,} nodes / {g0['edges']:,} edges laid out and drawn "
            "(from navigation)",
            f"{ready:.0f} ms",
            "≤ 3000 ms",
            ok(ready, TARGETS["graph"]),
        ],
        [
            "… of which the subgraph request (server, JSON, until the response is parsed)",
            f"{fetch:.0f} ms",
            "",
            "",
        ],
        [
            "… the same subgraph read in process (`Engine.subgraph`, no HTTP, no browser)",
            f"{statistics.median(reads):.0f} ms",
            "",
            "",
        ],
        [
            "… its CPU time (the rest of the wall time is waiting for a core)",
            f"{statistics.median(cpu):.0f} ms",
            "",
            "",
        ],
        ["… of which building the graph from the JSON (graphology)", f"{build:.0f} ms", "", ""],
        ["… of which the layout (in the browser)", f"{layout:.0f} ms", "", ""],
        ["… of which sigma's set-up and first draw", f"{draw:.0f} ms", "", ""],
        ["click on a node → selected", f"{click:.0f} ms", "", ""],
        ["zoom → next frames drawn", f"{zoom:.0f} ms", "", ""],
        [
            f"assets transferred ({len(assets)} files, no cache, no compression)",
            f"{total / 1024:.0f} KiB",
            "≤ 1536 KiB",
            ok(total, TARGETS["bytes"]),
        ],
    ]
    files = table(
        ["file", "transferred (KiB)"],
        [[a["name"], f"{a['bytes'] / 1024:.1f}"] for a in assets],
    )
    body = (
        "Headless Debian Chromium (`--disable-gpu`: WebGL through SwiftShader, on the CPU), "
        "1280×800, driven by Playwright against `create_app` on uvicorn over loopback, API "
        "keys on. Store: the full MetaQA graph (42,828 objects, 129,235 relationships) in "
        "SQLite; the graph is the "
        f"two-hop neighbourhood of its best-connected object, cut at {args.nodes:,} nodes "
        "(radial tree layout; ForceAtlas2 only up to 2,000 nodes; line edges and point "
        f"nodes past 2,000). Median of {args.runs} fresh browser "
        f"contexts each. Load average before {load[0]:.2f}, after {load_after[0]:.2f} "
        "(2 cores shared with other work).\n\n"
        + table(["what", "measured", "target", ""], rows)
        + "\n\nThe subgraph is read set-based: one BFS query per hop and slice of 200 "
        "objects, the objects' names in slices of 500 ids, and the edges among the nodes "
        "in one statement (`typed_edges(among=True)`: each node's first 200 edges out and "
        "in, a bounded index probe inside SQLite, so a hub costs no more than any node). "
        "Until 2026-11-25 the edges cost two Python queries per node (10,000) and the BFS "
        "queries scanned every relationship of the project (`ORDER BY rowid` made SQLite "
        "pick the project index): 3,149 ms in process at load 12–14. On a copy of "
        "bench-data/metaqa-full.db at load 7, the same read took 1.7–2.3 s of CPU before "
        "and 0.7–1.0 s after. The request takes "
        "longer than the same read in process because the server gets its share of two "
        "cores shared with the browser and with other work (see the load average); "
        "the browser's own share (building the graph, layout, first draw) is a few "
        "hundred ms. " + f"Decoded size of the same files: {decoded / 1024:.0f} KiB. The graph "
        "libraries (sigma.js, graphology, graphology-library) load only when the Graph "
        "page opens; the first paint needs the HTML, the CSS and the UI's own scripts.\n\n" + files
    )
    print(body)
    if not args.no_write:
        write_section(
            "ui",
            "Web UI: first paint, 5,000-node graph view, asset size",
            "python scripts/bench_ui.py",
            body,
        )


if __name__ == "__main__":
    main()
