"""The SQLite statements of a unified search: which, how many a search, time each.

Usage: python scripts/bench_statements.py [--questions 150] [--passes 2]

Opens the full MetaQA graph (``bench-data/metaqa-full.db``, built by bench_quality.py),
embeds the questions once, reads the held indexes (``wait_for_index``), searches every
question once to warm up, waits for background reads, then counts and times every
statement the searches run (``Connection.all`` and ``Connection.one``, the fetch
included), with the legs in the calling thread so that no statement waits for
another's lock. Statements that differ only in their number of ``?`` are counted as
one. Run it with ``PYTHONPATH`` pointing at another version's ``src`` to compare.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_quality import ensure_full_db, metaqa_questions

import kgsearch.search.legs as legs
from kgsearch import Engine, Kind, SearchRequest, connect
from kgsearch.embed import create_embedder
from kgsearch.store.sqlite import connection


def _shape(sql: str) -> str:
    """A statement with its runs of ``?`` folded and white space squeezed."""
    return re.sub(r"\s+", " ", re.sub(r"\?(,\s*\?)+", "?,..", sql))


def main() -> None:
    """Count and time the statements; print them, costliest first."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=150)
    parser.add_argument("--passes", type=int, default=2)
    args = parser.parse_args()
    legs._PARALLEL_LEGS = False
    embedder = create_embedder("bundled")
    questions = [q for q, _ in metaqa_questions(args.questions)]
    vectors = {q: embedder.embed_query(q) for q in questions}

    class Replay:
        """The bundled embedder, answering the questions from their vectors."""

        model_id, dims = embedder.model_id, embedder.dims

        def __getattr__(self, name: str) -> Any:
            return getattr(embedder, name)

        def embed_query(self, text: str) -> Any:
            return vectors[text] if text in vectors else embedder.embed_query(text)

    engine = Engine(connect(str(ensure_full_db())), embedder=Replay())
    for kind in (Kind.OBJECT, Kind.RELATIONSHIP):
        engine.store.wait_for_index("default", kind, 900)  # type: ignore[attr-defined]
    requests = [SearchRequest(query=q, limit=10) for q in questions]
    for request in requests:
        engine.search(request)
    time.sleep(5)  # background reads started by the warm-up end
    stats: dict[str, list[float]] = defaultdict(lambda: [0, 0.0])
    plain_all, plain_one = connection.Connection.all, connection.Connection.one

    def timed(run: Any) -> Any:
        def call(self: connection.Connection, sql: str, params: Sequence[Any] = ()) -> Any:
            started = time.perf_counter()
            try:
                return run(self, sql, params)
            finally:
                entry = stats[_shape(sql)]
                entry[0] += 1
                entry[1] += time.perf_counter() - started

        return call

    load = os.getloadavg()[0]
    connection.Connection.all = timed(plain_all)  # type: ignore[method-assign]
    connection.Connection.one = timed(plain_one)  # type: ignore[method-assign]
    started = time.perf_counter()
    for _ in range(args.passes):
        for request in requests:
            engine.search(request)
    n = len(requests) * args.passes
    wall = (time.perf_counter() - started) / n * 1000
    print(f"{n} searches, {wall:.2f} ms a search (legs serial), load {load:.1f}")
    print("a search | ms a search | µs a statement | statement")
    total = count = 0.0
    for sql, (calls, seconds) in sorted(stats.items(), key=lambda x: -x[1][1]):
        total, count = total + seconds, count + calls
        print(
            f"{calls / n:5.2f} | {seconds / n * 1000:6.3f} | {seconds / calls * 1e6:7.1f} | "
            f"{sql[:110]}"
        )
    print(f"statements a search {count / n:.2f}, their time {total / n * 1000:.3f} ms")


if __name__ == "__main__":
    main()
