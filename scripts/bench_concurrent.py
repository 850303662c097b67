"""Searches side by side in one process, with and without hand-offs to leg workers.

Usage: python scripts/bench_concurrent.py [--store sample|metaqa] [--threads 2]
       [--chunks 12] [--chunk 100] [--write]

A server runs one search per core at a time (``kgsearch serve``: one request thread per
core and process). Whether such a search hands legs to the leg workers
(:func:`kgsearch.search.legs._inline`) is the question: the two versions take turns,
chunk by chunk, in one process over the same warmed engine (the questions' vectors
replayed as in bench_search_cpu.py, every question asked once): ``handed off`` is
:func:`~kgsearch.search.legs._inline` as it was at 79f7451 (legs go to the workers beside
another search too: the BM25 legs as one job, the anchored leg's link beside the
legs), ``inline`` is this checkout's. ``--threads`` threads each run their share of a
chunk's questions, one search after another.

Printed and written (``--write``: section "concurrent" of docs/benchmarks.md): per
version, the process CPU a search (mean over the chunks, and the chunks' range) and
searches a second, the load average at the start and end.
"""

from __future__ import annotations

import argparse
import os
import statistics
import threading
import time
from typing import Any

import bench_load
from bench_quality import ensure_full_db, metaqa_questions
from benchdoc import table, write_section
from replay import replayed_engine

import kgsearch.search.legs as legs
from kgsearch import SearchRequest


def _handed_off(store: Any) -> bool:
    """``legs._inline`` at 79f7451: hand-offs whenever parallel legs are on."""
    return not legs._PARALLEL_LEGS or store.in_transaction


VERSIONS = {"handed off": _handed_off, "inline": legs._inline}


def run_chunk(engine: Any, requests: list[SearchRequest], threads: int) -> tuple[float, float]:
    """(process CPU ms a search, searches a second) of ``requests`` over ``threads``."""

    def work(part: list[SearchRequest]) -> None:
        for request in part:
            engine.search(request)

    workers = [
        threading.Thread(target=work, args=(requests[i::threads],)) for i in range(threads)
    ]
    cpu, wall = time.process_time(), time.perf_counter()
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    wall = time.perf_counter() - wall
    return (time.process_time() - cpu) * 1000 / len(requests), len(requests) / wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
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
    for version in VERSIONS.values():  # warm both versions' paths on 50 questions each
        legs._inline = version
        for request in requests[:50]:
            engine.search(request)
    requests = requests[100:]
    load = os.getloadavg()[0]
    seen: dict[str, list[tuple[float, float]]] = {name: [] for name in VERSIONS}
    for i in range(args.chunks):
        name = list(VERSIONS)[(i + i // 2) % 2]  # ABBA: neither version always first
        legs._inline = VERSIONS[name]
        chunk = requests[i * args.chunk : (i + 1) * args.chunk]
        seen[name].append(run_chunk(engine, chunk, args.threads))
    legs._inline = VERSIONS["inline"]
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
        f"{args.store}, {args.threads} threads searching side by side in one process, "
        f"{args.chunks} chunks of {args.chunk} questions, the versions taking turns; load "
        f"average {load:.1f} at the start, {os.getloadavg()[0]:.1f} at the end.\n\n"
        + table(["version", "process CPU ms a search (chunks' range)", "searches/s"], rows)
    )
    print(body)
    if args.write:
        command = (
            f"python scripts/bench_concurrent.py --store {args.store} --threads {args.threads} "
            f"--chunks {args.chunks} --chunk {args.chunk}"
        )
        write_section(f"concurrent-{args.store}", "Searches side by side", command, body)


if __name__ == "__main__":
    main()
