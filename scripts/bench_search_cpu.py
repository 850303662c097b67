"""Process CPU one search costs, before and after a change: processes of two source
trees taking turns, on both of issue 34's stores.

Usage: python scripts/bench_search_cpu.py --before <checkout of the before commit>/src [--rounds 3]
[--queries 500] [--passes 2] [--store metaqa|sample|both]

A change to the legs' Python (plan, name look-up, linking, BM25 bookkeeping) cannot
live beside the code it replaces in one process, so each round runs one process per
tree (``PYTHONPATH`` set to it), the trees in turns, and every run is printed. Each
process opens the store, replays the questions' vectors (embedded once beforehand, as
bench_ab.py does: every other text a search embeds is counted), runs ``Engine.warm``
as ``serve`` does, and then:

- ``first``: each question once, for the first time in the process (what a server's
  first questions pay: caches filled per word, name and span);
- ``again``: ``--passes`` more passes over the same questions (every cache warm but
  what a search never keeps).

Printed per run: process CPU (``time.process_time``: every thread, the leg workers
and the model's included) and wall a search, mean and p50/p95 in ms, and the load
average at the start and end. Stores: the full MetaQA graph
(``bench-data/metaqa-full.db``, MetaQA questions) and the REST sample graph
(``bench-data/load-sample.db``, the questions bench_load.py sends).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent


def _worker(store: str, n: int, passes: int) -> dict[str, Any]:
    """One process's figures (runs under the tree its PYTHONPATH names)."""
    import bench_load
    from bench_quality import ensure_full_db, metaqa_questions
    from replay import replayed_engine

    from kgsearch import SearchRequest

    if store == "metaqa":
        path, texts = str(ensure_full_db()), [q for q, _ in metaqa_questions(n)]
    else:
        path, texts = str(HERE.parent / "bench-data" / "load-sample.db"), bench_load.questions(n)
    engine = replayed_engine(path, texts)
    requests = [SearchRequest(query=q, limit=10) for q in texts]
    load = [os.getloadavg()[0]]

    def timed(batch: list[SearchRequest]) -> tuple[list[float], list[float]]:
        cpu, wall = [], []
        for request in batch:
            c, w = time.process_time(), time.perf_counter()
            engine.search(request)
            cpu.append((time.process_time() - c) * 1000)
            wall.append((time.perf_counter() - w) * 1000)
        return cpu, wall

    first = timed(requests)
    again: tuple[list[float], list[float]] = ([], [])
    for _ in range(passes):
        cpu, wall = timed(requests)
        again[0].extend(cpu)
        again[1].extend(wall)
    load.append(os.getloadavg()[0])
    return {"first": first, "again": again, "load": load}


def _summary(values: list[float]) -> str:
    ordered = sorted(values)

    def at(q: float) -> float:
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))]

    mean = sum(ordered) / len(ordered)
    return f"mean {mean:5.2f} p50 {at(0.5):5.2f} p95 {at(0.95):5.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", required=True, help="the before side's src folder")
    parser.add_argument("--after", default=str(HERE.parent / "src"))
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--queries", type=int, default=500)
    parser.add_argument("--passes", type=int, default=2)
    parser.add_argument("--store", choices=["metaqa", "sample", "both"], default="both")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(_worker(args.worker, args.queries, args.passes)))
        return
    stores = ["metaqa", "sample"] if args.store == "both" else [args.store]
    for store in stores:
        totals: dict[str, dict[str, list[float]]] = {}
        for round_ in range(args.rounds):
            sides = [("before", args.before), ("after", args.after)]
            for name, src in sides if round_ % 2 == 0 else sides[::-1]:
                env = {**os.environ, "PYTHONPATH": f"{src}{os.pathsep}{HERE}"}
                command = [sys.executable, __file__, "--before", args.before]
                command += ["--worker", store, "--queries", str(args.queries)]
                command += ["--passes", str(args.passes)]
                out = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
                got = json.loads(out.stdout.strip().splitlines()[-1])
                for part in ("first", "again"):
                    cpu, wall = got[part]
                    totals.setdefault(f"{name} {part}", {"cpu": [], "wall": []})
                    totals[f"{name} {part}"]["cpu"] += cpu
                    totals[f"{name} {part}"]["wall"] += wall
                    print(
                        f"{store} round {round_} {name:6} {part:5} CPU {_summary(cpu)} | "
                        f"wall {_summary(wall)} | load {got['load'][0]:.2f}-{got['load'][1]:.2f}",
                        flush=True,
                    )
        for label, figures in totals.items():
            print(
                f"{store} all rounds {label:12} CPU {_summary(figures['cpu'])} | "
                f"wall {_summary(figures['wall'])}"
            )


if __name__ == "__main__":
    main()
