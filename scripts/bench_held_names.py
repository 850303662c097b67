"""A unified search's name look-ups on SQLite: two table look-ups, one, or the held names.

Usage: python scripts/bench_held_names.py [--questions 300] [--write]

Opens the full MetaQA graph (``bench-data/metaqa-full.db``, built by bench_quality.py),
reads the held object names (``store/sqlite/held_names.py``: read time, rows, bytes),
then looks up each question's names three ways in turn (each first on every third
question), timing each (wall and thread CPU):

- ``two (53715a8)``: as a search did before: the name leg's ``objects_named`` per name,
  then the anchored leg's ``objects_named_many`` of the spans it tries, both on the
  table;
- ``one, table``: the search's one ``named_objects`` of all those names, on the table;
- ``one, held``: the same call answered by the held names (it reads the object epoch).

Every held answer is checked against the table's.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable
from typing import Any

from bench_quality import ensure_full_db, metaqa_questions
from benchdoc import table, write_section

from kgsearch.search.paths import span_names
from kgsearch.search.plan import make_plan
from kgsearch.search.request import SearchRequest
from kgsearch.store.sqlite import SQLiteStore

WAYS = ("two (53715a8)", "one, table", "one, held")


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _rss_mb() -> float:
    """The process's resident memory (Linux), MB."""
    with open("/proc/self/statm", encoding="ascii") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 1e6


def main() -> None:
    """Run the comparison; print it (and write docs/benchmarks.md with --write)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=300)
    parser.add_argument("--write", action="store_true", help="write docs/benchmarks.md")
    args = parser.parse_args()
    store = SQLiteStore(str(ensure_full_db()))
    load = [os.getloadavg()[0]]
    store.named_objects("default", ["warm up"])  # the reader connection, opened
    rss = _rss_mb()
    names = store.held_names.warm(store.db.reader())
    assert names is not None
    rss = _rss_mb() - rss
    held_fresh = store.held_names.fresh
    table_only: Callable[..., Any] = lambda *_: None  # noqa: E731

    def two(project: str, leg: list[str], spans: list[str]) -> Any:
        store.held_names.fresh = table_only  # type: ignore[method-assign]
        found = [store.objects_named(project, n, limit=30) for n in leg]
        return found, store.objects_named_many(project, spans, limit=5)

    def one(project: str, leg: list[str], spans: list[str], held: bool) -> Any:
        store.held_names.fresh = held_fresh if held else table_only  # type: ignore[method-assign]
        return store.named_objects(project, [*leg, *spans])

    ways: dict[str, Callable[[str, list[str], list[str]], Any]] = {
        WAYS[0]: two,
        WAYS[1]: lambda p, leg, spans: one(p, leg, spans, False),
        WAYS[2]: lambda p, leg, spans: one(p, leg, spans, True),
    }
    wall: dict[str, list[float]] = {w: [] for w in WAYS}
    cpu: dict[str, list[float]] = {w: [] for w in WAYS}
    equal = 0
    questions = [q for q, _ in metaqa_questions(args.questions)]
    for number, question in enumerate(questions):
        plan = make_plan(SearchRequest(query=question))
        leg = [n for n in plan.names if n]
        spans = span_names(question)
        answers: dict[str, Any] = {}
        order = WAYS[number % 3 :] + WAYS[: number % 3]
        for way in order:
            started, thread = time.perf_counter(), time.thread_time()
            answers[way] = ways[way]("default", leg, spans)
            cpu[way].append((time.thread_time() - thread) * 1000)
            wall[way].append((time.perf_counter() - started) * 1000)
        equal += answers[WAYS[1]] == answers[WAYS[2]]
    load.append(os.getloadavg()[0])
    held = table(
        ["objects", "read s", "MB (dicts, tuples, strings)", "RSS growth MB"],
        [[f"{names.rows:,}", f"{names.seconds:.2f}", f"{names.nbytes / 1e6:.1f}", f"{rss:.1f}"]],
    )
    rows = [
        [
            way,
            f"{statistics.median(wall[way]):.3f}",
            f"{_percentile(wall[way], 0.95):.3f}",
            f"{statistics.fmean(cpu[way]):.3f}",
        ]
        for way in WAYS
    ]
    body = (
        "Held object names of the full MetaQA graph (read in the background in a server; "
        "here at open):\n\n"
        f"{held}\n\n"
        f"{len(questions)} MetaQA questions, each one's names (the name leg's and the "
        "spans the anchored leg tries) looked up three ways in turn, each first on every "
        "third question (ms per search):\n\n"
        + table(["look-up", "p50 ms", "p95 ms", "CPU ms (mean)"], rows)
        + f"\n\nHeld answers equal to the table's: {equal} of {len(questions)}. "
        f"Load average (1 min) {load[0]:.1f} before, {load[1]:.1f} after.\n"
    )
    print(body)
    if args.write:
        write_section(
            "held-names",
            "SQLite name look-ups: one per search, from held names",
            f"python scripts/bench_held_names.py --questions {args.questions}",
            body,
        )


if __name__ == "__main__":
    main()
