"""The multi_hop passage search of two versions of kgsearch, interleaved in one run.

    python scripts/bench_passages_ab.py --before /work/wt-head/src [--sets SET,...]
        [--questions N] [--block 10]

Each side is a process of its own (``PYTHONPATH`` = ``--before`` or this checkout's
``src``) over the same copy of a set's store (``bench-data/passages-<set>.db``,
copied once into a temporary folder: the cached stores stay untouched). The sides
take turns by ``--block`` questions (which side goes first alternates), so both see
the same load. Every question is a whole ``multi_hop`` search (limit 40) asked for the
first time in its process, query embedding included. Per side: wall time and process
CPU time p50 / p95 over every question but the first, the first search's time (it
reads the passage graph), recall@2 / @5 as ``bench_passages.py`` counts them; how
many questions gave the same passages in the same order on both sides, and how many
identical responses (all but the timings). Load averages (1, 5, 15 min) before and
after each set.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import IO, Any

from benchdoc import table, write_section

ROOT = Path(__file__).resolve().parent.parent
SETS = ["musique-spacy", "2wiki-spacy"]


def serve(name: str, path: str) -> None:
    """Worker: answer question numbers read from stdin with one JSON line each."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from bench_passages import found_titles, multi_hop, questions

    from kgsearch import Engine, connect

    asked = questions(name)
    with Engine(connect(path)) as engine:
        titles = {s.id: s.title for s in engine.store.iter_rows(engine.project, "source")}
        engine.search("warm up")
        print(json.dumps({"ready": True}), flush=True)
        for line in sys.stdin:
            i = int(line)
            wall, cpu = time.perf_counter(), time.process_time()
            response = engine.search(multi_hop(asked[i][0]))
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            found = found_titles(response, titles)
            body = response.model_dump(mode="json", by_alias=True)
            body["metadata"].pop("executionTime", None)
            digest = hashlib.blake2b(json.dumps(body, sort_keys=True).encode()).hexdigest()
            print(
                json.dumps({"wall": wall, "cpu": cpu, "found": found, "digest": digest}),
                flush=True,
            )


def _start(src: str, name: str, path: str, blas: int | None) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": src}
    if blas is not None:  # as `kgsearch serve` holds it (threadpoolctl), for both sides
        env["OPENBLAS_NUM_THREADS"] = env["OMP_NUM_THREADS"] = str(blas)
    proc = subprocess.Popen(
        [sys.executable, __file__, "--serve", name, "--store", path],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert proc.stdout is not None
    json.loads(proc.stdout.readline())
    return proc


def _ask(proc: subprocess.Popen[str], i: int) -> dict[str, Any]:
    stdin: IO[str] | None = proc.stdin
    assert stdin is not None and proc.stdout is not None
    stdin.write(f"{i}\n")
    stdin.flush()
    answer: dict[str, Any] = json.loads(proc.stdout.readline())
    return answer


def _pct(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return 1000 * ordered[min(len(ordered) - 1, int(len(ordered) * share))]


def run_set(
    name: str, sides: dict[str, str], count: int | None, block: int, blas: int | None = None
) -> dict[str, Any]:
    """Both sides over one set; figures per side."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from bench_passages import build, questions

    asked = questions(name)[:count]
    with tempfile.TemporaryDirectory(prefix="passages-ab-") as tmp:
        copy = str(Path(tmp) / f"passages-{name}.db")
        with sqlite3.connect(build(name)) as source, sqlite3.connect(copy) as target:
            source.backup(target)
        load_before = os.getloadavg()
        procs = {side: _start(src, name, copy, blas) for side, src in sides.items()}
        answers: dict[str, list[dict[str, Any]]] = {side: [] for side in sides}
        order = list(sides)
        try:
            for start in range(0, len(asked), block):
                for side in order:
                    for i in range(start, min(start + block, len(asked))):
                        answers[side].append(_ask(procs[side], i))
                order.reverse()
        finally:
            for proc in procs.values():
                assert proc.stdin is not None
                proc.stdin.close()
                proc.wait()
        load_after = os.getloadavg()
    out: dict[str, Any] = {"load": (load_before, load_after), "sides": {}}
    for side, got in answers.items():
        walls = [a["wall"] for a in got[1:]]
        cpus = [a["cpu"] for a in got[1:]]
        recall = {
            k: sum(
                len(g & set(a["found"][:k])) / len(g) for (_, g), a in zip(asked, got, strict=True)
            )
            / len(asked)
            for k in (2, 5)
        }
        out["sides"][side] = {
            "p50": _pct(walls, 0.5),
            "p95": _pct(walls, 0.95),
            "cpu_p50": _pct(cpus, 0.5),
            "cpu_p95": _pct(cpus, 0.95),
            "first": 1000 * got[0]["wall"],
            "recall@2": recall[2],
            "recall@5": recall[5],
        }
    a, b = answers.values()
    out["same"] = sum(x["found"] == y["found"] for x, y in zip(a, b, strict=True))
    out["identical"] = sum(x["digest"] == y["digest"] for x, y in zip(a, b, strict=True))
    out["questions"] = len(asked)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", help="The other version's src folder.")
    parser.add_argument("--sets", default=",".join(SETS))
    parser.add_argument("--questions", type=int, help="Only the first N questions a set.")
    parser.add_argument("--block", type=int, default=10, help="Questions a turn.")
    parser.add_argument(
        "--blas-threads", type=int, help="numpy's BLAS threads in both sides (default: all)."
    )
    parser.add_argument("--write", action="store_true", help="Write docs/benchmarks.md.")
    parser.add_argument("--serve", help=argparse.SUPPRESS)
    parser.add_argument("--store", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.serve, args.store)
        return
    if not args.before:
        parser.error("--before SRC is needed")
    sides = {"before": str(Path(args.before).resolve()), "after": str(ROOT / "src")}
    rows, notes = [], []
    for name in args.sets.split(","):
        r = run_set(name, sides, args.questions, args.block, args.blas_threads)
        load = " → ".join(", ".join(f"{x:.1f}" for x in v) for v in r["load"])
        for side, m in r["sides"].items():
            rows.append(
                [
                    name,
                    side,
                    f"{m['p50']:.1f} / {m['p95']:.1f}",
                    f"{m['cpu_p50']:.1f} / {m['cpu_p95']:.1f}",
                    f"{m['first']:.0f}",
                    f"{m['recall@2']:.3f} / {m['recall@5']:.3f}",
                    load if side == "before" else "",
                ]
            )
        notes.append(
            f"{name}: same passages in the same order on {r['same']} of {r['questions']} "
            f"questions, identical responses (timings left out) on {r['identical']}"
        )
        print(rows[-2], rows[-1], notes[-1], sep="\n", flush=True)
    heads = [
        "set",
        "side",
        "wall p50 / p95 ms",
        "CPU p50 / p95 ms",
        "first search ms",
        "recall@2 / @5",
        "load (1, 5, 15 min) before → after",
    ]
    threads = "all" if args.blas_threads is None else str(args.blas_threads)
    body = (
        f"Before: `{args.before}`. numpy's BLAS threads: {threads}.\n\n"
        + table(heads, rows)
        + "\n\n"
        + "\n".join(f"- {n}" for n in notes)
    )
    print(body)
    if args.write:
        command = "python scripts/bench_passages_ab.py --before SRC --sets " + args.sets
        if args.blas_threads is not None:
            command += f" --blas-threads {args.blas_threads}"
        write_section("passages-ab", "Multi-hop passage search, before / after", command, body)


if __name__ == "__main__":
    main()
