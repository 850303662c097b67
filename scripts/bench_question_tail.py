"""What makes some unified searches slower than others, and a first-time question slower
than a repeated one: per-stage CPU of every search, by question and pass.

Usage: python scripts/bench_question_tail.py [--queries 300] [--passes 3] [--db PATH] [--write]

The full MetaQA graph (``bench-data/metaqa-full.db``), MetaQA questions as drawn by
bench_quality.py with their query vectors embedded once by this process and replayed
(as bench_ab.py does); ``Engine.warm`` as ``serve`` does, 20 questions of warm-up, then
``--passes`` passes over the questions. Legs run one after another
(``legs._PARALLEL_LEGS = False``), so each stage's CPU is the calling thread's
(``time.thread_time``) around its function: the vector and BM25 legs per kind, the one
name look-up, the anchored leg's linking, edge read and relation match, fusion,
hydration, response. Model calls (the anchored leg's rests of the question, relation
texts) and the stemming of words not met before (``LexicalStats._stems``) are timed apart,
and the SQLite statements counted.

Printed: each pass's CPU p50/p95 (with and without model calls), model calls, new-word
stemmings and statements; for the warm passes (2 and later), how well one pass's CPU
per question predicts the next's (correlation), and the stages of the slowest 10 % of
questions against the middle 10 % (by mean warm CPU; whole search and without the
vector scans), with the load average.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from bench_quality import ensure_full_db, metaqa_questions
from benchdoc import table, write_section

import kgsearch.search.anchor as anchor
import kgsearch.search.legs as legs
import kgsearch.search.pipeline as pipeline
from kgsearch import Engine, Kind, SearchRequest, connect
from kgsearch.embed import create_embedder
from kgsearch.store.sqlite import connection, lexical

_SCANS = ("vector:object", "vector:relationship")


class _Clock:
    """Thread CPU ms per stage of the current search."""

    def __init__(self) -> None:
        self.ms: dict[str, float] = {}
        self.counts: dict[str, int] = {}

    def add(self, stage: str, ms: float) -> None:
        self.ms[stage] = self.ms.get(stage, 0.0) + ms
        self.counts[stage] = self.counts.get(stage, 0) + 1


def _timed(clock: _Clock, stage: str | Callable[..., str], func: Callable[..., Any]) -> Any:
    def run(*args: Any, **kwargs: Any) -> Any:
        started = time.thread_time()
        try:
            return func(*args, **kwargs)
        finally:
            name = stage if isinstance(stage, str) else stage(*args, **kwargs)
            clock.add(name, (time.thread_time() - started) * 1000)

    return run


def _instrument(engine: Engine, clock: _Clock) -> None:
    """Wrap each stage's function (module attributes, the store's methods)."""
    for module, name, stage in (
        (legs, "look_up_names", "name look-up"),
        (anchor, "link_spans", "anchored: linking"),
        (anchor, "_match", "anchored: relation match"),
        (pipeline, "_fuse", "fusion"),
        (pipeline, "hydrate", "hydration"),
        (pipeline, "respond", "response"),
    ):
        setattr(module, name, _timed(clock, stage, getattr(module, name)))
    store: Any = engine.store
    store.typed_edges = _timed(clock, "anchored: edges", store.typed_edges)
    for method, label in (("vector_search", "vector"), ("text_search", "bm25")):
        setattr(
            store,
            method,
            _timed(
                clock,
                lambda _p, kind, *a, _l=label, **k: f"{_l}:{kind.value}",
                getattr(store, method),
            ),
        )
    stems = lexical.LexicalStats._stems

    def stemming(self: lexical.LexicalStats, db: Any, terms: list[str]) -> Any:
        new = any(t not in self._stem_cache for t in terms)
        started = time.thread_time()
        try:
            return stems(self, db, terms)
        finally:
            if new:
                clock.add("new-word stemming", (time.thread_time() - started) * 1000)

    lexical.LexicalStats._stems = stemming  # type: ignore[method-assign]
    for name in ("one", "all", "execute", "executemany"):
        run = getattr(connection.Connection, name)

        def counted(self: Any, *args: Any, _run: Any = run, **kwargs: Any) -> Any:
            clock.counts["statements"] = clock.counts.get("statements", 0) + 1
            return _run(self, *args, **kwargs)

        setattr(connection.Connection, name, counted)


def run(
    queries: int, passes: int, db: Path | None = None
) -> tuple[dict[str, list[dict[str, float]]], list[float], list[str]]:
    """Per question, per pass: each stage's ms (and ``total``, ``model``, counts); the
    load after each pass; what the store's row cache answered (if it has one) in each
    pass and holds at the end, with the process's resident memory."""
    real = create_embedder("bundled")
    questions = [q for q, _ in metaqa_questions(queries)]
    vectors = {q: real.embed_query(q) for q in questions}
    clock = _Clock()

    class Replay:
        """The questions' vectors as embedded once; other texts by the model, timed."""

        def __init__(self) -> None:
            self.model_id, self.dims = real.model_id, real.dims

        def __getattr__(self, name: str) -> Any:
            return _timed(clock, "model calls", getattr(real, name))

        def embed_query(self, text: str) -> Any:
            found = vectors.get(text)
            return found if found is not None else self.__getattr__("embed_query")(text)

    engine = Engine(connect(str(db or ensure_full_db())), embedder=Replay())
    for kind in (Kind.OBJECT, Kind.RELATIONSHIP):
        engine.store.wait_for_index("default", kind, 900)  # type: ignore[attr-defined]
    engine.warm()
    legs._PARALLEL_LEGS = False
    _instrument(engine, clock)
    for question in questions[:20]:
        engine.search(SearchRequest(query=question, limit=10))
    found: dict[str, list[dict[str, float]]] = {q: [] for q in questions}
    loads = [os.getloadavg()[0]]
    cache = getattr(engine.store, "row_cache", None)  # SQLite's decoded rows by id
    cached: list[str] = []
    for _ in range(passes):
        before = (cache.hits, cache.misses) if cache is not None else (0, 0)
        for question in questions:
            clock.ms, clock.counts = {}, {}
            started = time.thread_time()
            engine.search(SearchRequest(query=question, limit=10))
            row = dict(clock.ms)
            row["total"] = (time.thread_time() - started) * 1000
            row["model calls (n)"] = clock.counts.get("model calls", 0)
            row["statements (n)"] = clock.counts.get("statements", 0)
            found[question].append(row)
        loads.append(os.getloadavg()[0])
        if cache is not None:
            cached.append(f"{cache.hits - before[0]} / {cache.misses - before[1]}")
    notes = [f"resident memory at the end: {_rss_mb():.0f} MB"]
    if cache is not None:
        held = sum(len(rows) for _, rows in cache._spaces.values())
        notes.insert(
            0,
            "the store's row cache, hits / misses per pass: "
            + ", ".join(cached)
            + f"; {held} rows held at the end",
        )
    engine.close()
    return found, loads, notes


