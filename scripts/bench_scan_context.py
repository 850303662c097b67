"""The 4-bit product inside real searches, against the same products in a loop.

Usage: python scripts/bench_scan_context.py [--store metaqa|sample] [--queries 300]
       [--pauses 0,1,2,5,10] [--write]

Issue 34's scan figures (``bench_scan_kernel.py``, ``bench_scan_parts.py --part steps``)
time one kernel's product many times in a row, so its codes (17 MB for MetaQA's
129,235 relationships, 6 MB for the 42,828 objects) stay in the processor's caches from
one call to the next. A search runs each kernel once, between 5 and 15 ms of other
work. This measures what that costs:

1. ``search``: unified searches (limit 10, the question's vector replayed as in
   bench_search_cpu.py, the engine warmed as ``serve`` does, one pass first to warm
   every cache), each kernel's product timed where it runs (``nbits.Kernel.scores``,
   thread CPU), beside the process CPU of the whole search;
2. the same products again, over the same query vectors, outside any search: back to
   back, then each after a pause of ``--pauses`` milliseconds (``time.sleep``: the
   process does nothing, other tenants of the machine run), then each after this
   thread reads 64 MB of other memory;
3. the memory read bandwidth of one thread and of two (numpy sums over 512 MB).

Printed and written (``--write``: section "scan-context-<store>" of docs/benchmarks.md): thread
CPU a product p50 / mean (µs) per case and kind, the products' share of a search's
process CPU, the bandwidths, and the load average at the start and end.
"""

from __future__ import annotations

import argparse
import os
import statistics
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from typing import Any

import numpy as np
from bench_latency import percentile
from bench_load import questions as sample_questions
from bench_quality import DATA, metaqa_questions
from benchdoc import table, write_section
from replay import replayed_engine

from kgsearch import SearchRequest
from kgsearch.store import nbits

STORES = {"metaqa": DATA / "metaqa-full.db", "sample": DATA / "load-sample.db"}
OTHER_MB = 64


def in_searches(engine: Any, texts: list[str]) -> tuple[dict[int, Any], dict[int, list[Any]], Any]:
    """(kernel by rows, the query vectors each was called with, per-kernel thread CPU
    lists and the searches' process CPU) over one timed pass of ``texts``."""
    kernels: dict[int, Any] = {}
    queries: dict[int, list[Any]] = defaultdict(list)
    cpu: dict[int, list[float]] = defaultdict(list)
    record = False
    real = nbits.Kernel.scores

    def scores(self: Any, query: Any) -> Any:
        started = time.thread_time()
        out = real(self, query)
        if record:
            cpu[self.rows].append(time.thread_time() - started)
            kernels[self.rows] = self
            queries[self.rows].append(np.array(query, copy=True))
        return out

    nbits.Kernel.scores = scores  # type: ignore[method-assign]
    try:
        requests = [SearchRequest(query=q, limit=10) for q in texts]
        for request in requests:  # warm every cache
            engine.search(request)
        record = True
        searches = []
        for request in requests:
            started = time.process_time()
            engine.search(request)
            searches.append(time.process_time() - started)
    finally:
        nbits.Kernel.scores = real  # type: ignore[method-assign]
    return kernels, queries, (cpu, searches)


def replayed(kernel: Any, queries: list[Any], before: Callable[[], object]) -> list[float]:
    """Thread CPU of each product of ``queries``, ``before`` run ahead of each."""
    out = []
    for query in queries:
        before()
        started = time.thread_time()
        kernel.scores(query)
        out.append(time.thread_time() - started)
    return out


def bandwidth(threads: int) -> float:
    """GB/s of ``threads`` threads summing their share of 512 MB (best of 3)."""
    data = np.ones(512 * 2**20 // 8)
    parts = np.array_split(data, threads)
    best = 0.0
    for _ in range(3):
        workers = [threading.Thread(target=part.sum) for part in parts]
        started = time.perf_counter()
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
        best = max(best, data.nbytes / (time.perf_counter() - started) / 1e9)
    return best


def us(values: list[float]) -> str:
    """p50 / mean in microseconds."""
    return f"{percentile(values, 0.5) * 1e6:.0f} / {statistics.fmean(values) * 1e6:.0f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--store", choices=sorted(STORES), default="metaqa")
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--pauses", default="0,1,2,5,10", help="ms, comma-separated")
    parser.add_argument("--write", action="store_true", help="write docs/benchmarks.md")
    args = parser.parse_args()
    load = os.getloadavg()[0]
    if args.store == "metaqa":
        texts = [q for q, _ in metaqa_questions(args.queries)]
    else:
        texts = sample_questions(args.queries)
    engine = replayed_engine(str(STORES[args.store]), texts)
    kernels, queries, (cpu, searches) = in_searches(engine, texts)
    if not kernels:
        raise SystemExit(f"no 4-bit kernel ran on {args.store}: too few rows for one?")
    other = np.ones(OTHER_MB * 2**20 // 8)
    cases: list[tuple[str, Callable[[], object]]] = [
        (f"after a pause of {ms} ms" if ms else "back to back", _pause(ms))
        for ms in (float(p) for p in args.pauses.split(","))
    ]
    cases.append((f"after reading {OTHER_MB} MB of other memory", other.sum))
    kinds = sorted(kernels)
    rows = [["in unified searches", *(us(cpu[k]) for k in kinds)]]
    for label, before in cases:
        rows.append([label, *(us(replayed(kernels[k], queries[k], before)) for k in kinds)])
    products = sum(statistics.fmean(cpu[k]) for k in kinds)
    search = statistics.fmean(searches)
    one, two = bandwidth(1), bandwidth(2)
    end = os.getloadavg()[0]
    body = (
        f"{args.store}, {len(texts)} questions, one 4-bit product per kernel and search "
        f"(thread CPU, p50 / mean µs); load average {load:.1f} at the start, {end:.1f} "
        f"at the end.\n\n"
        + table(["case", *(f"{k:,} rows" for k in kinds)], rows)
        + f"\n\nA search's process CPU: mean {search * 1e3:.2f} ms, of which the products "
        f"{products * 1e3:.2f} ms ({products / search:.0%}). Memory read bandwidth "
        f"(numpy sums over 512 MB): {one:.1f} GB/s one thread, {two:.1f} GB/s two."
    )
    print(body)
    if args.write:
        command = "python scripts/bench_scan_context.py"
        command += f" --store {args.store} --queries {args.queries}"
        title = "The 4-bit product inside searches and in a loop"
        write_section(f"scan-context-{args.store}", title, command, body)


def _pause(ms: float) -> Callable[[], object]:
    return (lambda: time.sleep(ms / 1000)) if ms else (lambda: None)


if __name__ == "__main__":
    main()
