"""The legs' own Python before and after session 14's cuts, in one process: the old
and new code paths take turns question by question.

Usage: python scripts/bench_leg_python.py [--store metaqa|sample] [--queries 500]
[--passes 2] [--beside] [--cut all|words|handoffs]

Each cut is a function the search calls through a module attribute, so the "before"
side puts back the old function (kept below, as it was at 83f275e) for one search and
the new one for the next, in a rotating order:

- span names: :func:`kgsearch.search.paths.span_names` (its names cached per question);
- content words and humanised types (:mod:`kgsearch.search.path_scores`: cached);
- the BM25 legs' hand-offs (:func:`kgsearch.search.legs._batches`): only beside another
  search (``--beside``: the searches run inside :func:`~kgsearch.search.legs.searching`,
  as a server's worker with another request in flight), where the new code hands the
  BM25 legs to one worker in one job.

Printed: process CPU (``time.process_time``) and wall a search, mean and p50/p95 (ms),
per side, the load average at the start and end, and each part's thread CPU a search
(``time.thread_time`` in whichever thread it runs: plan, prefetch, the legs, the BM25,
vector and name legs, the anchored leg's edge read and ranking). The questions'
vectors are replayed (bench_ab.py), every other text a search embeds is counted.

Measured (2026-11-29, a shared machine at load 5-10, ``--passes 2``), process CPU mean
a search before -> after: MetaQA (300 questions) 6.93 -> 6.88 ms, beside another search
7.03 -> 6.88; the sample graph (500) 3.87 -> 3.84, beside another search 3.29 -> 3.21.
By part, the anchored leg's relation match and rank 0.34 -> 0.29 (MetaQA) and 0.22 ->
0.18 ms (sample); beside another search the BM25 legs' thread CPU 1.17 -> 1.13 and
0.59 -> 0.57 ms (one hand-off where there were three).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import time
from typing import Any

import bench_load
from bench_quality import ensure_full_db, metaqa_questions
from replay import replayed_engine

import kgsearch.search.anchor as anchor
import kgsearch.search.legs as legs
import kgsearch.search.names as names
import kgsearch.search.path_scores as path_scores
import kgsearch.search.paths as paths
import kgsearch.search.pipeline as pipeline
from kgsearch import SearchRequest
from kgsearch.text.stopwords import STOPWORDS


def _old_content_words(text: str) -> list[str]:
    return [w for w in re.findall(r"[^\W_]+", text.lower()) if w not in STOPWORDS]


def _old_humanise(name: str) -> str:
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", name)
    return " ".join(re.split(r"[\s_\-:./]+", spaced)).strip().lower()


def _old_span_names(question: str) -> list[str]:
    return [n for _, _, variants in paths._spans(question)[1] for n in variants]


def _old_batches(vector: list[Any], lexical: list[Any]) -> list[list[Any]]:
    return [[job] for job in [*vector, *lexical]]


# (module, attribute) → (old, new)
_SWAPS: dict[tuple[Any, str], tuple[Any, Any]] = {
    (paths, "span_names"): (_old_span_names, paths.span_names),
    (names, "span_names"): (_old_span_names, paths.span_names),
    (path_scores, "content_words"): (_old_content_words, path_scores.content_words),
    (paths, "content_words"): (_old_content_words, path_scores.content_words),
    (anchor, "content_words"): (_old_content_words, path_scores.content_words),
    (path_scores, "humanise"): (_old_humanise, path_scores.humanise),
    (paths, "humanise"): (_old_humanise, paths.humanise),
    (anchor, "humanise"): (_old_humanise, path_scores.humanise),
    (legs, "_batches"): (_old_batches, legs._batches),
}


_CUTS = {
    "words": {"span_names", "content_words", "humanise"},
    "handoffs": {"_batches"},
}


def _use(side: str, cuts: set[str]) -> None:
    for (module, name), (old, new) in _SWAPS.items():
        before = side == "before" and name in cuts
        setattr(module, name, old if before else new)


class _Parts:
    """Thread CPU (``time.thread_time``, in whichever thread each runs) of the legs'
    parts, per side: each part's function wrapped where the search calls it."""

    def __init__(self, store: Any) -> None:
        self.side = "after"
        self.ms: dict[tuple[str, str], float] = {}
        self.searches = {"before": 0, "after": 0}
        wrap = [
            (pipeline, "make_plan", "plan"),
            (pipeline, "prefetches", "prefetch (names looked up, spans linked)"),
            (pipeline, "run_legs", "legs: calling thread, scans included"),
            (store, "text_search", "BM25 legs"),
            (store, "vector_search", "vector legs (not legcpu's)"),
            (legs, "looked_up", "name leg"),
            (store, "typed_edges", "anchored: edge read"),
            (anchor, "_rank", "anchored: relation match and rank"),
            (legs, "_record", "legs: recorded"),
        ]
        for owner, name, label in wrap:
            setattr(owner, name, self._timed(getattr(owner, name), label))

    def _timed(self, fn: Any, label: str) -> Any:
        def timed(*args: Any, **kwargs: Any) -> Any:
            started = time.thread_time()
            try:
                return fn(*args, **kwargs)
            finally:
                part = (self.side, label)
                self.ms[part] = self.ms.get(part, 0.0) + (time.thread_time() - started) * 1000

        return timed

    def print(self) -> None:
        labels = list(dict.fromkeys(label for _, label in self.ms))
        print("  thread CPU a search by part (ms): before -> after")
        for label in labels:
            before, after = (
                self.ms.get((side, label), 0.0) / max(1, self.searches[side])
                for side in ("before", "after")
            )
            print(f"    {label:42} {before:6.3f} -> {after:6.3f}")


