"""The CPU of one vector leg outside the 4-bit product: two versions in one process.

Usage: python scripts/bench_scan_parts.py [--store metaqa|sample|both] [--questions 1000]
       [--rounds 2] [--part legs|search] [--base /work/wt-head/src]

Issue 34: a relationship vector leg on MetaQA costs ~1.5-3 ms of CPU, about a third of
it outside onnxruntime's ``MatMulNBits`` product. On two shared cores the product is
bound by memory traffic, so the same leg's CPU moved 1.2-6 ms between processes with
the neighbours' load (other benchmarks on the machine): only versions taking turns
question by question in one process compare. The ``before`` side is ``Int8Scan``'s and
``SQLiteSearch``'s methods as another source tree (``--base``, e.g. a worktree of the
base commit) writes them, loaded as modules of their own; the ``after`` side is this
tree's. Both run over the same store, the same kernels and the same question vectors
(the bundled model's, made once).

Printed per store and kind: the leg's CPU (``vector_search``, thread CPU, limit 30 as a
unified search of 10 asks) p50 / mean per side, the load average at the start and end,
how many questions got the same (id, score) list from both, and how many of the
``after`` side's top 30 are the exact float32 top 30 (a product with every row, ties by
position).

With ``--part search`` the sides take turns over whole unified searches instead (limit
10, the question's vector replayed as in bench_schedule.py's ``replayed`` part, the
engine warmed as ``serve`` does; ``--rounds`` passes after one that warms both):
wall and process CPU p50 / p95 per side.

Stores: ``metaqa`` is bench-data/metaqa-full.db with MetaQA questions
(bench_quality.metaqa_questions); ``sample`` is bench-data/load-sample.db (the REST
graph) with bench_load.py's questions. Each kind's kernel is loaded (or built) first.
"""

from __future__ import annotations

import argparse
import importlib.util
import inspect
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from bench_latency import percentile
from bench_load import questions as sample_questions
from bench_quality import DATA, metaqa_questions
from replay import Replay

from kgsearch import Engine, Filters, Kind, SearchRequest, connect
from kgsearch.embed import create_embedder
from kgsearch.store.ann import Int8Scan
from kgsearch.store.sqlite.search import SQLiteSearch

Matrix = npt.NDArray[np.float32]
LIMIT = 30


def base_methods(base: Path) -> dict[type, dict[str, Any]]:
    """The methods of ``Int8Scan`` and ``SQLiteSearch`` as the ``base`` source tree writes
    them: its ``store/ann.py`` and ``store/sqlite/search.py`` loaded as modules of their
    own (their functions keep their own module's helpers), beside this tree's."""
    found: dict[type, dict[str, Any]] = {}
    for relative, cls in (
        ("kgsearch/store/ann.py", Int8Scan),
        ("kgsearch/store/sqlite/search.py", SQLiteSearch),
    ):
        name = "base_" + relative.replace("/", "_").removesuffix(".py")
        spec = importlib.util.spec_from_file_location(name, base / relative)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
        theirs = vars(getattr(module, cls.__name__))
        found[cls] = {k: v for k, v in theirs.items() if inspect.isfunction(v) and k in vars(cls)}
    return found


def use(methods: dict[type, dict[str, Any]]) -> None:
    """Make ``methods`` the classes' own."""
    for cls, named in methods.items():
        for name, function in named.items():
            setattr(cls, name, function)


def run_store(name: str, path: str, texts: list[str], rounds: int, base: Path) -> None:
    """Both sides over ``texts`` on one store, printed per kind."""
    vectors = np.asarray(create_embedder("bundled").embed_queries(texts), dtype=np.float32)
    engine = Engine(connect(path))
    store: Any = engine.store
    before = base_methods(base)
    after = {cls: {k: vars(cls)[k] for k in named} for cls, named in before.items()}
    sides = {"before": before, "after": after}
    entries = {}
    for kind in (Kind.OBJECT, Kind.RELATIONSHIP):
        store.wait_for_index("default", kind, 900)
        entries[kind] = store.vectors_cache.entry(store.db.reader(), "default", kind)
    filters = Filters()
    names = list(sides)
    try:
        for kind, entry in entries.items():
            cpu: dict[str, list[float]] = {v: [] for v in names}
            same = exact = 0
            load = os.getloadavg()[0]
            for r in range(rounds + 1):
                for i, vector in enumerate(vectors):
                    k = (i + r) % len(names)
                    got = {}
                    for side in names[k:] + names[:k]:
                        use(sides[side])
                        started = time.thread_time_ns()
                        got[side] = store.vector_search(
                            "default", kind, vector, limit=LIMIT, filters=filters
                        )
                        if r:  # round 0 warms both
                            cpu[side].append((time.thread_time_ns() - started) / 1e6)
                    if r == 0:
                        same += got["before"] == got["after"]
                        exact += _exact(entry, vector, got["after"])
            print(
                f"{name} {kind.value} ({len(entry.ids)} rows, kernel "
                f"{entry.scan.kernel_rows if entry.scan else 0}, {len(vectors)} questions x "
                f"{rounds}, load {load:.1f} -> {os.getloadavg()[0]:.1f}): "
                + "; ".join(
                    f"{v} {statistics.median(c):.3f} / {statistics.mean(c):.3f} ms"
                    for v, c in cpu.items()
                )
                + f"; same response {same}/{len(vectors)}"
                + f", exact top {LIMIT} {exact}/{len(vectors)}",
                flush=True,
            )
    finally:
        use(after)
        engine.close()


