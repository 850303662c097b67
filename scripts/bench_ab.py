"""Search latency of two versions of kgsearch, side by side in one run.

Usage: python scripts/bench_ab.py --base REV [--rounds 3] [--queries 300] [--passes 3]
       [--embed]

A refactor must not make search slower; this measures it against a given commit in
the same run. The base commit is checked out into a temporary git worktree; each
version searches the full MetaQA graph (``bench-data/metaqa-full.db``, built by
bench_quality.py) in a child process of its own, with the same MetaQA questions
embedded once by this process. The versions take turns (base, head, base, head …),
so the machine's noise falls on both; each turn opens the store, waits for its
vectors, warms up as ``serve`` does (``Engine.warm``, where the version has it) and
on 20 questions, and times ``--passes`` passes. Times exclude the
question's embedding, as in bench_latency.py: it is replayed (no model time), and the
search's whole time is taken, so other texts a version embeds (the anchored leg's rest
of the question, in the embed stage or mid-search) count on both sides alike. The base
gets its own copy of the database, since a newer version may add migrations an older one
refuses: the copy forgets the migrations the base does not know (their tables stay,
unused by the base).

With ``--embed`` each turn also embeds every question once with its version's bundled
model (after one warm-up question), timed alone, so the query embedding is compared
too; the end-to-end row adds each question's embedding to its searches.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _child(db: str, queries: str, passes: int, embed: bool) -> None:
    """Run inside one version's interpreter: print the per-search times (and, with
    ``embed``, the per-question embedding times) as JSON."""
    import time

    import numpy as np
    from replay import Replay

    from kgsearch import Engine, Kind, SearchRequest, connect
    from kgsearch.embed import create_embedder

    data = json.loads(Path(queries).read_text(encoding="utf-8"))
    vectors = {q: np.asarray(v, dtype=np.float32) for q, v in data.items()}

    real = create_embedder("bundled")
    embedded: list[float] = []
    if embed:
        real.embed_query("warm up")
        for text in vectors:
            started = time.perf_counter()
            real.embed_query(text)
            embedded.append((time.perf_counter() - started) * 1000)
    engine = Engine(connect(db), embedder=Replay(real, vectors))  # type: ignore[arg-type]
    store = engine.store
    for kind in (Kind.OBJECT, Kind.RELATIONSHIP):
        store.wait_for_index("default", kind, 900)  # type: ignore[attr-defined]
    if hasattr(engine, "warm"):
        engine.warm()  # what `serve` does at start (older versions: its search only)
    requests = [SearchRequest(query=q, limit=10) for q in vectors]
    times: list[float] = []
    cpu: list[float] = []
    for request in requests[:20]:
        engine.search(request)
    for _ in range(passes):
        for request in requests:
            started = time.process_time()
            meta = engine.search(request).metadata["executionTime"]
            cpu.append((time.process_time() - started) * 1000)
            # the question is replayed (no model time), so the whole search is timed:
            # less embedQueryMs it would leave out the texts a version embeds with the
            # question (its legs' rests) but keep those another embeds mid-search
            times.append(meta["totalMs"])
    engine.close()
    print(json.dumps({"search": times, "cpu": cpu, "embed": embedded}))


def _base_copy(tree: Path, db: Path, copy: Path) -> None:
    """Copy ``db`` for the version in ``tree``, forgetting migrations it does not know."""
    shutil.copyfile(db, copy)
    forget_migrations(tree / "src", copy)


def forget_migrations(src: Path, db: Path) -> None:
    """Forget the migrations the kgsearch in ``src`` does not know in the SQLite store
    ``db`` (a copy: an older version refuses a store a newer one migrated; what they
    added stays, unused by it)."""
    known = subprocess.run(
        [
            sys.executable,
            "-c",
            "from kgsearch.store.sqlite.schema import MIGRATIONS; "
            "print('\\n'.join(m.name for m in MIGRATIONS))",
        ],
        env={**os.environ, "PYTHONPATH": str(src)},
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    with sqlite3.connect(db) as conn:
        marks = ",".join("?" * len(known))
        conn.execute(f"DELETE FROM migrations WHERE name NOT IN ({marks})", known)


def _turn(tree: Path, db: Path, queries: Path, passes: int, embed: bool) -> dict[str, list[float]]:
    # each turn a store's first process: no texts saved by earlier turns' searches
    # (bench_quality.forget_saved_texts; that module is not imported in the children)
    Path(f"{db}.ann", "texts.npz").unlink(missing_ok=True)
    env = {**os.environ, "PYTHONPATH": str(tree / "src")}
    done = subprocess.run(
        [sys.executable, __file__, "--child", str(db), str(queries), str(passes), str(int(embed))],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode:
        sys.exit(f"the search run in {tree} failed:\n{done.stderr}")
    found = json.loads(done.stdout.strip().splitlines()[-1])
    return {name: [float(t) for t in found[name]] for name in ("search", "cpu", "embed")}


def _series(
    turns: list[dict[str, list[float]]], passes: int
) -> list[tuple[str, list[list[float]]]]:
    """(timing, per-turn times) of one version: search, and with embedding times also
    the embedding and end to end (each question's embedding plus each of its searches)."""
    out = [
        ("search", [turn["search"] for turn in turns]),
        ("search CPU time", [turn["cpu"] for turn in turns]),
    ]
    if all(turn["embed"] for turn in turns):
        out.append(("query embedding", [turn["embed"] for turn in turns]))
        out.append(
            (
                "end to end",
                [
                    [
                        t + turn["embed"][i % len(turn["embed"])]
                        for i, t in enumerate(turn["search"])
                    ]
                    for turn in turns
                ],
            )
        )
    return out


def main() -> None:
    """Parse arguments, run the turns, print and record the comparison."""
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        _child(sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5] == "1")
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base", required=True, help="the commit to compare with (e.g. HEAD~5)")
    parser.add_argument("--rounds", type=int, default=3, help="turns per version")
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--passes", type=int, default=3)
    parser.add_argument("--note", default="", help="a sentence saying what the base is")
    parser.add_argument(
        "--embed", action="store_true", help="also time each version's query embedding"
    )
    args = parser.parse_args()
    if min(args.rounds, args.queries, args.passes) < 1:
        parser.error("--rounds, --queries and --passes must be at least 1")

    sys.path.insert(0, str(ROOT / "scripts"))
    from bench_latency import percentile
    from bench_quality import ensure_full_db, metaqa_questions
    from benchdoc import table, write_section

    from kgsearch.embed import create_embedder

    db = ensure_full_db()
    base_rev = subprocess.run(
        ["git", "rev-parse", "--short", args.base],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    head_rev = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    embedder = create_embedder("bundled")
    questions = [q for q, _ in metaqa_questions(args.queries)]
    with tempfile.TemporaryDirectory(prefix="kgsearch-ab-") as tmp:
        work = Path(tmp)
        queries = work / "queries.json"
        queries.write_text(
            json.dumps({q: embedder.embed_query(q).tolist() for q in questions}), encoding="utf-8"
        )
        base_tree = work / "base"
        subprocess.run(
            ["git", "worktree", "add", "--detach", "-q", str(base_tree), base_rev],
            cwd=ROOT,
            check=True,
        )
        base_db = work / "base.db"
        _base_copy(base_tree, db, base_db)
        try:
            runs: dict[str, list[dict[str, list[float]]]] = {"base": [], "head": []}
            loads = [os.getloadavg()]
            for round_ in range(args.rounds):
                for name, tree, path in (("base", base_tree, base_db), ("head", ROOT, db)):
                    turn = _turn(tree, path, queries, args.passes, args.embed)
                    runs[name].append(turn)
                    loads.append(os.getloadavg())
                    times = turn["search"]
                    print(
                        f"round {round_ + 1} {name}: p50 {statistics.median(times):.1f} ms, "
                        f"p95 {percentile(times, 0.95):.1f} ms, load {loads[-1][0]:.1f}",
                        file=sys.stderr,
                    )
        finally:
            subprocess.run(
                ["git", "worktree", "remove", "--force", str(base_tree)], cwd=ROOT, check=False
            )
    rows = []
    for name, rev in (("base", base_rev), ("head", head_rev)):
        for label, series in _series(runs[name], args.passes):
            pooled = [t for run in series for t in run]
            rows.append(
                [
                    f"{name} ({rev})",
                    label,
                    f"{statistics.median(pooled):.1f}",
                    f"{percentile(pooled, 0.95):.1f}",
                    ", ".join(f"{percentile(run, 0.95):.1f}" for run in series),
                ]
            )
    rows.sort(key=lambda row: (row[1] != "search", row[1], row[0]))
    body = (
        f"{args.queries} MetaQA questions, unified search (objects + relationships, vector "
        f"+ BM25 each, RRF), limit 10, the question's embedding excluded from the search "
        "rows (replayed; other texts' embedding counted wherever a version makes it); each "
        f"version searched them {args.passes} times per turn, {args.rounds} turns each, "
        f"taking turns with the other version ({args.rounds * args.passes * args.queries} "
        "searches per version). Search CPU time is the process's CPU time during each "
        "search (all its threads): on a loaded machine it shows the work a search does "
        "better than the wall clock, which also holds the time spent waiting for a core."
        + (
            " The embedding rows time each version's bundled model on each question once "
            "per turn (one warm-up question first); end to end is a question's embedding "
            "plus each of its searches."
            if args.embed
            else ""
        )
        + "\n\n"
        + table(["version", "timing", "p50 ms", "p95 ms", "p95 of each turn"], rows)
        + "\n\nLoad average (1 min) at the start and after each turn: "
        + ", ".join(f"{load[0]:.1f}" for load in loads)
        + "."
        + (f"\n\n{args.note}" if args.note else "")
    )
    print(body)
    write_section(
        "ab-latency",
        "Speed: search latency against an earlier commit, same run",
        f"python scripts/bench_ab.py --base {base_rev} --rounds {args.rounds} "
        f"--queries {args.queries} --passes {args.passes}"
        + (" --embed" if args.embed else "")
        + (f" --note {json.dumps(args.note)}" if args.note else ""),
        body,
    )


if __name__ == "__main__":
    main()
