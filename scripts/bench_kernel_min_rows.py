"""Do search responses change when the scan's 4-bit kernel starts at fewer rows?

Usage: python scripts/bench_kernel_min_rows.py [--questions 1000] [--base 20000]
       [--rows 5000 10000]

Below ``KERNEL_MIN_ROWS`` (20,000 until issue 34, 5,000 since) a kind's rows are
scanned in int8 only; from it the 4-bit kernel's first pass picks the candidates
re-scored in float32. This script searches
private copies (never the shared files) of the stores whose kinds lie between 5,000 and
20,000 rows: the demo's sample graph (``bench-data/load-sample.db``, built from
data/sample/metaqa-movies.jsonl: 7,155 objects, 11,666 relationships; MetaQA dev
questions, default and debug requests) and SciFact (5,183 chunks; its train claims, the
``chunks`` recipe and the default search), once with the threshold ``--base`` and once
with each of ``--rows``, and prints how many responses differ (timings left out), and how:
in anything but a score, or in scores only (by how much at most). A float32 score
re-computed for a different set of candidates may differ in its last bits: the matrix
product's rounding depends on where the row sits among them. Then, per kind, the CPU
time of one scan of its rows (top 30) with and without the kernel, taking turns round by
round, and whether their top 30 positions agree.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_quality import metaqa_questions
from bench_replica import claims
from dump_responses import _clean

from kgsearch import Engine, Kind, SearchRequest, connect
from kgsearch.embed import create_embedder
from kgsearch.store import ann

DATA = Path(__file__).resolve().parent.parent / "bench-data"


def copy(source: Path, folder: Path) -> Path:
    """A private copy of ``source`` (SQLite's backup: consistent while others write)."""
    target = folder / source.name
    with sqlite3.connect(f"file:{source}?mode=ro", uri=True) as src, sqlite3.connect(target) as dst:
        src.backup(dst)
    return target


def differences(before: Any, after: Any) -> tuple[int, float]:
    """(fields that differ other than a float score, the largest score difference)."""
    if isinstance(before, dict) and isinstance(after, dict) and before.keys() == after.keys():
        found = [differences(before[k], after[k]) for k in before]
        return sum(f for f, _ in found), max((d for _, d in found), default=0.0)
    if isinstance(before, list) and isinstance(after, list) and len(before) == len(after):
        found = [differences(a, b) for a, b in zip(before, after, strict=True)]
        return sum(f for f, _ in found), max((d for _, d in found), default=0.0)
    if isinstance(before, float) and isinstance(after, float):
        return 0, abs(before - after)
    return int(before != after), 0.0


def responses(path: Path, min_rows: int, asks: list[tuple[str, SearchRequest]]) -> list[str]:
    """Every response to ``asks`` with the kernel from ``min_rows`` rows, as JSON."""
    defaults = ann.Int8Scan.__init__.__kwdefaults__
    assert defaults is not None
    defaults["kernel_min_rows"] = min_rows
    try:
        engine = Engine(connect(str(path)), embedder=create_embedder("bundled"))
        for kind in Kind:
            getattr(engine.store, "wait_for_index", lambda *a, **k: True)("default", kind, 900)
        lines = [json.dumps(_clean(engine.search(r)), sort_keys=True) for _, r in asks]
        engine.close()
    finally:
        defaults["kernel_min_rows"] = ann.KERNEL_MIN_ROWS
    return lines


def scan_cpu(path: Path, kind: Kind, questions: list[str], rounds: int = 5) -> str:
    """One line: the CPU of a scan of ``kind``'s rows with and without the kernel."""
    engine = Engine(connect(str(path)), embedder=create_embedder("bundled"))
    store: Any = engine.store
    matrix = np.ascontiguousarray(store.vectors_cache.entry(store.db, "default", kind).matrix)
    queries = [np.asarray(engine.embedder.embed_query(q), dtype=np.float32) for q in questions]
    engine.close()
    scans = {
        "int8 codes": ann.Int8Scan(matrix, kernel_min_rows=None),
        "kernel": ann.Int8Scan(matrix, kernel_min_rows=1),
    }
    assert all(scan.wait(600) for scan in scans.values())
    same = sum(
        scans["int8 codes"].search(q, 30)[0].tolist() == scans["kernel"].search(q, 30)[0].tolist()
        for q in queries
    )
    cpu: dict[str, list[float]] = {name: [] for name in scans}
    loads: list[float] = []
    for _ in range(rounds):
        for name, scan in scans.items():
            started = time.process_time()
            for q in queries:
                scan.search(q, 30)
            cpu[name].append((time.process_time() - started) / len(queries) * 1000)
            loads.append(os.getloadavg()[0])
    cells = ", ".join(f"{name} {statistics.median(t):.3f}" for name, t in cpu.items())
    return (
        f"  {kind.value}s ({matrix.shape[0]:,} rows): CPU ms a scan, top 30 (median of {rounds} "
        f"rounds of {len(queries)}, load {min(loads):.1f}-{max(loads):.1f}): {cells}; same top "
        f"30 for {same} of {len(queries)}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--questions", type=int, default=1000)
    parser.add_argument("--base", type=int, default=20_000)
    parser.add_argument("--rows", type=int, nargs="+", default=[5_000, 10_000])
    args = parser.parse_args()
    metaqa = [q for q, _ in metaqa_questions(args.questions)]
    sets: dict[str, list[tuple[str, SearchRequest]]] = {
        "load-sample.db": [
            (q, SearchRequest(query=q, limit=10, **extra))
            for q in metaqa
            for extra in ({}, {"include_debug": True})
        ],
        "scifact.db": [
            (q, SearchRequest(query=q, limit=limit, **extra))
            for q in claims(args.questions)
            for limit, extra in ((5, {"recipe": "chunks"}), (10, {}))
        ],
    }
    kinds = {"load-sample.db": (Kind.OBJECT, Kind.RELATIONSHIP), "scifact.db": (Kind.CHUNK,)}
    with tempfile.TemporaryDirectory() as folder:
        for name, asks in sets.items():
            path = copy(DATA / name, Path(folder))
            started = time.process_time()
            before = responses(path, args.base, asks)
            for rows in args.rows:
                after = responses(path, rows, asks)
                differ = [
                    (q, a, b) for (q, _), a, b in zip(asks, before, after, strict=True) if a != b
                ]
                found = [differences(json.loads(a), json.loads(b)) for _, a, b in differ]
                other = [q for (q, _, _), (fields, _) in zip(differ, found, strict=True) if fields]
                print(
                    f"{name}: kernel from {rows:,} rows against {args.base:,}: "
                    f"{len(differ)} of {len(asks)} responses differ, {len(other)} of them in "
                    f"more than scores (largest score difference "
                    f"{max((d for _, d in found), default=0.0):.2g})"
                    + (f"; first: {other[0]!r}" if other else ""),
                    flush=True,
                )
            spent = time.process_time() - started
            print(f"  ({spent:.0f} s CPU, load {os.getloadavg()[0]:.1f})", flush=True)
            asked = list(dict.fromkeys(q for q, _ in asks))
            for kind in kinds[name]:
                print(scan_cpu(path, kind, asked), flush=True)


if __name__ == "__main__":
    main()
