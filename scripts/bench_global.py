"""Which communities a broad question selects, before and after the global-search change.

Runs the ``communities`` recipe (the selection ``ask --recipe global`` map-reduces
over) for broad questions on two stores that ``scripts/global_bench_prep.py`` made:
a copy of the full MetaQA store and the MuSiQue train-100 graph (recorded GPT-3.5
OpenIE), each with a community build whose extractive reports are embedded with the
bundled model. Each side runs in a subprocess of its own with its own sources first on
``PYTHONPATH`` (``--before``: a checkout of the old code, ``--after``: this one), the
two interleaved question by question; per question it records the level, size and rank
of the ten communities selected and the time the search took.

    python scripts/bench_global.py --stores /tmp/global-bench \\
        --before /work/wt-head/src --after src [--write]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from benchdoc import table, write_section

QUESTIONS = [
    "What are the main themes?",
    "What is this dataset about?",
    "What are the most important topics in this collection?",
    "Summarize the key subjects covered.",
]
LIMIT = 10
STORES = {"MetaQA (full)": "metaqa.db", "MuSiQue train-100 (GPT-3.5 OpenIE)": "musique.db"}
NARROW = {
    "MetaQA (full)": "Which films did Hayao Miyazaki make?",
    "MuSiQue train-100 (GPT-3.5 OpenIE)": "Which countries hosted the Winter Olympics?",
}
"""A narrow question per graph: relevance must still reach the community it names."""

_CHILD = r"""
import json, sys, time
from kgsearch import Engine, connect
from kgsearch.embed import create_embedder
path, limit, questions = sys.argv[1], int(sys.argv[2]), json.loads(sys.argv[3])
with Engine(connect(path), embedder=create_embedder("bundled")) as engine:
    engine.search("warm-up", recipe="communities", limit=1)
    out = []
    for q in questions:
        started = time.perf_counter()
        found = engine.search(q, recipe="communities", limit=limit)
        ms = (time.perf_counter() - started) * 1000
        ids = [c.id for c in found.communities]
        records = {c.id: c for c in engine.store.communities(engine.project, ids=ids)}
        out.append({"question": q, "ms": ms, "picked": [
            {"id": c.id, "level": c.level, "size": records[c.id].size,
             "rank": records[c.id].rank, "title": c.title} for c in found.communities]})
    db = engine.store.db
    embedded = db.all("SELECT count(*) AS n FROM community_reports "
                      "WHERE status = 'embedded'")[0]["n"]
    reports = db.all("SELECT count(*) AS n FROM community_reports")[0]["n"]
print(json.dumps({"runs": out, "embedded": embedded, "reports": reports}))
"""


def _side(src: str, path: Path, questions: list[str]) -> dict[str, Any]:
    """Every question on one store with one side's code, in a process of its own."""
    env = {**os.environ, "PYTHONPATH": str(Path(src).resolve())}
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, str(path), str(LIMIT), json.dumps(questions)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    found: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return found