def _rss_mb() -> float:
    """The process's resident set now, in MB (Linux)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _p(values: list[float], q: float) -> float:
    return float(np.percentile(values, q))


def report(
    found: dict[str, list[dict[str, float]]], loads: list[float], notes: list[str]
) -> list[str]:
    """The printed (and written) text."""
    rows = []
    for n in range(len(next(iter(found.values())))):
        runs = [r[n] for r in found.values()]
        totals = [r["total"] for r in runs]
        bare = [r["total"] - r.get("model calls", 0.0) for r in runs]
        rows.append(
            [
                str(n + 1),
                f"{_p(totals, 50):.2f} / {_p(totals, 95):.2f}",
                f"{_p(bare, 50):.2f} / {_p(bare, 95):.2f}",
                f"{sum(r['model calls (n)'] for r in runs):.0f} / "
                f"{sum(r.get('model calls', 0.0) for r in runs):.0f}",
                f"{sum(1 for r in runs if 'new-word stemming' in r)} / "
                f"{sum(r.get('new-word stemming', 0.0) for r in runs):.1f}",
                f"{sum(r['statements (n)'] for r in runs):.0f}",
            ]
        )
    lines = [
        "Per pass (thread CPU ms a search, serial legs):",
        "",
        table(
            [
                "pass",
                "CPU p50 / p95",
                "without model calls p50 / p95",
                "model calls: count / CPU ms",
                "searches stemming new words / CPU ms",
                "statements",
            ],
            rows,
        ),
    ]
    warm = {q: runs[1:] for q, runs in found.items()}
    if len(next(iter(warm.values()))) >= 2:

        def scanless(r: dict[str, float]) -> float:
            return r["total"] - sum(r.get(s, 0.0) for s in _SCANS)

        a = [runs[0]["total"] for runs in warm.values()]
        b = [runs[1]["total"] for runs in warm.values()]
        c = [scanless(runs[0]) for runs in warm.values()]
        d = [scanless(runs[1]) for runs in warm.values()]
        lines += [
            "",
            f"Warm passes 2 and 3, one question's CPU against its own in the next pass: "
            f"correlation {np.corrcoef(a, b)[0, 1]:.2f} (whole search), "
            f"{np.corrcoef(c, d)[0, 1]:.2f} (without the two vector scans).",
        ]
    mean = {q: statistics.mean(r["total"] for r in runs) for q, runs in warm.items()}
    order = sorted(mean, key=mean.__getitem__)
    n = len(order)
    slow, middle = order[-max(1, n // 10) :], order[int(n * 0.45) : max(int(n * 0.55), 1)]

    def stage_means(group: list[str]) -> dict[str, float]:
        names = {k for q in group for r in warm[q] for k in r if not k.endswith("(n)")}
        return {k: statistics.mean(r.get(k, 0.0) for q in group for r in warm[q]) for k in names}

    notes_text = "; ".join(notes)
    s, m, every = stage_means(slow), stage_means(middle), stage_means(order)
    stages = sorted(every, key=lambda k: -every[k])
    lines += [
        "",
        f"Warm passes, the slowest 10 % of questions ({len(slow)}) against the middle "
        f"10 % ({len(middle)}), by mean warm CPU, and all of them: mean ms a search per "
        "stage.",
        "",
        table(
            ["stage", "all", "slowest 10 %", "middle 10 %", "difference"],
            [
                [
                    k,
                    f"{every[k]:.2f}",
                    f"{s.get(k, 0.0):.2f}",
                    f"{m.get(k, 0.0):.2f}",
                    f"{s.get(k, 0.0) - m.get(k, 0.0):+.2f}",
                ]
                for k in stages
            ],
        ),
        "",
        "Slowest questions (mean warm CPU ms): "
        + "; ".join(f"{q!r} {mean[q]:.1f}" for q in order[-5:][::-1]),
        "",
        "Load average (1 min) at the start and after each pass: "
        + ", ".join(f"{x:.1f}" for x in loads)
        + ".",
        "",
        notes_text[:1].upper() + notes_text[1:] + ".",
    ]
    return lines


def main() -> None:
    """Parse arguments, run, print and (with --write) record."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--passes", type=int, default=3)
    parser.add_argument("--write", action="store_true", help="write docs/benchmarks.md")
    parser.add_argument(
        "--db", type=Path, help="the MetaQA store (default: bench-data/metaqa-full.db)"
    )
    args = parser.parse_args()
    if args.queries < 10 or args.passes < 3:
        parser.error("--queries at least 10, --passes at least 3")
    found, loads, notes = run(args.queries, args.passes, args.db)
    lines = report(found, loads, notes)
    print("\n".join(lines))
    if args.write:
        command = (
            f"python scripts/bench_question_tail.py --queries {args.queries} --passes {args.passes}"
        )
        write_section(
            "question-tail",
            "Speed: which searches are slow, and what a first-time question pays",
            command,
            "\n".join(lines),
        )
    print(json.dumps({"loads": loads}))


if __name__ == "__main__":
    main()
