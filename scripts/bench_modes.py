"""Query modes: latency per mode (p50 / p95) on the MuSiQue graph, with the share of
questions whose gold passages the mode's context cites.

    python scripts/bench_modes.py [--questions 100] [--write]

The store is bench_passages.py's ``bench-data/passages-musique-openie.db`` (MuSiQue
train-100 corpus, graph from the recorded GPT-3.5 OpenIE file, embedded with the
bundled model; built on first use). Each question is searched with each recipe
(limit 10) and formatted as cited context sections (1,000 tokens); latency is the wall
time of ``engine.context``. "gold cited" is the mean share of a question's gold
supporting passages among the chunks the context cites, a rough check that a mode
finds the passages, not a QA score.
"""

from __future__ import annotations

import argparse
import statistics
import time

from bench_passages import build, questions
from benchdoc import table, write_section

from kgsearch import Engine, connect

MODES = ["naive", "local", "global", "hybrid", "mix", "multi_hop"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=100)
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args()
    asked = questions("musique-openie")[: args.questions]
    rows = []
    with Engine(connect(str(build("musique-openie")))) as engine:
        titles = {s.id: s.title for s in engine.store.iter_rows(engine.project, "source")}
        sources = {c.id: c.source_id for c in engine.store.iter_rows(engine.project, "chunk")}
        engine.search("warm up")
        for mode in MODES:
            seconds, cited = [], []
            for question, gold in asked:
                started = time.perf_counter()
                found = engine.context(
                    question, recipe=mode, limit=10, style="sections", max_tokens=1000
                )
                seconds.append(time.perf_counter() - started)
                shown = {
                    titles.get(sources.get(row, "") or "", "")
                    for cite, row in found.citations.items()
                    if cite.startswith("S")
                }
                cited.append(len(gold & shown) / len(gold))
            seconds.sort()
            p50 = 1000 * seconds[len(seconds) // 2]
            p95 = 1000 * seconds[min(len(seconds) - 1, int(len(seconds) * 0.95))]
            rows.append([mode, f"{p50:.1f}", f"{p95:.1f}", f"{statistics.mean(cited):.3f}"])
            print(mode, rows[-1])
    body = table(["recipe", "p50 ms", "p95 ms", "gold passages cited"], rows)
    body += (
        f"\n\n{len(asked)} MuSiQue train-100 questions, limit 10, context of 1,000 tokens "
        "in cited sections. MuSiQue (CC BY 4.0) as published with HippoRAG."
    )
    print(body)
    if args.write:
        write_section("modes", "Query modes", "python scripts/bench_modes.py --write", body)


if __name__ == "__main__":
    main()
