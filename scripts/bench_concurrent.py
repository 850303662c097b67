"""Searches side by side in one process, before and after one change, in turns.

Usage: python scripts/bench_concurrent.py [--change inline|marks] [--store sample|metaqa]
       [--threads 2] [--chunks 12] [--chunk 100] [--write]

A server runs one search per core at a time (``kgsearch serve``: one request thread per
core and process). The two versions of ``--change`` take turns, chunk by chunk (ABBA),
in one process over the same warmed engine (the questions' vectors replayed as in
bench_search_cpu.py, every question asked once); ``--threads`` threads each run their
share of a chunk's questions, one search after another (``--threads 1``: searches
alone). The changes:

- ``inline``: whether a search beside another hands legs to the leg workers.
  ``before`` is :func:`kgsearch.search.legs._inline` as it was at 79f7451 (legs go to
  the workers beside another search too: the BM25 legs as one job, the anchored
  leg's link beside the legs); ``after`` is this checkout's (every leg inline).
- ``marks``: whether a search's freshness checks share one read
  (:func:`kgsearch.store.scope.read_scope` in the pipeline; ``before``: no scope, each
  check its own statement, as at a1026ea).

Printed and written (``--write``: section "concurrent-<change>-<store>-<threads>" of
docs/benchmarks.md): per version, the process CPU a search (mean over the chunks, and
the chunks' range) and searches a second, the load average at the start and end.
"""

from __future__ import annotations

import argparse
import os
import statistics
import threading
import time
from collections.abc import Callable
from contextlib import nullcontext
from typing import Any

import bench_load
from bench_quality import ensure_full_db, metaqa_questions
from benchdoc import table, write_section
from replay import replayed_engine

import kgsearch.search.legs as legs
import kgsearch.search.pipeline as pipeline
import kgsearch.store.scope as scope
from kgsearch import SearchRequest


def _handed_off(store: Any) -> bool:
    """``legs._inline`` at 79f7451: hand-offs whenever parallel legs are on."""
    return not legs._PARALLEL_LEGS or store.in_transaction


_INLINE = legs._inline
_SCOPE = scope.read_scope
CHANGES: dict[str, dict[str, Callable[[], None]]] = {
    "inline": {
        "before": lambda: setattr(legs, "_inline", _handed_off),
        "after": lambda: setattr(legs, "_inline", _INLINE),
    },
    "marks": {
        "before": lambda: setattr(pipeline, "read_scope", nullcontext),
        "after": lambda: setattr(pipeline, "read_scope", _SCOPE),
    },
}


def run_chunk(engine: Any, requests: list[SearchRequest], threads: int) -> tuple[float, float]:
    """(process CPU ms a search, searches a second) of ``requests`` over ``threads``."""

    def work(part: list[SearchRequest]) -> None:
        for request in part:
            engine.search(request)

    workers = [threading.Thread(target=work, args=(requests[i::threads],)) for i in range(threads)]
    cpu, wall = time.process_time(), time.perf_counter()
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    wall = time.perf_counter() - wall
    return (time.process_time() - cpu) * 1000 / len(requests), len(requests) / wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--change", choices=sorted(CHANGES), default="inline")
    parser.add_argument("--store", choices=["sample", "metaqa"], default="sample")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--chunks", type=int, default=12, help="chunks, the versions alternating")
    parser.add_argument("--chunk", type=int, default=100, help="questions a chunk")
    parser.add_argument("--write", action="store_true", help="write docs/benchmarks.md")
    args = parser.parse_args()
    n = args.chunks * args.chunk + 100
    if args.store == "metaqa":
        path, texts = str(ensure_full_db()), [q for q, _ in metaqa_questions(n)]
    else:
        path = str(bench_load.ROOT / "bench-data" / "load-sample.db")
        texts = bench_load.questions(n)
    engine = replayed_engine(path, texts)
    requests = [SearchRequest(query=q, limit=10) for q in texts]
    versions = CHANGES[args.change]
    for use in versions.values():  # warm both versions' paths on 50 questions each
        use()
        for request in requests[:50]:
            engine.search(request)
    requests = requests[100:]
    load = os.getloadavg()[0]
    seen: dict[str, list[tuple[float, float]]] = {name: [] for name in versions}
    for i in range(args.chunks):
        name = list(versions)[(i + i // 2) % 2]  # ABBA: neither version always first
        versions[name]()
        chunk = requests[i * args.chunk : (i + 1) * args.chunk]
        seen[name].append(run_chunk(engine, chunk, args.threads))
    versions["after"]()
    rows = []
    for name, runs in seen.items():
        cpu, rate = [c for c, _ in runs], [r for _, r in runs]
        rows.append(
            [
                name,
                f"{statistics.fmean(cpu):.2f} ({min(cpu):.2f}-{max(cpu):.2f})",
                f"{statistics.fmean(rate):.1f} ({min(rate):.1f}-{max(rate):.1f})",
            ]
        )
    body = (
        f"change {args.change}: {args.store}, {args.threads} thread(s) searching in one process, "
        f"{args.chunks} chunks of {args.chunk} questions, the versions taking turns; load "
        f"average {load:.1f} at the start, {os.getloadavg()[0]:.1f} at the end.\n\n"
        + table(["version", "process CPU ms a search (chunks' range)", "searches/s"], rows)
    )
    print(body)
    if args.write:
        command = (
            f"python scripts/bench_concurrent.py --change {args.change} --store {args.store} "
            f"--threads {args.threads} --chunks {args.chunks} --chunk {args.chunk}"
        )
        name = f"concurrent-{args.change}-{args.store}-{args.threads}"
        write_section(name, f"Change {args.change}, before and after", command, body)


if __name__ == "__main__":
    main()
