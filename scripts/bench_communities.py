"""Community detection: build time, peak memory and modularity, on the MetaQA graph
and on 1M synthetic edges.

    python scripts/bench_communities.py [--write] [--skip-synthetic]

(a) MetaQA: the knowledge base (kb.txt, ``head|relation|tail``; 43k entities, 134k
triples) as an undirected graph of unit weights, built straight from the file. Time of
``kgsearch.communities.detect.detect`` (hierarchical Leiden, GraphRAG's
max_cluster_size 10), communities per level, and the modularity of level 0 next to
networkx's Louvain (``louvain_communities``, seed 42) on the same graph. (b) 1M edges of
a seeded stochastic block model (1,000 blocks of 200 nodes; 200k nodes). Each part runs
in its own process; peak RSS is that process's maximum resident set.
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from benchdoc import table, write_section

ROOT = Path(__file__).resolve().parent.parent
KB = ROOT.parent / "shared" / "eval-data" / "metaqa" / "kb.txt"


def metaqa_edges() -> list[tuple[str, str, float]]:
    edges = []
    for line in KB.read_text("utf-8").splitlines():
        parts = line.split("|")
        if len(parts) == 3:
            edges.append((parts[0], parts[2], 1.0))
    return edges


def synthetic_edges(
    n_edges: int = 1_000_000, blocks: int = 1000, size: int = 200
) -> list[tuple[str, str, float]]:
    rng = random.Random(42)
    edges: list[tuple[str, str, float]] = []
    while len(edges) < n_edges:
        block = rng.randrange(blocks)
        a = block * size + rng.randrange(size)
        # nine in ten edges stay inside the block
        if rng.random() < 0.9:
            b = block * size + rng.randrange(size)
        else:
            b = rng.randrange(blocks * size)
        if a != b:
            edges.append((f"n{a}", f"n{b}", 1.0))
    return edges


def child(part: str) -> dict[str, Any]:
    from kgsearch.communities.detect import detect

    edges = metaqa_edges() if part == "metaqa" else synthetic_edges()
    started = time.perf_counter()
    found = detect(edges)
    seconds = time.perf_counter() - started
    out: dict[str, Any] = {
        "part": part,
        "edges": len(edges),
        "seconds": round(seconds, 2),
        "levels": found.levels,
        "per_level": [len(found.level(n)) for n in range(found.levels)],
        "modularity": round(found.modularity, 4),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
    }
    if part == "metaqa":
        import networkx as nx

        graph = nx.Graph()
        for a, b, w in edges:
            if a != b:
                graph.add_edge(a, b, weight=graph.get_edge_data(a, b, {"weight": 0})["weight"] + w)
        started = time.perf_counter()
        louvain = nx.community.louvain_communities(graph, weight="weight", seed=42)
        out["louvain_seconds"] = round(time.perf_counter() - started, 2)
        out["louvain_modularity"] = round(nx.community.modularity(graph, louvain), 4)
        out["louvain_communities"] = len(louvain)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true")
    parser.add_argument("--skip-synthetic", action="store_true")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child)))
        return
    parts = ["metaqa"] + ([] if args.skip_synthetic else ["synthetic"])
    results = []
    for part in parts:
        done = subprocess.run(
            [sys.executable, __file__, "--child", part], capture_output=True, text=True, check=True
        )
        results.append(json.loads(done.stdout.strip().splitlines()[-1]))
        print(results[-1], file=sys.stderr)
    rows = [
        [
            r["part"],
            r["edges"],
            r["seconds"],
            r["peak_rss_mb"],
            r["levels"],
            " / ".join(str(n) for n in r["per_level"]),
            r["modularity"],
            (
                f"{r['louvain_modularity']} ({r['louvain_communities']} communities, "
                f"{r['louvain_seconds']} s)"
            )
            if "louvain_modularity" in r
            else "",
        ]
        for r in results
    ]
    body = table(
        [
            "graph",
            "edges",
            "build s",
            "peak RSS MB",
            "levels",
            "communities per level",
            "modularity (level 0)",
            "networkx Louvain modularity",
        ],
        rows,
    )
    body += (
        "\n\nTargets: MetaQA build ≤ 30 s; 1M edges ≤ 5 min and ≤ 4 GB peak. MetaQA "
        "knowledge base (CC BY 3.0, eval-data/metaqa/LICENSES) as published."
    )
    print(body)
    if args.write:
        command = "python scripts/bench_communities.py --write" + (
            " --skip-synthetic" if args.skip_synthetic else ""
        )
        write_section("communities", "Community detection", command, body)


if __name__ == "__main__":
    main()
