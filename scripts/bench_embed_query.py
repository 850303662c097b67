"""A lone query's embedding, before and after a change, in one run (section "embed-query-ab").

Usage: python scripts/bench_embed_query.py [--before /work/wt-head/src]
       [--sides before:2,after:2,before:1,after:1]
       [--queries 1000] [--texts 1000] [--rounds 2] [--write]

Each side (``before``: the kgsearch sources at ``--before``; ``after``: this checkout's)
at an intra-op thread count runs in its own process, with the bundled model loaded
once; each side embeds queries its sources' default way (since ``fast_queries`` became
the default, through the int8 query graph, :mod:`kgsearch.embed.query_int8`), and
``:fast`` asks for ``fast_queries`` explicitly (for a before side older than that).
The parent hands the same MetaQA 1-hop question to every process in turn, one at a time
(interleaved, so machine noise falls on all of them), and each process reports the
CPU time (all its threads) and wall time of ``embed_query`` on it. Then each process
embeds ``--texts`` stored relationship texts of the full MetaQA graph as one
``embed_documents`` call (batch throughput, the same interleaving), and the vectors of
both parts are compared with the before side's at the same thread count: the largest
absolute difference of any component and the lowest cosine.

The stored texts come from ``bench-data/metaqa-full.db`` (built by bench_quality.py),
read-only; the questions from shared/eval-data (MetaQA, dev split).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from itertools import islice
from pathlib import Path
from typing import IO, Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
EVAL = ROOT.parent / "shared" / "eval-data"
STORE = ROOT.parent / "bench-data" / "metaqa-full.db"


def questions(n: int) -> list[str]:
    """The first ``n`` MetaQA 1-hop dev questions, entity brackets removed."""
    with (EVAL / "metaqa" / "1-hop" / "qa_dev.txt").open(encoding="utf-8") as handle:
        lines = [line.split("\t", 1)[0] for line in islice(handle, n)]
    return [line.replace("[", "").replace("]", "") for line in lines]


def stored_texts(n: int, store: Path) -> list[str]:
    """``n`` relationship texts as embedded in ``store``, spread evenly over its rows."""
    import sqlite3

    with sqlite3.connect(f"file:{store}?mode=ro", uri=True) as db:
        total = db.execute(
            "SELECT count(*) FROM relationships WHERE embedded_text IS NOT NULL"
        ).fetchone()[0]
        step = max(1, total // n)
        rows = db.execute(
            "SELECT embedded_text FROM relationships WHERE embedded_text IS NOT NULL "
            "AND id % ? = 0 ORDER BY id LIMIT ?",
            (step, n),
        ).fetchall()
    return [row[0] for row in rows]


# ---------------------------------------------------------------- child process


def child(data: Path, threads: int, fast: bool) -> None:
    """Serve commands on stdin: ``q <i>``, ``groups``, ``batch``, ``dump <path>``, ``quit``."""
    from kgsearch.embed.bundled import BundledEmbedder

    payload = json.loads(data.read_text(encoding="utf-8"))
    qs: list[str] = payload["questions"]
    texts: list[str] = payload["texts"]
    options: dict[str, Any] = {"fast_queries": True} if fast else {}
    embedder = BundledEmbedder(threads=threads, **options)
    for text in qs[:30]:
        embedder.embed_query(text)
    print("ready", flush=True)
    for line in sys.stdin:
        command, _, arg = line.strip().partition(" ")
        if command == "q":
            cpu, wall = time.process_time(), time.perf_counter()
            embedder.embed_query(qs[int(arg)])
            print(f"{time.process_time() - cpu} {time.perf_counter() - wall}", flush=True)
        elif command == "groups":
            many = getattr(embedder, "embed_queries", embedder.embed_documents)
            cpu, wall = time.process_time(), time.perf_counter()
            for start in range(0, len(qs), 8):
                many(qs[start : start + 8])
            print(f"{time.process_time() - cpu} {time.perf_counter() - wall}", flush=True)
        elif command == "batch":
            cpu, wall = time.process_time(), time.perf_counter()
            embedder.embed_documents(texts)
            print(f"{time.process_time() - cpu} {time.perf_counter() - wall}", flush=True)
        elif command == "dump":
            alone = np.array([embedder.embed_query(q) for q in qs])
            batch = np.array(embedder.embed_documents(texts))
            np.savez(arg, queries=alone, texts=batch)
            print("ok", flush=True)
        else:
            return


# ---------------------------------------------------------------- parent


class Side:
    """One child process: a side's sources at one thread count."""

    def __init__(self, spec: str, before: Path, data: Path) -> None:
        name, _, rest = spec.partition(":")
        threads, _, flag = rest.partition(":")
        if name not in ("before", "after") or not threads.isdigit() or flag not in ("", "fast"):
            raise SystemExit(f"a side is before|after:<threads>[:fast], not {spec!r}")
        self.name, self.threads, self.fast = name, int(threads), flag == "fast"
        src = before if name == "before" else ROOT / "src"
        env = {**os.environ, "PYTHONPATH": str(src)}
        command = [sys.executable, __file__, "--child", str(data), "--threads", threads]
        self.proc = subprocess.Popen(
            command + (["--fast"] if self.fast else []),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        self.cpu: list[float] = []
        self.wall: list[float] = []
        self.batch: list[tuple[float, float]] = []
        self.groups: list[float] = []

    @property
    def label(self) -> str:
        plural = "s" if self.threads > 1 else ""
        return f"{self.name}, {self.threads} thread{plural}{', fast_queries' if self.fast else ''}"

    def ask(self, command: str) -> str:
        stdin, stdout = self._pipes()
        stdin.write(command + "\n")
        stdin.flush()
        return stdout.readline().strip()

    def wait_ready(self) -> None:
        if self._pipes()[1].readline().strip() != "ready":
            raise SystemExit(f"{self.label}: the child process did not start")

    def close(self) -> None:
        self.ask("quit")
        self.proc.wait(timeout=30)

    def _pipes(self) -> tuple[IO[str], IO[str]]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        return self.proc.stdin, self.proc.stdout


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def compare(ref: dict[str, Any], other: dict[str, Any], part: str) -> str:
    a, b = np.asarray(ref[part]), np.asarray(other[part])
    cos = (a * b).sum(axis=1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
    return f"{np.abs(a - b).max():.1e} / {cos.min():.7f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path, default=Path("/work/wt-head/src"))
    parser.add_argument(
        "--sides",
        default="before:2,after:2,before:1,after:1",
        help="before|after:<intra-op threads>[:fast], comma-separated",
    )
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--texts", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=2, help="passes over the questions")
    parser.add_argument("--store", type=Path, default=STORE)
    parser.add_argument("--write", action="store_true", help="write docs/benchmarks.md")
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--threads", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--fast", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.threads, args.fast)
        return
    load_start = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "data.json"
        payload = {
            "questions": questions(args.queries),
            "texts": stored_texts(args.texts, args.store),
        }
        data.write_text(json.dumps(payload), encoding="utf-8")
        sides = [Side(spec, args.before, data) for spec in args.sides.split(",")]
        if not any(side.name == "before" for side in sides):
            raise SystemExit("--sides needs a before side: vectors are compared with it")
        for side in sides:
            side.wait_ready()
        count = len(payload["questions"])
        for turn in range(args.rounds * count):
            for k in range(len(sides)):
                side = sides[(turn + k) % len(sides)]  # rotate who goes first
                cpu, wall = (float(x) for x in side.ask(f"q {turn % count}").split())
                side.cpu.append(cpu * 1000)
                side.wall.append(wall * 1000)
        for _ in range(2):
            for side in sides:
                side.groups.append(float(side.ask("groups").split()[0]))
                cpu, wall = (float(x) for x in side.ask("batch").split())
                side.batch.append((cpu, wall))
        vectors = {}
        for i, side in enumerate(sides):
            path = Path(tmp) / f"v{i}.npz"
            side.ask(f"dump {path}")
            vectors[side.label] = dict(np.load(path))
        for side in sides:
            side.close()
    load_end = os.getloadavg()
    rows = []
    befores = [side for side in sides if side.name == "before"]
    n_texts = len(payload["texts"])
    for side in sides:
        # the before side at the same thread count, else the first
        same = [b for b in befores if b.threads == side.threads] or befores
        ref = vectors[same[0].label]
        cpu_b, wall_b = min(side.batch, key=lambda b: b[1])
        rows.append(
            [
                side.label,
                f"{statistics.fmean(side.cpu):.2f}",
                f"{statistics.median(side.wall):.2f} / {pct(side.wall, 0.95):.2f}",
                f"{min(side.groups) * 1000 / count:.2f}",
                f"{n_texts / wall_b:.0f} ({cpu_b * 1000 / n_texts:.2f})",
                compare(ref, vectors[side.label], "queries"),
                compare(ref, vectors[side.label], "texts"),
            ]
        )
    from benchdoc import table, write_section

    headers = [
        "side",
        "lone query CPU ms (mean)",
        "wall ms p50 / p95",
        "CPU ms a query in groups of 8",
        f"batch of {len(payload['texts'])} texts/s (CPU ms a text)",
        "queries: max abs diff / min cosine to before",
        "texts: max abs diff / min cosine",
    ]
    load = f"load average {load_start[0]:.1f} at the start, {load_end[0]:.1f} at the end"
    body = (
        f"{count} MetaQA 1-hop questions (dev), each embedded alone, {args.rounds} passes, "
        f"the processes taking turns question by question; the same questions in groups of 8 "
        f"(`embed_queries` where the side has it, as a server's waiting searches share a "
        f"call; best of 2); then {len(payload['texts'])} stored "
        f"relationship texts of the full MetaQA graph as one call (best of 2). Before = "
        f"`{args.before}`, after = this checkout; {load}.\n\n{table(headers, rows)}"
    )
    print(body)
    if args.write:
        command = "python scripts/bench_embed_query.py " + " ".join(sys.argv[1:])
        write_section("embed-query-ab", "A lone query's embedding, before/after", command, body)


if __name__ == "__main__":
    main()
