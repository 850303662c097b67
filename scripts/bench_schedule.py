"""How the first round's legs are scheduled on the cores: one process, the schedules
taking turns question by question, so the machine's load falls on each alike.

Usage: python scripts/bench_schedule.py [--queries 300] [--passes 2] [--write]

Issue 34's latency targets are wall clock on 2 cores. Two schedules of the same
search (their responses are the same; tests/unit/test_search_parallel_legs.py):

- ``serial scans``: the calling thread scans every kind's vectors, one after the
  other, while leg workers run the BM25 legs, started once the question is embedded
  (commit d798068's schedule);
- ``split scans``: a search alone in the process hands the scans but the
  relationships' to a leg worker (``legs._split_scans``).

Measured and not kept (2026-11-29, load 0.3-1.1, 300 questions x 2 passes): starting
the BM25 legs before the question is embedded, so they run while the model does. Beside
the split scans, replayed wall p50 / p95 6.43 / 8.59 ms against 6.04 / 7.72, end to end
11.90 / 14.70 against 11.89 / 14.28, and 0.3-0.4 ms more CPU a search: the model's own
two threads already take both cores while it embeds.

The full MetaQA graph (``bench-data/metaqa-full.db``), MetaQA questions as
bench_quality.py draws them, ``Engine.warm`` as ``serve`` does and one pass over the
questions before timing (every cache warm but the question's vector). Two parts, each
``--passes`` passes, the schedules in a rotating order for each question:

- ``replayed``: the question's vector is replayed (made once beforehand), as in
  bench_ab.py: the search alone;
- ``end to end``: the bundled model embeds the question in each search (the engine's
  query-vector cache is emptied before each), as a library caller with a new question
  waits for it.

Printed per part and schedule: wall and process CPU p50/p95 (ms), and the load average
at the start and end of each part; ``--write`` writes docs/benchmarks.md's "schedule"
section.
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable
from typing import Any

from bench_latency import percentile
from bench_quality import ensure_full_db, metaqa_questions
from benchdoc import table, write_section
from replay import Replay

import kgsearch.search.legs as legs
from kgsearch import Engine, Kind, SearchRequest, connect
from kgsearch.embed import create_embedder


def _schedules() -> dict[str, Callable[..., Any]]:
    """The scan split of each schedule."""

    def serial(vector: list[Any]) -> tuple[list[Any], list[Any]]:
        return vector, []

    return {"serial scans": serial, "split scans": legs._split_scans}


def _use(schedule: Callable[..., Any]) -> None:
    """Make the next searches follow ``schedule``."""
    legs._split_scans = schedule


def _engine(questions: list[str], replayed: bool) -> Engine:
    real: Any = create_embedder("bundled")
    embedder: Any = real
    if replayed:
        embedder = Replay(real, dict(zip(questions, real.embed_queries(questions), strict=True)))
    engine = Engine(connect(str(ensure_full_db())), embedder=embedder)
    for kind in (Kind.OBJECT, Kind.RELATIONSHIP):
        engine.store.wait_for_index("default", kind, 900)  # type: ignore[attr-defined]
    engine.warm()
    return engine


def run_part(questions: list[str], passes: int, replayed: bool) -> tuple[list[list[Any]], str]:
    """Rows (schedule, wall p50/p95, CPU p50/p95) of one part, and its load averages."""
    engine = _engine(questions, replayed)
    schedules = _schedules()
    requests = [SearchRequest(query=q, limit=10) for q in questions]
    for request in requests:
        engine.search(request)
    names = list(schedules)
    wall: dict[str, list[float]] = {n: [] for n in names}
    cpu: dict[str, list[float]] = {n: [] for n in names}
    load = [os.getloadavg()[0]]
    try:
        for p in range(passes):
            for i, request in enumerate(requests):
                k = (i + p) % len(names)
                for name in names[k:] + names[:k]:
                    _use(schedules[name])
                    if not replayed:
                        engine.query_cache._vectors.clear()
                    started, cpu_started = time.perf_counter(), time.process_time()
                    engine.search(request)
                    cpu[name].append((time.process_time() - cpu_started) * 1000)
                    wall[name].append((time.perf_counter() - started) * 1000)
    finally:
        _use(schedules["split scans"])
        engine.close()
    load.append(os.getloadavg()[0])
    rows = [
        [
            name,
            *(f"{percentile(wall[name], q):.2f}" for q in (0.5, 0.95)),
            *(f"{percentile(cpu[name], q):.2f}" for q in (0.5, 0.95)),
        ]
        for name in names
    ]
    return rows, f"{load[0]:.1f} at the start, {load[1]:.1f} at the end"


def main() -> None:
    """Parse arguments, run both parts, print (and with --write record) the figures."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--passes", type=int, default=2)
    parser.add_argument("--write", action="store_true", help="write docs/benchmarks.md")
    args = parser.parse_args()
    questions = [q for q, _ in metaqa_questions(args.queries)]
    body = []
    for replayed, part in ((True, "replayed"), (False, "end to end")):
        rows, load = run_part(questions, args.passes, replayed)
        text = table(["schedule", "wall p50", "wall p95", "CPU p50", "CPU p95"], rows)
        body.append(f"{part} ({len(questions)} questions x {args.passes} passes, load {load}):")
        body.append(text)
        print(body[-2])
        print(text, flush=True)
    if args.write:
        command = (
            f"python scripts/bench_schedule.py --queries {args.queries} --passes {args.passes}"
        )
        note = "Times in ms; CPU is the process's (all threads) during each search."
        write_section("schedule", "Leg schedules on 2 cores", command, "\n\n".join([*body, note]))


if __name__ == "__main__":
    main()