def run_searches(name: str, path: str, texts: list[str], passes: int, base: Path) -> None:
    """Whole unified searches (limit 10) with both sides taking turns question by
    question, the question's vector replayed (as bench_schedule.py's ``replayed`` part):
    wall and process CPU p50 / p95, and how many responses were the same."""
    real: Any = create_embedder("bundled")
    embedder = Replay(real, dict(zip(texts, real.embed_queries(texts), strict=True)))
    engine = Engine(connect(path), embedder=embedder)
    store: Any = engine.store
    for kind in (Kind.OBJECT, Kind.RELATIONSHIP):
        store.wait_for_index("default", kind, 900)
    engine.warm()
    before = base_methods(base)
    after = {cls: {k: vars(cls)[k] for k in named} for cls, named in before.items()}
    sides = {"before": before, "after": after}
    names = list(sides)
    requests = [SearchRequest(query=t, limit=10) for t in texts]
    wall: dict[str, list[float]] = {v: [] for v in names}
    cpu: dict[str, list[float]] = {v: [] for v in names}
    same = 0
    load = os.getloadavg()[0]
    try:
        for p in range(passes + 1):
            for i, request in enumerate(requests):
                k = (i + p) % len(names)
                got = {}
                for side in names[k:] + names[:k]:
                    use(sides[side])
                    started, cpu_started = time.perf_counter(), time.process_time()
                    response = engine.search(request)
                    if p:  # pass 0 warms both
                        cpu[side].append((time.process_time() - cpu_started) * 1000)
                        wall[side].append((time.perf_counter() - started) * 1000)
                    got[side] = response.results
                same += p == 0 and got["before"] == got["after"]
    finally:
        use(after)
        engine.close()
    print(
        f"{name} unified search ({len(texts)} questions x {passes} passes, load {load:.1f} -> "
        f"{os.getloadavg()[0]:.1f}), wall p50 / p95, CPU p50 / p95 ms: "
        + "; ".join(
            f"{v} {percentile(wall[v], 0.5):.2f} / {percentile(wall[v], 0.95):.2f}, "
            f"{percentile(cpu[v], 0.5):.2f} / {percentile(cpu[v], 0.95):.2f}"
            for v in names
        )
        + f"; same results {same}/{len(texts)}",
        flush=True,
    )


def _exact(entry: Any, vector: Matrix, got: list[tuple[str, float]]) -> bool:
    """Whether ``got`` holds the ids of the exact float32 top ``LIMIT`` (every row's
    product; ties by position as the scan breaks them)."""
    scores = entry.matrix[: len(entry.ids)] @ vector
    order = np.lexsort((np.arange(scores.shape[0]), -scores))[:LIMIT]
    return [entry.ids[i] for i in order.tolist()] == [i for i, _ in got]


def main() -> None:
    """Parse arguments and run the chosen stores."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--store", choices=["metaqa", "sample", "both"], default="both")
    parser.add_argument("--questions", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--part", choices=["legs", "search"], default="legs")
    parser.add_argument(
        "--base", type=Path, default=Path("/work/wt-head/src"), help="the before side's src"
    )
    args = parser.parse_args()
    run = run_store if args.part == "legs" else run_searches
    if args.store in ("metaqa", "both"):
        texts = [q for q, _ in metaqa_questions(args.questions)]
        run("metaqa", str(DATA / "metaqa-full.db"), texts, args.rounds, args.base)
    if args.store in ("sample", "both"):
        texts = sample_questions(args.questions)
        run("sample", str(DATA / "load-sample.db"), texts, args.rounds, args.base)


if __name__ == "__main__":
    main()
