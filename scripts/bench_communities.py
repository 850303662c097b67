"""Community detection benchmark: build time, peak memory and modularity.

Usage: python scripts/bench_communities.py [--edges 1000000] [--seed 0] [--write]

Two cases, each in its own child process so its peak RSS (``resource.getrusage``,
``ru_maxrss``) is its own:

* ``metaqa``: the MetaQA knowledge base (``kb.txt``, one ``head|relation|tail`` line per
  relationship, weight 1 each, so repeated pairs sum), read straight from the file with
  no store, through :func:`kgsearch.communities.detect_communities` with its defaults
  (max_cluster_size 10, seed 0xDEADBEEF). Next to it, networkx's ``louvain_communities``
  (seed 0) on the same weighted graph; both level-0 partitions are scored with the same
  function, ``networkx.community.modularity``.
* ``synthetic``: ``--edges`` seeded edges over a planted partition with power-law block
  sizes (5 to 5,000 nodes, exponent 2), one node per 5 edges, 80 % of each node's edges
  inside its block, weights uniform in [0.5, 2). The adjusted Rand index of level 0
  against the planted blocks is printed as a sanity check.

Time is the wall-clock time of ``detect_communities`` alone (graph build included,
reading the edges excluded), with its CPU time beside it: the machine is shared.
Targets (the communities issue): MetaQA ≤ 30 s; 1M edges ≤ 5 min and ≤ 4 GB peak.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from collections import Counter
from math import comb
from pathlib import Path
from typing import Any

import networkx as nx
import numpy as np
from benchdoc import table, write_section

from kgsearch.communities import Detection, detect_communities

KB = Path("/work/shared/eval-data/metaqa/kb.txt")
Edges = list[tuple[str, str, float]]


def metaqa_edges(path: Path) -> Edges:
    """One weight-1 edge per ``head|relation|tail`` line."""
    edges: Edges = []
    with path.open(encoding="utf-8") as lines:
        for line in lines:
            parts = line.rstrip("\n").split("|")
            if len(parts) == 3:
                edges.append((parts[0], parts[2], 1.0))
    return edges


def synthetic_edges(n_edges: int, seed: int) -> tuple[Edges, dict[str, int]]:
    """Seeded planted partition with power-law block sizes; edges and true blocks."""
    rng = np.random.default_rng(seed)
    n_nodes = max(n_edges // 5, 10)
    sizes: list[int] = []
    while sum(sizes) < n_nodes:
        sizes.append(int(min(5_000, 5 * (1 - rng.random()) ** -1.0)))
    sizes[-1] -= sum(sizes) - n_nodes
    block = np.repeat(np.arange(len(sizes)), [s for s in sizes])
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    sources = rng.integers(0, n_nodes, n_edges)
    inside = rng.random(n_edges) < 0.8
    own = block[sources]
    local = starts[own] + (rng.random(n_edges) * np.asarray(sizes)[own]).astype(np.int64)
    targets = np.where(inside, local, rng.integers(0, n_nodes, n_edges))
    weights = rng.uniform(0.5, 2.0, n_edges)
    names = [f"n{i}" for i in range(n_nodes)]
    edges = [
        (names[a], names[b], float(w))
        for a, b, w in zip(sources.tolist(), targets.tolist(), weights.tolist(), strict=True)
    ]
    return edges, {names[i]: int(b) for i, b in enumerate(block.tolist())}


def adjusted_rand_index(truth: dict[str, int], found: dict[str, str]) -> float:
    """Adjusted Rand index over the nodes both labellings have."""
    common = [n for n in truth if n in found]
    pairs = Counter((truth[n], found[n]) for n in common)
    index = sum(comb(k, 2) for k in pairs.values())
    rows = sum(comb(k, 2) for k in Counter(truth[n] for n in common).values())
    cols = sum(comb(k, 2) for k in Counter(found[n] for n in common).values())
    expected = rows * cols / comb(len(common), 2)
    return (index - expected) / ((rows + cols) / 2 - expected)


def _timed_detection(edges: Edges) -> tuple[Detection, dict[str, Any]]:
    wall, cpu = time.perf_counter(), time.process_time()
    found = detect_communities(edges)
    figures = {
        "seconds": time.perf_counter() - wall,
        "cpu_seconds": time.process_time() - cpu,
        "load": os.getloadavg()[0],
        "nodes": found.nodes,
        "edges": found.edges,
        "levels": found.levels,
        "per_level": [len(found.at_level(level)) for level in range(found.levels)],
        "largest_level0": max(c.size for c in found.at_level(0)),
        "largest_leaf": _largest_leaf(found),
        "modularity": found.modularity,
        "dropped": dict(found.dropped),
    }
    return found, figures


def _largest_leaf(found: Detection) -> int:
    parents = {c.parent for c in found.communities}
    return max(c.size for c in found.communities if c.id not in parents)


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def run_metaqa() -> dict[str, Any]:
    """The MetaQA case, in this process."""
    baseline = _peak_mb()
    edges = metaqa_edges(KB)
    found, figures = _timed_detection(edges)
    figures["peak_mb"] = _peak_mb()
    figures["baseline_mb"] = baseline
    graph = nx.Graph()
    for a, b, w in edges:
        if a != b:
            graph.add_edge(a, b, weight=graph.get_edge_data(a, b, {"weight": 0.0})["weight"] + w)
    leiden = [set(c.members) for c in found.at_level(0)]
    start = time.perf_counter()
    louvain = nx.community.louvain_communities(graph, weight="weight", seed=0)
    figures["louvain_seconds"] = time.perf_counter() - start
    figures["louvain_communities"] = len(louvain)
    figures["louvain_modularity"] = nx.community.modularity(graph, louvain, weight="weight")
    figures["leiden_modularity_nx"] = nx.community.modularity(graph, leiden, weight="weight")
    return figures


def run_synthetic(n_edges: int, seed: int) -> dict[str, Any]:
    """The synthetic case, in this process."""
    baseline = _peak_mb()
    edges, truth = synthetic_edges(n_edges, seed)
    found, figures = _timed_detection(edges)
    figures["peak_mb"] = _peak_mb()
    figures["baseline_mb"] = baseline
    figures["input_edges"] = len(edges)
    figures["planted_blocks"] = len(set(truth.values()))
    labels = {m: c.id for c in found.at_level(0) for m in c.members}
    figures["ari_level0"] = adjusted_rand_index(truth, labels)
    return figures


def _child(case: list[str]) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, __file__, "--case", *case],
        capture_output=True,
        text=True,
        check=True,
    )
    figures: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    print(json.dumps({"case": case[0], **figures}), file=sys.stderr)
    return figures


def _met(value: float, limit: float) -> str:
    return "met" if value <= limit else "**not met**"


def report(metaqa: dict[str, Any], synthetic: dict[str, Any]) -> str:
    """The Markdown body of the benchmarks section."""
    rows = []
    for name, f in (
        ("MetaQA (kb.txt)", metaqa),
        (f"synthetic {synthetic['input_edges']:,}", synthetic),
    ):
        rows.append(
            [
                name,
                f"{f['nodes']:,}",
                f"{f['edges']:,}",
                f"{f['seconds']:.1f}",
                f"{f['cpu_seconds']:.1f}",
                f"{f['peak_mb']:,.0f} ({f['baseline_mb']:,.0f} after imports)",
                " / ".join(f"{n:,}" for n in f["per_level"]),
                f"{f['largest_level0']:,} / {f['largest_leaf']:,}",
                f"{f['modularity']:.3f}",
            ]
        )
    body = table(
        [
            "graph",
            "nodes",
            "distinct edges",
            "build (s)",
            "CPU (s)",
            "peak RSS (MB)",
            "communities per level (0 = coarsest)",
            "largest level-0 / leaf",
            "level-0 modularity",
        ],
        rows,
    )
    body += "\n\n" + table(
        ["MetaQA, level 0 against networkx", "communities", "modularity (networkx)", "time (s)"],
        [
            [
                "kgsearch hierarchical Leiden (level 0)",
                f"{metaqa['per_level'][0]:,}",
                f"{metaqa['leiden_modularity_nx']:.3f}",
                f"{metaqa['seconds']:.1f} (all levels)",
            ],
            [
                "networkx louvain_communities (seed 0)",
                f"{metaqa['louvain_communities']:,}",
                f"{metaqa['louvain_modularity']:.3f}",
                f"{metaqa['louvain_seconds']:.1f}",
            ],
        ],
    )
    body += (
        f"\n\nSynthetic level 0 against the {synthetic['planted_blocks']:,} planted blocks: "
        f"adjusted Rand index {synthetic['ari_level0']:.3f} (level 0 has "
        f"{synthetic['per_level'][0]:,} communities: modularity's resolution limit merges "
        "small blocks at the coarsest level).\n\n"
        "Targets, on wall-clock time: MetaQA build ≤ 30 s: "
        f"{_met(metaqa['seconds'], 30)} ({metaqa['seconds']:.1f} s, {metaqa['cpu_seconds']:.1f} s "
        f"of CPU, 1-minute load average {metaqa['load']:.1f} on 2 cores); "
        "1M edges ≤ 5 min: "
        f"{_met(synthetic['seconds'], 300)} ({synthetic['seconds']:.1f} s, "
        f"{synthetic['cpu_seconds']:.1f} s of CPU, load {synthetic['load']:.1f}); "
        "≤ 4 GB peak: "
        f"{_met(synthetic['peak_mb'], 4096)} ({synthetic['peak_mb']:,.0f} MB, the edge list "
        "in Python included)."
    )
    return body


def main() -> None:
    """Run both cases in child processes; print, and with --write record, the figures."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--edges", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--write", action="store_true")
    parser.add_argument("--case", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.case:
        if args.case[0] == "metaqa":
            figures = run_metaqa()
        else:
            figures = run_synthetic(int(args.case[1]), int(args.case[2]))
        print(json.dumps(figures))
        return

    metaqa = _child(["metaqa"])
    synthetic = _child(["synthetic", str(args.edges), str(args.seed)])
    body = report(metaqa, synthetic)
    print(body)
    if args.write:
        command = "python scripts/bench_communities.py --write"
        if args.edges != 1_000_000 or args.seed != 0:
            command += f" --edges {args.edges} --seed {args.seed}"
        write_section("communities", "Community detection (hierarchical Leiden)", command, body)


if __name__ == "__main__":
    main()
