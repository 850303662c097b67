"""A first-time question end to end, query embedding included, before and after a change,
in one run (section "first-question-ab").

Usage: python scripts/bench_first_question.py [--before /work/wt-head/src]
       [--sides before,after] [--threads 0] [--queries 300] [--skip 0] [--write]

Each side (``before``: the kgsearch sources at ``--before``; ``after``: this checkout's)
runs in a process of its own over the full MetaQA graph (``bench-data/metaqa-full.db``,
read only) with the bundled model, embedding for real (no replayed vectors): the engine
is warmed as ``serve`` does (``Engine.warm``) and on 20 questions outside the measured
ones. The parent then hands each side the same MetaQA 1-hop dev question in turn
(interleaved, so machine noise falls on both); for the process every question is asked
for the first time, so its query vector is in no cache and the anchored leg's rest of
the question has not been embedded. Each side reports the search's wall time, the
process's CPU time (all threads: legs, model) and ``embedQueryMs``, and the number of
model calls the search made. A side given as ``name:N`` runs with ``N`` onnxruntime
intra-op threads (``--threads`` for all; 0 is the default, the core count).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import IO, Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
STORE = ROOT / "bench-data" / "metaqa-full.db"
_WARM = 20


def child(questions_file: Path, threads: int) -> None:
    """Serve ``q <i>`` (search question i, print its figures) and ``quit`` on stdin."""
    sys.path.insert(0, str(ROOT / "scripts"))
    from kgsearch import Engine, Kind, SearchRequest, connect
    from kgsearch.embed.bundled import BundledEmbedder

    questions: list[str] = json.loads(questions_file.read_text(encoding="utf-8"))
    real = BundledEmbedder(threads=threads or None)
    calls = [0]

    class Counted:
        """The bundled model, its calls counted (methods of its own, so the engine's
        per-embedder caches, keyed by the bound method, keep working)."""

        def __getattr__(self, name: str) -> Any:
            return getattr(real, name)

        def embed_query(self, text: str) -> Any:
            calls[0] += 1
            return real.embed_query(text)

        def embed_queries(self, texts: Any) -> Any:
            calls[0] += 1
            return real.embed_queries(texts)

        def embed_documents(self, texts: Any) -> Any:
            calls[0] += 1
            return real.embed_documents(texts)

    engine = Engine(connect(str(STORE)), embedder=Counted())
    for kind in (Kind.OBJECT, Kind.RELATIONSHIP):
        engine.store.wait_for_index("default", kind, 900)  # type: ignore[attr-defined]
    engine.warm()
    for question in questions[:_WARM]:
        engine.search(SearchRequest(query=question, limit=10))
    print("ready", flush=True)
    for line in sys.stdin:
        command = line.split()
        if command[0] == "quit":
            break
        question = questions[_WARM + int(command[1])]
        calls[0] = 0
        wall, cpu = time.perf_counter(), time.process_time()
        response = engine.search(SearchRequest(query=question, limit=10))
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        figures = {
            "wall": wall * 1000,
            "cpu": cpu * 1000,
            "embed": response.metadata["executionTime"]["embedQueryMs"],
            "calls": calls[0],
        }
        print(json.dumps(figures), flush=True)
    engine.close()


def _start(src: Path, questions: Path, threads: int) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(src)}
    process = subprocess.Popen(
        [sys.executable, __file__, "--child", str(questions), str(threads)],
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    first = process.stdout.readline().strip()
    if first != "ready":
        sys.exit(f"a side did not start ({src}): {first}")
    return process


def _ask(process: subprocess.Popen[str], command: str) -> dict[str, float]:
    stdin: IO[str] | None = process.stdin
    assert stdin is not None and process.stdout is not None
    stdin.write(command + "\n")
    stdin.flush()
    return dict(json.loads(process.stdout.readline()))


def main() -> None:
    """Parse arguments, run the sides interleaved, print and (with --write) record."""
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(Path(sys.argv[2]), int(sys.argv[3]))
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", type=Path, default=Path("/work/wt-head/src"))
    parser.add_argument("--sides", default="before,after")
    parser.add_argument("--threads", type=int, default=0)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--skip", type=int, default=0, help="questions skipped first")
    parser.add_argument("--write", action="store_true", help="write docs/benchmarks.md")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT / "scripts"))
    from bench_quality import metaqa_questions
    from benchdoc import table, write_section

    wanted = _WARM + args.skip + args.queries
    questions = [q for q, _ in metaqa_questions(wanted)]
    questions = questions[:_WARM] + questions[_WARM + args.skip :]
    sides = []
    for side in args.sides.split(","):
        name, _, threads = side.partition(":")
        src = args.before if name == "before" else ROOT / "src"
        sides.append((side, src, int(threads) if threads else args.threads))
    path = Path(f"/tmp/kgsearch-first-question-{os.getpid()}.json")
    path.write_text(json.dumps(questions), encoding="utf-8")
    try:
        processes = [_start(src, path, threads) for _, src, threads in sides]
        loads = [os.getloadavg()[0]]
        found: dict[str, list[dict[str, float]]] = {side: [] for side, _, _ in sides}
        for i in range(args.queries):
            order = range(len(sides)) if i % 2 == 0 else reversed(range(len(sides)))
            for k in order:
                found[sides[k][0]].append(_ask(processes[k], f"q {i}"))
            if i % 100 == 99:
                loads.append(os.getloadavg()[0])
        for process in processes:
            _ask_quit(process)
    finally:
        path.unlink(missing_ok=True)
    loads.append(os.getloadavg()[0])
    rows = []
    for side, runs in found.items():

        def p(key: str, q: float, runs: list[dict[str, float]] = runs) -> str:
            return f"{np.percentile([r[key] for r in runs], q):.2f}"

        rows.append(
            [
                side,
                f"{p('wall', 50)} / {p('wall', 95)}",
                f"{p('cpu', 50)} / {p('cpu', 95)}",
                f"{p('embed', 50)} / {p('embed', 95)}",
                f"{sum(r['calls'] for r in runs):.0f}",
                f"{sum(1 for r in runs if r['calls'] > 1)}",
            ]
        )
    lines = [
        f"{args.queries} first-time MetaQA questions (after {args.skip} skipped), each side "
        "in its own process, interleaved; ms a search, query embedding included:",
        "",
        table(
            [
                "side",
                "wall p50 / p95",
                "process CPU p50 / p95",
                "embedQueryMs p50 / p95",
                "model calls",
                "searches with 2+ calls",
            ],
            rows,
        ),
        "",
        "Load average (1 min) at the start, every 100 questions and at the end: "
        + ", ".join(f"{x:.1f}" for x in loads)
        + ".",
    ]
    print("\n".join(lines))
    if args.write:
        command = "python scripts/bench_first_question.py " + " ".join(sys.argv[1:])
        write_section(
            "first-question-ab",
            "A first-time question end to end, before and after (one run)",
            command,
            "\n".join(lines),
        )


def _ask_quit(process: subprocess.Popen[str]) -> None:
    stdin = process.stdin
    assert stdin is not None
    stdin.write("quit\n")
    stdin.flush()
    process.wait(timeout=60)


if __name__ == "__main__":
    main()