def _summary(picked: list[dict[str, Any]]) -> dict[str, Any]:
    sizes = [p["size"] for p in picked]
    return {
        "levels": "/".join(str(p["level"]) for p in picked),
        "median": statistics.median(sizes) if sizes else 0,
        "pairs": sum(1 for s in sizes if s <= 2),
        "members": sum(sizes),
        "rank": statistics.median([p["rank"] for p in picked]) if picked else 0,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--stores", type=Path, default=Path("/tmp/global-bench"))
    parser.add_argument("--before", default="/work/wt-head/src")
    parser.add_argument("--after", default="src")
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args()
    load = os.getloadavg()[0]
    rows, examples, coverage, narrow = [], [], [], []
    for n, (graph, name) in enumerate(STORES.items()):
        order = ("before", "after") if n % 2 == 0 else ("after", "before")
        questions = [*QUESTIONS, NARROW[graph]]
        sides = {side: _side(getattr(args, side), args.stores / name, questions) for side in order}
        coverage.append((graph, sides["after"]["embedded"], sides["after"]["reports"]))
        for i, question in enumerate(QUESTIONS):
            for side in ("before", "after"):
                run = sides[side]["runs"][i]
                s = _summary(run["picked"])
                rows.append(
                    (
                        graph,
                        question,
                        side,
                        s["levels"],
                        f"{s['median']:g}",
                        s["pairs"],
                        f"{s['members']:,}",
                        f"{s['rank']:g}",
                        f"{run['ms']:.0f} ms",
                    )
                )
        examples.append((graph, {side: sides[side]["runs"][0] for side in sides}))
        narrow.append((graph, {side: sides[side]["runs"][-1] for side in sides}))
        print(graph, "done", time.strftime("%H:%M:%S"), file=sys.stderr)
    load_after = os.getloadavg()[0]
    body = [
        "The ten communities the `communities` recipe (what `ask --recipe global` "
        "map-reduces over) selects for four broad questions, with the old selection "
        "(`--before`, RRF of the report legs times a size factor) and the new one "
        "(relevance times size and rank, the coarse levels' highest-ranked communities "
        "always candidates, nested ones dropped). Reports are extractive, embedded with "
        "the bundled model. *levels*: the level of each pick in order; *median size*, "
        "*≤ 2 members*: picks of one pair; *members*: summed size of the ten; *median "
        "rank*: summed relationship weight inside. Each side runs in its own process, "
        "the two interleaved per question; the time is one search after a warm-up.",
        "",
        table(
            [
                "graph",
                "question",
                "code",
                "levels",
                "median size",
                "≤ 2 members",
                "members",
                "median rank",
                "search",
            ],
            rows,
        ),
        "",
        f"1-minute load average {load:.1f} at the start and {load_after:.1f} at the end "
        "(2 cores shared with other jobs). Reports embedded: "
        + "; ".join(f"{g} {e:,} of {r:,}" for g, e, r in coverage)
        + ". Embedding every report did not fit the session on the shared machine (about "
        "100 reports a minute at load 15–20): the stores were prepared with "
        "`python scripts/global_bench_prep.py /tmp/global-bench --defer`, which embeds "
        "every report of levels 0 and the 300 highest-ranked of level 1 (and keeps the "
        "deeper ones a first, interrupted run had embedded: levels 3–4 on MetaQA, 2–5 on "
        "MuSiQue, deepest first); the others are invisible to the vector leg on both sides "
        "(BM25 reads them all). The old selection already weighed a report's RRF score by "
        "its community's size (0.5 for a pair to 1 for the largest candidate), so on these "
        "stores neither side picks a pair; what changes is how much of the graph the ten "
        "picks hold.",
    ]
    for graph, sides in examples:
        body += ["", f"### {graph}: “{QUESTIONS[0]}”", ""]
        for side in ("before", "after"):
            picks = sides[side]["picked"][:5]
            listed = "; ".join(
                f"{p['title']} (level {p['level']}, {p['size']} members, rank {p['rank']:g})"
                for p in picks
            )
            body.append(f"- {side}: {listed}")
    for graph, sides in narrow:
        body += ["", f"### {graph}, a narrow question: “{NARROW[graph]}”", ""]
        for side in ("before", "after"):
            picks = sides[side]["picked"][:3]
            listed = "; ".join(
                f"{p['title']} (level {p['level']}, {p['size']} members)" for p in picks
            )
            body.append(f"- {side}: {listed}")
    body += [
        "",
        "### A replayed global answer over A Christmas Carol's reports",
        "",
        "`pytest tests/unit/communities/test_global_search.py -k replayed` (the recording "
        "`tests/unit/communities/carol_global.jsonl`, made by "
        "`scripts/record_global_carol.py` from nano-graphrag's real gpt-3.5-turbo map and "
        "reduce replies): the question “What are the top themes in this story?” selects 10 "
        "of the book's 32 communities (real gpt-3.5-turbo reports, embedded with the bundled "
        "model); one map call returns the five real key points (importance 90, 85, 80, 75, "
        "70), the reduce reply is the real answer. The model cited nothing, so the "
        "citations come from the points its sentences restate: C1 “Scrooge and Various "
        "Characters in A Christmas Carol” (level 0, 58 members), C2 “Christmas and "
        "Scrooge's Transformation” (level 0, 13) and C6 “Bob Cratchit and Tiny Tim in 'A "
        "Christmas Carol'” (level 1, 5); the test checks each resolves to its community and "
        "shares at least ten words with the answer, and that the report on names leaked from "
        "the extraction prompt (“Washington and Project Gutenberg Community”) is not cited.",
    ]
    text = "\n".join(body)
    print(text)
    if args.write:
        write_section(
            "global",
            "Global search: the communities a broad question selects",
            "python scripts/bench_global.py --stores /tmp/global-bench --write",
            text,
        )


if __name__ == "__main__":
    main()
