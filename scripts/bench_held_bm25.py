"""SQLite BM25 legs from the held postings against FTS5, side by side in one process.

Usage: python scripts/bench_held_bm25.py [--questions 300] [--limit 30] [--write]

Opens the full MetaQA graph (``bench-data/metaqa-full.db``, built by bench_quality.py),
reads each kind's held postings (``store/sqlite/held_lexical.py``: build time and
bytes), then runs every question's BM25 leg on objects and relationships twice in
turn, from the held postings and by FTS5 as before them (the planner of
``lexical.py``), timing each call (wall and process CPU). Each held result is checked
against FTS5's own ``bm25()`` of the same match (an OR of the words; an AND when all
are frequent), score for score; how many result lists differ from the FTS5 path's is
counted too (its planner re-scores only the rows its rare words pick).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from typing import Any

from bench_quality import ensure_full_db, metaqa_questions
from benchdoc import table, write_section

from kgsearch.model import Kind
from kgsearch.store.sqlite import SQLiteStore, lexical
from kgsearch.store.sqlite.held_lexical import Postings
from kgsearch.store.values import query_terms

KINDS = (Kind.OBJECT, Kind.RELATIONSHIP)


def plain(store: SQLiteStore, postings: Postings, kind: Kind, terms: list[str], limit: int) -> Any:
    """FTS5's bm25() of the words as the held path matches them, joined as the store does."""
    stems = [store.lexical._stems(store.db.reader(), [t])[t] for t in terms]
    frequent = max(lexical._FREQUENT_FLOOR, int(postings.n_rows * lexical._FREQUENT_SHARE))
    both = len(terms) > 1 and all(len(s) == 1 and postings.df(s[0]) > frequent for s in stems)
    fts = f"{kind.table}_fts"
    valid = (
        " AND (t.valid_from IS NULL OR t.valid_from <= ?)"
        " AND (t.valid_to IS NULL OR t.valid_to > ?)"
        if kind is Kind.RELATIONSHIP
        else ""
    )
    now = time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime())
    rows = store.db.reader().all(
        f"SELECT t.id, -bm25({fts}) FROM {fts} JOIN {kind.table} t ON t.rowid = {fts}.rowid "
        f"WHERE {fts} MATCH ? AND t.project = 'default' AND t.deleted_at IS NULL{valid} "
        f"ORDER BY bm25({fts}), t.rowid LIMIT ?",
        (
            (" AND " if both else " OR ").join(f'"{t}"' for t in terms),
            *((now, now) if valid else ()),
            limit,
        ),
    )
    return [(r[0], r[1]) for r in rows]


def percentile(values: list[float], q: float) -> float:
    """The q-quantile (0..1) by nearest rank."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> None:
    """Run the comparison; print it (and write docs/benchmarks.md with --write)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=300)
    parser.add_argument("--limit", type=int, default=30, help="rows per leg (30: the default)")
    parser.add_argument("--write", action="store_true", help="write docs/benchmarks.md")
    args = parser.parse_args()
    store = SQLiteStore(str(ensure_full_db()))
    db = store.db.reader()
    load = [os.getloadavg()[0]]
    built: list[list[object]] = []
    held: dict[Kind, Postings] = {}
    for kind in KINDS:
        postings = store.lexical.held.warm(db, kind)
        assert postings is not None and postings.owners is not None
        held[kind] = postings
        terms = sum(sys.getsizeof(t) + 100 for t in postings.terms)
        built.append(
            [
                kind.table,
                f"{postings.n_rows:,}",
                f"{len(postings.rows):,}",
                f"{len(postings.terms):,}",
                f"{postings.seconds:.2f}",
                f"{(postings.nbytes - postings.owners.nbytes) / 1e6:.1f}",
                f"{postings.owners.nbytes / 1e6:.1f}",
                f"{terms / 1e6:.1f}",
            ]
        )
    questions = [q for q, _ in metaqa_questions(args.questions)]
    times: dict[str, dict[Kind, list[float]]] = {"held": {}, "fts5": {}, "cpu held": {}}
    times["cpu fts5"] = {}
    exact = differ = 0
    found: dict[str, list[tuple[str, float]]] = {}
    fresh = store.lexical.held.fresh
    for number, question in enumerate(questions):
        for kind in KINDS:
            # the first to run stems the question's new words (cached for the other)
            for path in ("held", "fts5") if number % 2 else ("fts5", "held"):
                if path == "fts5":
                    store.lexical.held.fresh = lambda *_: None  # type: ignore[method-assign]
                cpu, wall = time.process_time(), time.perf_counter()
                hits = store.text_search("default", kind, question, limit=args.limit)
                wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
                store.lexical.held.fresh = fresh  # type: ignore[method-assign]
                times[path].setdefault(kind, []).append(wall * 1000)
                times["cpu " + path].setdefault(kind, []).append(cpu * 1000)
                found[path] = hits
            expected = plain(store, held[kind], kind, query_terms(question), args.limit)
            exact += found["held"] == expected
            differ += [i for i, _ in found["held"][:10]] != [i for i, _ in found["fts5"][:10]]
    load.append(os.getloadavg()[0])
    legs = len(questions) * len(KINDS)
    rows = [
        [
            kind.table,
            path,
            f"{statistics.median(v):.2f}",
            f"{percentile(v, 0.95):.2f}",
            f"{statistics.mean(times['cpu ' + path][kind]):.2f}",
        ]
        for path in ("fts5", "held")
        for kind, v in times[path].items()
    ]
    body = (
        "Held postings of the full MetaQA graph (read at open; in a server in the "
        "background, FTS5 answering meanwhile):\n\n"
        + table(
            [
                "index",
                "rows",
                "postings",
                "tokens",
                "read s",
                "postings MB",
                "owners MB",
                "token dict MB (approx.)",
            ],
            built,
        )
        + f"\n\n{len(questions)} MetaQA questions, one BM25 leg of {args.limit} rows per "
        "kind, FTS5 path and held postings in turn in one process, each first on every "
        "other question (the first stems the question's new words for both) (ms per "
        "leg):\n\n"
        + table(["index", "path", "p50 ms", "p95 ms", "CPU ms (mean)"], rows)
        + f"\n\nHeld results equal to FTS5's own bm25() of the match, ids and scores to the "
        f"bit: {exact} of {legs} legs. Top-10 lists that differ from the FTS5 path's "
        f"(its planner re-scores only the rows its rare words pick): {differ} of {legs}. "
        f"Load average (1 min) {load[0]:.1f} before, {load[1]:.1f} after."
    )
    print(body)
    if args.write:
        command = f"python scripts/bench_held_bm25.py --questions {args.questions}"
        write_section("held-bm25", "SQLite BM25 from held postings", command, body)


if __name__ == "__main__":
    main()
