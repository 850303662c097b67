"""What makes the tail of a unified search: the held BM25 postings' read and Python's
garbage collector, before and after, in one run.

Usage: python scripts/bench_tail.py --before /path/to/other/src [--rounds 3]
       [--queries 300] [--passes 2] [--write]

Two parts, each version in child processes of its own, taking turns (before, after,
before, after …) so the machine's noise falls on both:

- ``read``: the CPU time of reading the full MetaQA graph's held BM25 postings
  (``read_postings``, objects then relationships) on one connection, the read a
  SQLite store does in the background after opening.
- ``gc``: each version opens the store as ``serve`` does (its vectors, then
  ``Engine.warm`` where the version has it), searches 20 questions, then times
  ``--passes`` passes over ``--queries`` MetaQA questions (query vectors embedded once
  by this process, as in bench_ab.py) while ``gc.callbacks`` record every collection:
  their count, total and longest pause per generation (the collecting thread's CPU
  time), the searches' p50, p95 and slowest (wall clock: read them with the load
  averages printed) and their CPU time (the process's, all threads).

Last, the bundled model embeds each question alone with 1 and with 2 onnxruntime
intra-op threads (``BundledEmbedder(threads=…)``; the default is the CPU count), the
two taking turns: a lone query's latency against the CPU it takes.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def _read_child(db: str) -> dict[str, Any]:
    import time

    from kgsearch import Kind, connect
    from kgsearch.store.sqlite.held_lexical import read_postings

    reader = connect(db).db.reader()  # type: ignore[attr-defined]
    out: dict[str, Any] = {}
    for kind in (Kind.OBJECT, Kind.RELATIONSHIP):
        started = time.process_time()
        read_postings(reader, kind)
        out[kind.value] = time.process_time() - started
    return out


def _gc_child(db: str, queries: str, passes: int) -> dict[str, Any]:
    import gc
    import time

    import numpy as np

    from kgsearch import Engine, Kind, SearchRequest, connect
    from kgsearch.embed import create_embedder

    data = json.loads(Path(queries).read_text(encoding="utf-8"))
    vectors = {q: np.asarray(v, dtype=np.float32) for q, v in data.items()}
    real = create_embedder("bundled")

    class Replay:
        def __init__(self) -> None:
            self.model_id, self.dims = real.model_id, real.dims

        def __getattr__(self, name: str) -> object:
            return getattr(real, name)

        def embed_query(self, text: str) -> Any:
            return vectors[text] if text in vectors else real.embed_query(text)

    pauses: list[tuple[int, float]] = []
    began = [0.0]

    def watch(phase: str, info: dict[str, int]) -> None:
        # the collecting thread's CPU time: on a loaded machine the wall clock would
        # also count the time the thread waited for a core
        if phase == "start":
            began[0] = time.thread_time()
        else:
            pauses.append((info["generation"], (time.thread_time() - began[0]) * 1000))

    engine = Engine(connect(db), embedder=Replay())  # type: ignore[arg-type]
    for kind in (Kind.OBJECT, Kind.RELATIONSHIP):
        engine.store.wait_for_index("default", kind, 900)  # type: ignore[attr-defined]
    if hasattr(engine, "warm"):
        engine.warm()
    requests = [SearchRequest(query=q, limit=10) for q in vectors]
    for request in requests[:20]:
        engine.search(request)
    gc.callbacks.append(watch)
    times, cpu = [], []
    for _ in range(passes):
        for request in requests:
            started, used = time.perf_counter(), time.process_time()
            engine.search(request)
            times.append((time.perf_counter() - started) * 1000)
            cpu.append((time.process_time() - used) * 1000)
    gc.callbacks.remove(watch)
    engine.close()
    return {"times": times, "cpu": cpu, "pauses": pauses}


def _embed_threads(questions: list[str], rounds: int) -> list[list[str]]:
    """Rows of the bundled model embedding one question at a time with 1 and with 2
    intra-op threads (one session each, taking turns question by question): wall and
    CPU p50 / p95 per question."""
    import time

    from bench_latency import percentile

    from kgsearch.embed.bundled import BundledEmbedder

    models = {threads: BundledEmbedder(threads=threads) for threads in (1, 2)}
    for model in models.values():
        model.embed_query("warm up")
    wall: dict[int, list[float]] = {t: [] for t in models}
    cpu: dict[int, list[float]] = {t: [] for t in models}
    for _ in range(rounds):
        for question in questions:
            for threads, model in models.items():
                started, used = time.perf_counter(), time.process_time()
                model.embed_query(question)
                wall[threads].append((time.perf_counter() - started) * 1000)
                cpu[threads].append((time.process_time() - used) * 1000)
    return [
        [
            str(threads),
            f"{statistics.median(wall[threads]):.2f} / {percentile(wall[threads], 0.95):.2f}",
            f"{statistics.median(cpu[threads]):.2f} / {percentile(cpu[threads], 0.95):.2f}",
        ]
        for threads in models
    ]


def _turn(src: Path, args: list[str]) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, __file__, "--child", *args],
        env={**os.environ, "PYTHONPATH": str(src)},
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode:
        sys.exit(f"the run with {src} failed:\n{done.stderr}")
    found: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return found


def main() -> None:
    """Parse arguments, run the turns, print (and with --write record) the figures."""
    if len(sys.argv) > 2 and sys.argv[1] == "--child":
        if sys.argv[2] == "read":
            print(json.dumps(_read_child(sys.argv[3])))
        else:
            print(json.dumps(_gc_child(sys.argv[3], sys.argv[4], int(sys.argv[5]))))
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", required=True, help="the other version's src directory")
    parser.add_argument("--rounds", type=int, default=3, help="turns per version and part")
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--passes", type=int, default=2)
    parser.add_argument("--write", action="store_true", help="write docs/benchmarks.md")
    args = parser.parse_args()
    before = Path(args.before)
    if not (before / "kgsearch" / "__init__.py").is_file():
        parser.error(f"--before {before}: no kgsearch package there")
    if min(args.rounds, args.queries, args.passes) < 1:
        parser.error("--rounds, --queries and --passes must be at least 1")

    sys.path.insert(0, str(ROOT / "scripts"))
    from bench_latency import percentile
    from bench_quality import ensure_full_db, metaqa_questions
    from benchdoc import table, write_section

    from kgsearch.embed import create_embedder

    versions = {"before": before, "after": ROOT / "src"}
    loads = [os.getloadavg()[0]]
    with tempfile.TemporaryDirectory(prefix="kgsearch-tail-") as tmp:
        work = Path(tmp)
        db = work / "metaqa.db"  # a copy each version may migrate
        shutil.copyfile(ensure_full_db(), db)
        queries = work / "queries.json"
        embedder = create_embedder("bundled")
        questions = [q for q, _ in metaqa_questions(args.queries)]
        queries.write_text(
            json.dumps({q: embedder.embed_query(q).tolist() for q in questions}), encoding="utf-8"
        )
        reads: dict[str, list[dict[str, float]]] = {name: [] for name in versions}
        runs: dict[str, list[dict[str, Any]]] = {name: [] for name in versions}
        for _ in range(args.rounds):
            for name, src in versions.items():
                reads[name].append(_turn(src, ["read", str(db)]))
                loads.append(os.getloadavg()[0])
        for _ in range(args.rounds):
            for name, src in versions.items():
                runs[name].append(_turn(src, ["gc", str(db), str(queries), str(args.passes)]))
                loads.append(os.getloadavg()[0])
                print(f"{name}: load {loads[-1]:.1f}", file=sys.stderr)
    read_rows = [
        [
            name,
            kind,
            f"{statistics.median(r[kind] for r in reads[name]):.2f}",
            ", ".join(f"{r[kind]:.2f}" for r in reads[name]),
        ]
        for kind in ("object", "relationship")
        for name in versions
    ]
    gc_rows = []
    for name in versions:
        times = [t for run in runs[name] for t in run["times"]]
        cpu = [t for run in runs[name] for t in run["cpu"]]
        pauses = [p for run in runs[name] for p in run["pauses"]]
        per_gen = []
        for generation in (0, 1, 2):
            ms = [p for g, p in pauses if g == generation]
            per_gen.append(f"{len(ms)} / {sum(ms):.0f} / {max(ms, default=0):.1f}")
        gc_rows.append(
            [
                name,
                f"{statistics.median(times):.1f}",
                f"{percentile(times, 0.95):.1f}",
                f"{max(times):.1f}",
                f"{statistics.median(cpu):.1f} / {percentile(cpu, 0.95):.1f}",
                *per_gen,
            ]
        )
    searches = args.rounds * args.passes * args.queries
    body = (
        "Held BM25 postings of the full MetaQA graph read on one connection "
        f"(`read_postings`), CPU seconds, {args.rounds} reads per version taking turns:\n\n"
        + table(["version", "index", "CPU s (median)", "each read"], read_rows)
        + f"\n\nUnified search, {args.queries} MetaQA questions × {args.passes} passes × "
        f"{args.rounds} turns per version ({searches} searches each), query embedding "
        "replayed, after the store's warm-up as `serve` does it; garbage collections "
        "during the timed searches, per generation: count / total / longest, in ms of the "
        "collecting thread's CPU time:\n\n"
        + table(
            [
                *("version", "p50 ms", "p95 ms", "slowest ms", "CPU p50 / p95 ms"),
                *("gen 0", "gen 1", "gen 2"),
            ],
            gc_rows,
        )
        + "\n\nA full (generation 2) collection walks every tracked object: before the "
        "freeze in `Engine.warm` that is everything loaded at start, so such a collection "
        "is rare but long, whenever it falls; after it, only what came since, so it is "
        "short but more frequent (a version without the freeze shows none above when none "
        "fell in the timed window)."
        + "\n\nLoad average (1 min) at the start and after each turn: "
        + ", ".join(f"{load:.1f}" for load in loads)
        + "."
    )
    embed_loads = [os.getloadavg()[0]]
    embed_rows = _embed_threads(questions, args.rounds)
    embed_loads.append(os.getloadavg()[0])
    body += (
        f"\n\nThe bundled model embedding one question at a time ({args.queries} "
        f"questions × {args.rounds}, the two settings taking turns question by question; "
        "this version's code, one session per setting), load "
        + " → ".join(f"{load:.1f}" for load in embed_loads)
        + ":\n\n"
        + table(["intra-op threads", "wall p50 / p95 ms", "CPU p50 / p95 ms"], embed_rows)
    )
    print(body)
    if args.write:
        write_section(
            "tail",
            "Speed: the tail of a unified search (postings read, garbage collection)",
            "python scripts/bench_tail.py --before OTHER/src "
            f"--rounds {args.rounds} --queries {args.queries} --passes {args.passes}",
            body,
        )


if __name__ == "__main__":
    main()
