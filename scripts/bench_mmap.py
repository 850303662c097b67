"""``PRAGMA mmap_size`` on a store's connections, decided in one process: two engines on
the same file, one whose connections (the main one and each thread's reader) map the
file, one reading it through SQLite's page cache, the two taking turns question by
question, so the machine's load falls on each alike.

Usage: python scripts/bench_mmap.py [--store metaqa|sample] [--queries 500]
       [--passes 2] [--mmap-mib 1024]

The questions' vectors are replayed (scripts/replay.py), each engine is warmed as
``serve`` does and answers every question once before the timed passes. Printed per
engine: wall and process CPU p50/p95 per search (ms), the load average at the start and
the end, and the process's resident memory (anonymous and file-backed, from
/proc/self/status) after each engine was warmed and at the end.

Measured (2026-11-29, 500 questions x 2 passes, load 5-7, 1 GiB): MetaQA wall p50 /
p95 9.36 / 22.45 ms mapped against 9.35 / 23.49, CPU p50 / p95 9.17 / 12.85 against
9.21 / 12.68; the REST sample CPU 4.39 / 6.44 against 4.36 / 6.45; a second MetaQA run (load 8-9)
CPU p50 10.94 against 10.76, wall p50 13.04 against 13.08. Within noise, and
the mapped engine's warm-up took 470 MiB more file-backed resident memory (MetaQA):
not kept (see ``CACHE_PAGES_KIB`` in store/sqlite/connection.py).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_latency import percentile
from bench_stages import STORES, _questions
from replay import Replay

from kgsearch import Engine, Kind, SearchRequest, connect
from kgsearch.embed import create_embedder
from kgsearch.store.sqlite.connection import Connection


def _rss() -> str:
    """Anonymous and file-backed resident memory of this process, in MiB."""
    fields = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in ("RssAnon", "RssFile"):
            fields[name] = int(value.split()[0]) // 1024
    return f"anon {fields['RssAnon']} MiB, file {fields['RssFile']} MiB"


def _mapped(db: Connection, size: int) -> None:
    """Map the file on ``db`` and on each reader it opens from now on."""
    db.execute(f"PRAGMA mmap_size={size}")
    opened = db.reader

    def reader() -> Connection:
        conn = opened()
        if conn is not db and not getattr(conn, "_mapped", False):
            conn.execute(f"PRAGMA mmap_size={size}")
            conn._mapped = True  # type: ignore[attr-defined]
        return conn

    db.reader = reader  # type: ignore[method-assign]


def _engine(store: str, embedder: Any, mmap_size: int) -> Engine:
    engine = Engine(connect(str(STORES[store])), embedder=embedder)
    if mmap_size:
        _mapped(engine.store.db, mmap_size)  # type: ignore[attr-defined]
    for kind in (Kind.OBJECT, Kind.RELATIONSHIP):
        engine.store.wait_for_index("default", kind, 900)  # type: ignore[attr-defined]
    engine.warm()
    return engine


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--store", choices=sorted(STORES), default="metaqa")
    parser.add_argument("--queries", type=int, default=500)
    parser.add_argument("--passes", type=int, default=2)
    parser.add_argument("--mmap-mib", type=int, default=1024)
    args = parser.parse_args()
    texts = _questions(args.store, args.queries)
    real: Any = create_embedder("bundled")
    embedder: Any = Replay(real, dict(zip(texts, real.embed_queries(texts), strict=True)))
    engines: dict[str, Engine] = {}
    for name, size in (("page cache", 0), (f"mmap {args.mmap_mib} MiB", args.mmap_mib << 20)):
        engines[name] = _engine(args.store, embedder, size)
        print(f"{name}: warmed, {_rss()}", flush=True)
    requests = [SearchRequest(query=q, limit=10) for q in texts]
    for engine in engines.values():
        for request in requests:
            engine.search(request)
    names = list(engines)
    wall: dict[str, list[float]] = {n: [] for n in names}
    cpu: dict[str, list[float]] = {n: [] for n in names}
    load = [os.getloadavg()[0]]
    for p in range(args.passes):
        for i, request in enumerate(requests):
            k = (i + p) % 2
            for name in names[k:] + names[:k]:
                started, cpu_started = time.perf_counter(), time.process_time()
                engines[name].search(request)
                cpu[name].append((time.process_time() - cpu_started) * 1000)
                wall[name].append((time.perf_counter() - started) * 1000)
    load.append(os.getloadavg()[0])
    print(
        f"{args.store}: {len(requests)} questions x {args.passes} passes, "
        f"load {load[0]:.2f} at the start, {load[1]:.2f} at the end; at the end {_rss()}"
    )
    for name in names:
        print(
            f"  {name:16s} wall p50 {percentile(wall[name], 0.5):.2f} p95 "
            f"{percentile(wall[name], 0.95):.2f}  CPU p50 {percentile(cpu[name], 0.5):.2f} "
            f"p95 {percentile(cpu[name], 0.95):.2f}"
        )
    for engine in engines.values():
        engine.close()


if __name__ == "__main__":
    main()
