"""What first-time questions embed besides themselves: the model calls a fresh process
makes while answering MetaQA questions it has not seen, by kind of text.

Usage: python scripts/bench_first_calls.py [--questions 1000] [--offset 0] [--db PATH]

A fresh process opens the full MetaQA store (``bench-data/metaqa-full.db``, or
``--db``), warms up as ``serve`` does (``Engine.warm``) and on 20 questions drawn
apart (dev questions from #5000), then answers ``--questions`` dev questions from
``--offset`` once each, unified search. The questions' own vectors are replayed (as
bench_ab.py does, scripts/replay.py); every other text the search embeds is embedded
by the bundled model, and each such model call is logged: its texts, their tokens and
its CPU time (``time.process_time``, every thread's). Texts are classed as the store's
relation texts (a type humanised: "has imdb rating"), the rest's words embedded with
the question (the anchored leg's prefetch), a rest of a question embedded mid-search
(its relation in doubt), or another word.

The process reads and, at exit, writes ``<db>.ann/texts.npz`` (the texts searches
embedded, search/saved_texts.py), as any process does: run it on a copy of the store,
once on other questions (``--offset 1000``) to measure a store that has served before.
Printed: the calls by class, per slice of 300 questions, with the load average.
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import time
import traceback
from collections import defaultdict
from pathlib import Path
from typing import Any

from bench_quality import ensure_full_db, metaqa_questions
from replay import Replay

from kgsearch import Engine, Kind, SearchRequest, connect
from kgsearch.embed import create_embedder
from kgsearch.search.path_scores import humanise

_WARM_OFFSET = 5000
_SLICE = 300


def _kind(text: str, prefetched: bool, relations: set[str]) -> str:
    if text in relations:
        return "relation texts"
    if prefetched:
        return "rest's words, with the question"
    return "rests in doubt" if " " in text else "words mid-search"


def main() -> None:
    """Run the questions, print the calls."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--questions", type=int, default=1000)
    parser.add_argument("--offset", type=int, default=0)
    parser.add_argument("--db", type=Path, help="the store (default: bench-data/metaqa-full.db)")
    args = parser.parse_args()
    db = args.db or ensure_full_db()
    real: Any = create_embedder("bundled")
    warm = [q for q, _ in metaqa_questions(20, offset=_WARM_OFFSET)]
    questions = [q for q, _ in metaqa_questions(args.questions, offset=args.offset)]
    vectors = {q: real.embed_query(q) for q in questions + warm}
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        relations = {
            humanise(t) for (t,) in conn.execute("SELECT DISTINCT type FROM relationships")
        }
    # per model call: the question's index, its texts with their kinds, its CPU ms
    calls: list[tuple[int, list[tuple[str, str]], float]] = []
    at = [-1]

    def log(texts: list[str], started: float) -> None:
        ms = (time.process_time() - started) * 1000
        prefetched = any("embed_many" in f.name for f in traceback.extract_stack())
        calls.append((at[0], [(t, _kind(t, prefetched, relations)) for t in texts], ms))

    class Logged:
        """The model, each call logged (the questions' own vectors are replayed)."""

        def __getattr__(self, name: str) -> Any:
            return getattr(real, name)

        def embed_query(self, text: str) -> Any:
            started = time.process_time()
            vector = real.embed_query(text)
            log([text], started)
            return vector

        def embed_queries(self, texts: list[str]) -> list[Any]:
            started = time.process_time()
            made = real.embed_queries(texts)
            log(texts, started)
            return list(made)

    engine = Engine(connect(str(db)), embedder=Replay(Logged(), vectors))  # type: ignore[arg-type]
    for scanned in (Kind.OBJECT, Kind.RELATIONSHIP):
        engine.store.wait_for_index("default", scanned, 900)  # type: ignore[attr-defined]
    engine.warm()
    for question in warm:
        engine.search(SearchRequest(query=question, limit=10))
    calls.clear()
    for index, question in enumerate(questions):
        at[0] = index
        engine.search(SearchRequest(query=question, limit=10))
    engine.close()
    print(
        f"{len(questions)} MetaQA dev questions from #{args.offset}, each once, in a fresh "
        f"process on {db} (load {os.getloadavg()[0]:.1f}):"
    )
    for start in range(0, len(questions), _SLICE):
        part = [c for c in calls if start <= c[0] < start + _SLICE]
        print(
            f"  questions {start}-{min(start + _SLICE, len(questions)) - 1}: {len(part)} model "
            f"calls, {len({c[0] for c in part})} questions making one, "
            f"{sum(c[2] for c in part):.0f} ms CPU"
        )
    by: dict[str, list[float]] = defaultdict(lambda: [0, 0, 0, 0.0])
    for _, kinds, ms in calls:
        by[kinds[0][1]][0] += 1
        by[kinds[0][1]][3] += ms
        for text, name in kinds:
            by[name][1] += 1
            by[name][2] += real.count_tokens(text)
    print("  by kind of text (a call counted under its first text's kind):")
    for name, (n, texts, tokens, ms) in sorted(by.items()):
        print(f"    {name}: {n:.0f} calls, {texts:.0f} texts, {tokens:.0f} tokens, {ms:.0f} ms CPU")


if __name__ == "__main__":
    main()