def _summary(values: list[float]) -> str:
    ordered = sorted(values)
    mean = sum(ordered) / len(ordered)
    p50, p95 = ordered[len(ordered) // 2], ordered[int(0.95 * (len(ordered) - 1))]
    return f"mean {mean:5.3f} p50 {p50:5.3f} p95 {p95:5.3f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--store", choices=["metaqa", "sample"], default="sample")
    parser.add_argument("--queries", type=int, default=500)
    parser.add_argument("--passes", type=int, default=2)
    parser.add_argument("--beside", action="store_true", help="as beside another search")
    parser.add_argument(
        "--cut", choices=["all", *_CUTS], default="all", help="the cut whose old path alternates"
    )
    args = parser.parse_args()
    if args.store == "metaqa":
        path, texts = str(ensure_full_db()), [q for q, _ in metaqa_questions(args.queries)]
    else:
        path = "bench-data/load-sample.db"
        texts = bench_load.questions(args.queries)
    engine = replayed_engine(path, texts)
    requests = [SearchRequest(query=q, limit=10) for q in texts]
    cuts = set().union(*_CUTS.values()) if args.cut == "all" else _CUTS[args.cut]
    for side in ("before", "after"):  # every cache warm on both sides
        _use(side, cuts)
        for request in requests:
            engine.search(request)
    parts = _Parts(engine.store)
    cpu: dict[str, list[float]] = {"before": [], "after": []}
    wall: dict[str, list[float]] = {"before": [], "after": []}
    load = os.getloadavg()[0]
    beside = legs.searching() if args.beside else contextlib.nullcontext()
    with beside:
        for p in range(args.passes):
            for i, request in enumerate(requests):
                order = ("before", "after") if (i + p) % 2 == 0 else ("after", "before")
                for side in order:
                    _use(side, cuts)
                    parts.side = side
                    parts.searches[side] += 1
                    c, w = time.process_time(), time.perf_counter()
                    engine.search(request)
                    cpu[side].append((time.process_time() - c) * 1000)
                    wall[side].append((time.perf_counter() - w) * 1000)
    print(
        f"{args.store} {args.queries} questions x {args.passes} passes"
        f"{' beside another search' if args.beside else ''}, cut {args.cut}, "
        f"load {load:.2f}-{os.getloadavg()[0]:.2f}"
    )
    for side in ("before", "after"):
        print(f"  {side:6} CPU {_summary(cpu[side])} | wall {_summary(wall[side])}")
    parts.print()


if __name__ == "__main__":
    main()
