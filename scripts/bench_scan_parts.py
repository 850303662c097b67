"""The CPU of one vector leg outside the 4-bit product: two versions in one process.

Usage: python scripts/bench_scan_parts.py [--store metaqa|sample|both] [--questions 1000]
       [--rounds 2] [--part legs|search] --base <checkout of the before commit>/src

Issue 34: a relationship vector leg on MetaQA costs ~1.5-3 ms of CPU, about a third of
it outside onnxruntime's ``MatMulNBits`` product. On two shared cores the product is
bound by memory traffic, so the same leg's CPU moved 1.2-6 ms between processes with
the neighbours' load (other benchmarks on the machine): only versions taking turns
question by question in one process compare. The ``before`` side is the methods of
``nbits.Kernel``, ``Int8Scan`` and ``SQLiteSearch`` as another source tree (``--base``,
e.g. a worktree of the base commit) writes them, loaded as modules of their own; the
``after`` side is this tree's. Both run over the same store, the same kernels and the
same question vectors (the bundled model's, made once).

Printed per store and kind: the leg's CPU (``vector_search``, thread CPU, limit 30 as a
unified search of 10 asks) p50 / mean per side, the load average at the start and end,
how many questions got the same (id, score) list from both, and how many of the
``after`` side's top 30 are the exact float32 top 30 (a product with every row, ties by
position).

With ``--part search`` the sides take turns over whole unified searches instead (limit
10, the question's vector replayed as in bench_schedule.py's ``replayed`` part, the
engine warmed as ``serve`` does; ``--rounds`` passes after one that warms both):
wall and process CPU p50 / p95 per side.

With ``--part steps`` each step of one kernel's leg is timed alone (the query projected
by numpy, the product's ``Session.run``, the best candidates by ``_largest``, their
float32 re-scoring, the (id, score) pairs, then the whole leg) beside the alternatives
measured and not kept: onnxruntime's TopK over the scores instead of ``_largest``, the
product written into a preallocated output (io_binding), the projection a ``MatMul``
node in the kernel's graph.

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
from replay import replayed_engine

from kgsearch import Engine, Filters, Kind, SearchRequest, connect
from kgsearch.embed import create_embedder
from kgsearch.store import nbits
from kgsearch.store.ann import Int8Scan, _largest
from kgsearch.store.sqlite.search import SQLiteSearch, _pairs

Matrix = npt.NDArray[np.float32]
LIMIT = 30


def base_methods(base: Path) -> dict[type, dict[str, Any]]:
    """The methods of ``nbits.Kernel``, ``Int8Scan`` and ``SQLiteSearch`` as the ``base``
    source tree writes them: its ``store/nbits.py``, ``store/ann.py`` and
    ``store/sqlite/search.py`` loaded as modules of their own (their functions keep their
    own module's helpers), beside this tree's. The objects are this tree's: a base method
    must find the attributes it reads (``__init__`` is swapped too but never called)."""
    found: dict[type, dict[str, Any]] = {}
    for relative, cls in (
        ("kgsearch/store/nbits.py", nbits.Kernel),
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
    model: Any = create_embedder("bundled")
    vectors = np.asarray(model.embed_queries(texts), dtype=np.float32)
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
    engine = replayed_engine(path, texts)
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


def _topk_session(rows: int, count: int) -> Any:
    """onnxruntime's TopK of ``count`` over ``rows`` scores on one thread."""
    from onnx import TensorProto, helper, numpy_helper

    k = numpy_helper.from_array(np.array([count], dtype=np.int64), "k")
    node = helper.make_node("TopK", ["x", "k"], ["v", "i"], axis=-1, largest=1, sorted=0)
    value = helper.make_tensor_value_info
    graph = helper.make_graph(
        [node],
        "topk",
        [value("x", TensorProto.FLOAT, [1, rows])],
        [value("v", TensorProto.FLOAT, [1, count]), value("i", TensorProto.INT64, [1, count])],
        [k],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    return nbits._session(model.SerializeToString(), {}, arena=True).session


def _folded(kernel: nbits.Kernel) -> Any:
    """A session of the kernel's product with the query's projection a ``MatMul`` node
    in the graph (input ``x``), instead of numpy's product before it."""
    from onnx import helper

    codes = kernel.codes
    assert codes.projection is not None
    axes = codes.projection[1]
    arrays: dict[str, npt.NDArray[Any]] = {"P": axes, "B": codes.packed, "S": codes.scales}
    nodes = [
        helper.make_node("MatMul", ["x", "P"], ["q"]),
        nbits._scan_node(codes.packed.shape[1] * nbits.BLOCK, kernel.rows),
    ]
    tensors = [nbits._external(n, a) for n, a in arrays.items()]
    graph = nbits._model(nodes, ("x", [1, axes.shape[0]]), ("y", [1, kernel.rows]), tensors)
    return nbits._session(graph, arrays, arena=True).session


def run_steps(name: str, path: str, texts: list[str], rounds: int, base: Path) -> None:
    """Each step of a kernel's leg alone (thread CPU p50, µs), and the alternatives
    measured and not kept, all taking turns question by question."""
    del base
    model: Any = create_embedder("bundled")
    vectors = np.asarray(model.embed_queries(texts), dtype=np.float32)
    engine = Engine(connect(path))
    store: Any = engine.store
    for kind in (Kind.OBJECT, Kind.RELATIONSHIP):
        store.wait_for_index("default", kind, 900)
        entry = store.vectors_cache.entry(store.db.reader(), "default", kind)
        scan, kernel = entry.scan, entry.scan._kernel if entry.scan else None
        if kernel is None or kernel.codes.projection is None:
            print(f"{name} {kind.value}: no projected 4-bit kernel, skipped")
            continue
        session, axes = kernel._session.session, kernel.codes.projection[1]
        folded, topk = _folded(kernel), _topk_session(kernel.rows, nbits.RESCORE)
        out = np.empty((1, kernel.rows), dtype=np.float32)
        bound = session.io_binding()
        bound.bind_output("y", "cpu", 0, np.float32, [1, kernel.rows], out.ctypes.data)
        matrix, ids, kept = scan._matrix, entry.ids, nbits.RESCORE
        cpu: dict[str, list[float]] = {}

        def timed(step: str, started: int, cpu: dict[str, list[float]] = cpu) -> int:
            now = time.thread_time_ns()
            cpu.setdefault(step, []).append((now - started) / 1000)
            return time.thread_time_ns()

        load = os.getloadavg()[0]
        for r in range(rounds + 1):
            if r == 1:
                cpu.clear()  # round 0 warms
            for vector in vectors:
                t = time.thread_time_ns()
                query = vector @ axes
                t = timed("projection (numpy)", t)
                scores = session.run(["y"], {"q": query.reshape(1, -1)})[0].reshape(-1)
                t = timed("product (Session.run)", t)
                candidates = _largest(scores, kept)
                t = timed(f"best {kept} (_largest)", t)
                candidates.sort()
                rescored = np.take(matrix, candidates, axis=0) @ vector
                order = np.lexsort((candidates, -rescored))[:LIMIT]
                t = timed("re-scored in float32, best 30", t)
                pairs = _pairs(ids, candidates[order], rescored[order])
                t = timed("(id, score) pairs", t)
                store.vector_search("default", kind, vector, limit=LIMIT)
                t = timed("whole leg (vector_search)", t)
                # measured and not kept
                topk.run(None, {"x": scores.reshape(1, -1)})
                t = timed(f"rejected: onnxruntime TopK {kept}", t)
                bound.bind_cpu_input("q", query.reshape(1, -1))
                session.run_with_iobinding(bound)
                t = timed("rejected: product into a bound output", t)
                folded.run(["y"], {"x": vector.reshape(1, -1)})
                timed("rejected: projection + product in one graph", t)
                del pairs
        print(
            f"{name} {kind.value} ({kernel.rows} rows, {len(vectors)} questions x {rounds}, "
            f"load {load:.1f} -> {os.getloadavg()[0]:.1f}), thread CPU p50 / mean µs:",
            flush=True,
        )
        for step, times in cpu.items():
            print(f"  {step}: {statistics.median(times):.0f} / {statistics.mean(times):.0f}")
    engine.close()


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
    parser.add_argument("--part", choices=["legs", "search", "steps"], default="legs")
    parser.add_argument(
        "--base",
        type=Path,
        required=True,
        help="the before side's src (e.g. a `git worktree add` of the before commit)/src",
    )
    args = parser.parse_args()
    run = {"legs": run_store, "search": run_searches, "steps": run_steps}[args.part]
    if args.store in ("metaqa", "both"):
        texts = [q for q, _ in metaqa_questions(args.questions)]
        run("metaqa", str(DATA / "metaqa-full.db"), texts, args.rounds, args.base)
    if args.store in ("sample", "both"):
        texts = sample_questions(args.questions)
        run("sample", str(DATA / "load-sample.db"), texts, args.rounds, args.base)


if __name__ == "__main__":
    main()
