"""Write-then-search on SQLite: how long the first search after a write takes, with the
vector index kept in step by key (default) and with the old behaviour (every write
reloads the matrix and rebuilds the HNSW graph), in one run.

Usage: python scripts/bench_vector_log.py [--rows 50000] [--writes 20]
    [--kind object|relationship] [--by-key-only]

Rows are objects (or relationships, each between a pair of objects of its own)
embedded by the deterministic FakeEmbedder (384 dims) so the set-up is fast; the HNSW
threshold is lowered to ``--rows`` / 2 so the graph is in play (the default threshold is
400,000 rows). Each write adds one row and embeds it; the timed search then asks for
that row's own vector and must return it first. ``--by-key-only`` leaves out the old
behaviour (at 10^6 rows each of its writes would start a graph build of minutes).
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
from kgsearch.model import Kind, ObjectIn, RelationshipIn
from kgsearch.store.sqlite import SQLiteStore
from kgsearch.testing import FakeEmbedder


def _add(engine: Engine, kind: Kind, keys: range | list[int], ends: list[str]) -> list[str]:
    """Add rows of the kind, one per key (relationships: one per pair of ``ends``, the
    key numbering the pair); return their ids."""
    if kind is Kind.OBJECT:
        found = engine.add_objects(
            [ObjectIn(type="Thing", key=f"k{k}", properties={"name": f"thing {k}"}) for k in keys]
        )
        return [o.id for o in found]
    n = len(ends)
    added = engine.add_relationships(
        [
            RelationshipIn(
                type=f"rel_{k % 50}",
                source=ends[(k // n) % n],
                target=ends[k % n],
                label=f"link {k}",
            )
            for k in keys
        ]
    )
    return [r.id for r in added]


def run(rows: int, writes: int, kind: Kind = Kind.OBJECT, by_key_only: bool = False) -> str:
    """Both modes (or the default one) over one database; returns the markdown body."""
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        path = str(Path(tmp) / "kg.db")
        store = SQLiteStore(path, ann_min_rows=rows // 2)
        engine = Engine(store, embedder=FakeEmbedder(384))
        started = time.perf_counter()
        ends: list[str] = []
        if kind is Kind.RELATIONSHIP:
            # enough objects that every relationship joins a pair of its own
            side = int(rows**0.5) + 2
            made = engine.add_objects([ObjectIn(type="Thing", key=f"end {i}") for i in range(side)])
            ends = [o.id for o in made]
        for start in range(0, rows, 10_000):
            _add(engine, kind, range(start, min(rows, start + 10_000)), ends)
        engine.embed_pending(batch_size=1000)
        setup = time.perf_counter() - started
        modes = [("by key (default)", False), ("reload on every write", True)]
        for label, reload in modes[:1] if by_key_only else modes:
            built = time.perf_counter()
            store.wait_for_index("default", kind, 3600)
            build_wait = time.perf_counter() - built
            times, found, reloads = [], 0, store.vectors_cache.reloads
            for n in range(writes):
                (new,) = _add(engine, kind, [rows + (writes if reload else 0) + n], ends)
                engine.embed_pending()
                if reload:  # what every write did before: the next search loads anew
                    store.vectors_cache.clear()
                (row,) = store.db.all(f"SELECT vector FROM {kind.table} WHERE id = ?", (new,))
                vector = np.frombuffer(row["vector"], dtype=np.float32).copy()
                t = time.perf_counter()
                hits = store.vector_search("default", kind, vector, limit=10)
                times.append((time.perf_counter() - t) * 1000)
                # first, or tied first with a row of the very same vector (the fake
                # embedder gives texts that differ only in a number the same vector)
                found += bool(hits) and (hits[0][0] == new or hits[0][1] >= 0.9999)
            reloads = store.vectors_cache.reloads - reloads
            entry = store.vectors_cache.entry(store.db, "default", kind)
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
                    f"{build_wait:.0f}",
                ]
            )
        engine.close()
    return (
        f"{rows:,} {kind.table} (FakeEmbedder, 384 dims; set-up {setup:.0f} s), HNSW from "
        f"{rows // 2:,} rows, {writes} writes of one row each, the first search after "
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
                "s waited for the first HNSW build",
            ],
            out,
        )
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=50_000)
    parser.add_argument("--writes", type=int, default=20)
    parser.add_argument("--kind", choices=["object", "relationship"], default="object")
    parser.add_argument("--by-key-only", action="store_true")
    args = parser.parse_args()
    body = run(args.rows, args.writes, Kind(args.kind), args.by_key_only)
    flags = f" --kind {args.kind}" + (" --by-key-only" if args.by_key_only else "")
    print(body)
    write_section(
        "vector-log",
        "SQLite write-then-search (vector index kept in step by key)",
        f"python scripts/bench_vector_log.py --rows {args.rows} --writes {args.writes}{flags}",
        body,
    )


if __name__ == "__main__":
    main()
