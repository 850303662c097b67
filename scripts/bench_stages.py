"""CPU of the stages after the legs, per search, on a warm engine: fusion, hydration,
reranking, the response, and the row reads (``Rows`` and the SQLite reads under it).

Usage: python scripts/bench_stages.py [--store metaqa|sample] [--queries 1000]

Each stage function is wrapped to add its calling thread's CPU time
(``time.thread_time``) to a per-stage total; a stage that runs inside another is
counted in both (``Rows.*`` runs inside the legs and inside ``hydrate``;
``SQLiteReads._get`` inside ``Rows.*``). The search's own CPU is the process's
(``time.process_time``: every thread). The questions' vectors are replayed
(scripts/replay.py), ``Engine.warm`` runs as ``serve`` does, and one pass over the
questions warms every cache before the timed pass. Then the collector: the objects
generation 2 holds and the CPU of one full collection. Run it once with each
``PYTHONPATH`` (the before and after sources), alternating, to compare versions: a
stage missing from a version prints as 0.

Printed: per stage, the mean CPU per search in microseconds and the share of the
search's process CPU; the load average at the start and the end.

Measured (2026-11-29, load 5-9 from other work, so compare shares and rounds; before =
83f275e, after = the SQLite reads decoding tuples by position and caching tuples), mean
us a search, two processes each, alternating:

- MetaQA, 1,000 questions (most rows not cached: the row cache holds 4,096 a kind):
  ``SQLiteReads._get`` 893-1141 before, 776-950 after; collections 223-250 us a search
  before, 67-95 after; a full collection after the pass 74-114 ms before, 12-24 after
  (generation 2: 47-67k objects before, 25-28k after).
- MetaQA, 300 questions asked again (every row cached): ``_get`` 105-121 before,
  254-380 after (each cached row is decoded again, 5-9 us); collections 26-36 us a
  search before, 22-33 after; a full collection 27-42 ms before, 5-7 after.
- The REST sample graph, 1,000 questions: ``_get`` 351-393 before, 402-526 after;
  collections 53-88 us a search before, 22-42 after; a full collection 51-77 ms before,
  7-10 after.
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_latency import percentile
from bench_load import questions as sample_questions
from bench_quality import metaqa_questions
from replay import replayed_engine

import kgsearch.search.pipeline as pipeline
from kgsearch import Engine, SearchRequest
from kgsearch.search.rows import Rows
from kgsearch.store.sqlite.reads import SQLiteReads

DATA = Path(__file__).resolve().parent.parent / "bench-data"
STORES = {"metaqa": DATA / "metaqa-full.db", "sample": DATA / "load-sample.db"}

_spent: dict[str, float] = {}


def _wrap(owner: Any, name: str, label: str) -> None:
    """Count ``owner.name``'s thread CPU under ``label`` (nothing when it is missing)."""
    inner = owner.__dict__.get(name) if isinstance(owner, type) else getattr(owner, name, None)
    if inner is None:
        return

    def timed(*args: Any, **kwargs: Any) -> Any:
        started = time.thread_time()
        try:
            return inner(*args, **kwargs)
        finally:
            _spent[label] = _spent.get(label, 0.0) + time.thread_time() - started

    setattr(owner, name, timed)


def _instrument() -> None:
    for name, label in (
        ("_fuse", "fusion (pipeline._fuse)"),
        ("hydrate", "hydrate"),
        ("_rerank", "rerank (pipeline._rerank)"),
        ("respond", "respond"),
    ):
        _wrap(pipeline, name, label)
    for name in ("objects", "relationships", "chunks", "named", "by_key"):
        _wrap(Rows, name, f"Rows.{name}")
    for name in ("_get", "_decoded", "_read"):
        _wrap(SQLiteReads, name, f"SQLiteReads.{name}")


_collections: dict[int, list[float]] = {0: [], 1: [], 2: []}
_collecting: list[float] = []


def _on_collect(phase: str, info: dict[str, int]) -> None:
    """Note each collection's CPU (the collecting thread's) by generation."""
    if phase == "start":
        _collecting[:] = [time.thread_time()]
    elif _collecting:
        _collections[info["generation"]].append(time.thread_time() - _collecting[0])


def _engine(store: str, texts: list[str]) -> Engine:
    engine: Engine = replayed_engine(str(STORES[store]), texts)
    return engine


def _questions(store: str, n: int) -> list[str]:
    if store == "metaqa":
        return [q for q, _ in metaqa_questions(n)]
    return sample_questions(n)


def _collector() -> tuple[int, float]:
    """(objects generation 2 holds, CPU ms of one full collection)."""
    held = len(gc.get_objects(generation=2))
    started = time.process_time()
    gc.collect()
    return held, (time.process_time() - started) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--store", choices=sorted(STORES), default="metaqa")
    parser.add_argument("--queries", type=int, default=1000)
    args = parser.parse_args()
    texts = _questions(args.store, args.queries)
    engine = _engine(args.store, texts)
    requests = [SearchRequest(query=q, limit=10) for q in texts]
    held_after_warm, _ = _collector()
    for request in requests:
        engine.search(request)
    held_after_pass, collect_ms = _collector()
    _instrument()
    gc.callbacks.append(_on_collect)
    load = [os.getloadavg()[0]]
    cpu: list[float] = []
    search: Callable[[SearchRequest], Any] = engine.search
    for request in requests:
        started = time.process_time()
        search(request)
        cpu.append((time.process_time() - started) * 1e6)
    load.append(os.getloadavg()[0])
    gc.callbacks.remove(_on_collect)
    engine.close()
    n = len(requests)
    total = sum(cpu)
    print(f"{args.store}: {n} questions, load {load[0]:.2f} at the start, {load[1]:.2f} at the end")
    print(
        f"search process CPU: mean {total / n:.0f} us, p50 {percentile(cpu, 0.5):.0f}, "
        f"p95 {percentile(cpu, 0.95):.0f}"
    )
    for label in sorted(_spent):
        mean = _spent[label] * 1e6 / n
        print(f"  {label:28s} {mean:7.0f} us  {100 * mean * n / total:5.1f} %")
    for generation, spent in _collections.items():
        print(
            f"  collections of generation {generation}: {len(spent)}, "
            f"{sum(spent) * 1e6 / n:.0f} us a search"
        )
    print(
        f"gen 2 objects: {held_after_warm} after warm, {held_after_pass} after one pass; "
        f"a full collection then: {collect_ms:.1f} ms CPU"
    )


if __name__ == "__main__":
    main()
