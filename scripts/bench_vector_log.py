"""Write-then-search on SQLite: how long the first search after a write takes, with the
vector index kept in step by key (default) and with the old behaviour (every write
reloads the matrix and rebuilds the HNSW graph), in one run.

Usage: python scripts/bench_vector_log.py [--rows 50000] [--writes 20]

Rows are objects embedded by the deterministic FakeEmbedder (384 dims) so the set-up is
fast; the HNSW threshold is lowered to ``--rows`` / 2 so the graph is in play (the
default threshold is 400,000 rows). Each write adds one object and embeds it; the timed
search then asks for that object's own vector and must return it first.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
from benchdoc import table, write_section

from kgsearch.engine import Engine
from kgsearch.model import Kind, ObjectIn
from kgsearch.store.sqlite import SQLiteStore
from kgsearch.testing import FakeEmbedder


def run(rows: int, writes: int) -> str:
    """Both modes over one database; returns the markdown body."""
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        path = str(Path(tmp) / "kg.db")
        store = SQLiteStore(path, ann_min_rows=rows // 2)
        engine = Engine(store, embedder=FakeEmbedder(384))
        started = time.perf_counter()
        for start in range(0, rows, 10_000):
            engine.add_objects(
                [
                    ObjectIn(type="Thing", key=f"k{i}", properties={"name": f"thing {i}"})
                    for i in range(start, min(rows, start + 10_000))
                ]
            )
        engine.embed_pending(batch_size=1000)
        setup = time.perf_counter() - started
        for label, reload in (("by key (default)", False), ("reload on every write", True)):
            store.wait_for_index("default", Kind.OBJECT, 600)
            times, found, reloads = [], 0, store.vectors_cache.reloads
            for n in range(writes):
                (new,) = engine.add_objects([ObjectIn(type="Thing", key=f"{label} {n}")])
                engine.embed_pending()
                if reload:  # what every write did before: the next search loads anew
                    store.vectors_cache.clear()
                (row,) = store.db.all("SELECT vector FROM objects WHERE id = ?", (new.id,))
                vector = np.frombuffer(row["vector"], dtype=np.float32).copy()
                t = time.perf_counter()
                hits = store.vector_search("default", Kind.OBJECT, vector, limit=10)
                times.append((time.perf_counter() - t) * 1000)
                # first, or tied first with a row of the very same vector (the fake
                # embedder gives texts that differ only in a number the same vector)
                found += bool(hits) and (hits[0][0] == new.id or hits[0][1] >= 0.9999)
            reloads = store.vectors_cache.reloads - reloads
            entry = store.vectors_cache.entry(store.db, "default", Kind.OBJECT)
            times.sort()
            out.append(
                [
                    label,
                    f"{statistics.median(times):.1f}",
                    f"{times[int(len(times) * 0.95) - 1]:.1f}",
                    f"{max(times):.1f}",
                    f"{found}/{writes}",
                    str(reloads),
                    "ready" if entry.ann is not None and entry.ann.ready else "building",
                ]
            )
        engine.close()
    return (
        f"{rows:,} objects (FakeEmbedder, 384 dims; set-up {setup:.0f} s), HNSW from "
        f"{rows // 2:,} rows, {writes} writes of one object each, the first search after "
        "each write timed (ms). With reloads, searches answer from the int8 scan while "
        "the graph rebuilds in the background.\n\n"
        + table(
            [
                "index after a write",
                "p50",
                "p95",
                "max",
                "new row first (or an identical vector)",
                "reloads",
                "HNSW at the end",
            ],
            out,
        )
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=50_000)
    parser.add_argument("--writes", type=int, default=20)
    args = parser.parse_args()
    body = run(args.rows, args.writes)
    print(body)
    write_section(
        "vector-log",
        "SQLite write-then-search (vector index kept in step by key)",
        f"python scripts/bench_vector_log.py --rows {args.rows} --writes {args.writes}",
        body,
    )


if __name__ == "__main__":
    main()
