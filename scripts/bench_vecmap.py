"""Vectors mapped from a file saved beside the store (store/sqlite/saved_vectors.py)
against vectors read from SQLite, before and after a change in one run (section
"vecmap").

Usage: python scripts/bench_vecmap.py [--before /work/wt-head/src] [--rounds 3]
       [--searches 50] [--parts first,holds,serve,demo] [--write]

Each side (``before``: the kgsearch sources at ``--before``; ``after``: this
checkout's) runs on a private copy of the store (SQLite's backup of the shared one,
with the scan kernels already saved beside it copied along, so that neither side
builds one), in processes of its own:

* ``first`` (full MetaQA graph, ``bench-data/metaqa-full.db``): a fresh process opens
  an engine with the bundled model and runs one unified search (a MetaQA 1-hop dev
  question, a new one each round, the same for both sides). Printed: the process's
  wall time from its start to the answer, its CPU time (all threads, imports
  included), the search's own wall and CPU, and whether both sides answered the same
  (the response's JSON without timings). The after side's first process reads the rows
  and saves them (``cold``); the rounds after it map the file. Sides take turns.
* ``holds`` (the same store, after ``first``): a fresh process a side opens the store,
  loads each kind's vectors and waits for its scan kernel; the RSS and PSS (anonymous,
  file-backed) each step adds.
* ``serve`` (the same store): ``kgsearch serve --workers 2`` on the copy, warmed as
  usual, then ``--searches`` unified searches over HTTP (distinct questions); then
  each worker process's RSS and PSS (``/proc/<pid>/smaps_rollup``: PSS splits each
  shared page between the processes mapping it), anonymous and file-backed.
* ``demo`` (``bench-data/load-sample.db``, the REST sample graph, the size of ``make
  demo``'s): the ``first`` figures on that store, and the saved files' size.

The load average is printed with every figure; prefer the CPU columns.
"""

from __future__ import annotations

import argparse
import itertools
import os
import shutil
import sqlite3
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "bench-data"
METAQA = DATA / "metaqa-full.db"
DEMO = DATA / "load-sample.db"
sys.path.insert(0, str(ROOT / "scripts"))

from bench_kernel_build import child  # noqa: E402  (scripts/ on the path first)

FIRST = """
import hashlib, json, sys, time
clock = lambda: (time.perf_counter(), time.process_time())
from kgsearch import Engine, SearchRequest, connect
from kgsearch.embed import create_embedder
engine = Engine(connect(sys.argv[1]), embedder=create_embedder("bundled"))
start = clock()
response = engine.search(SearchRequest(query=sys.argv[2], limit=10))
done = clock()
body = response.model_dump(mode="json", by_alias=True)
body["metadata"].pop("executionTime", None)
cache = getattr(engine.store, "vectors_cache", None)
print(json.dumps({
    "search": [done[0] - start[0], done[1] - start[1]],
    "cpu": done[1],
    "digest": hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()[:16],
    "mapped": getattr(cache, "mapped", None),
}))
"""


HOLDS = """
import ctypes, gc, json, sys
from pathlib import Path
import onnxruntime  # the kernel's library loaded before the first figure
from kgsearch.model import Kind
from kgsearch.store.sqlite import SQLiteStore

def rollup():
    gc.collect()
    ctypes.CDLL("libc.so.6").malloc_trim(0)
    found = {}
    for line in Path("/proc/self/smaps_rollup").read_text().splitlines()[1:]:
        name, value, *_ = line.split()
        found[name.rstrip(":")] = int(value) / 1024
    return [found["Rss"], found.get("Pss_Anon", 0), found.get("Pss_File", 0)]

store = SQLiteStore(sys.argv[1])
steps = {"opened": rollup()}
for kind in (Kind.RELATIONSHIP, Kind.OBJECT):
    entry = store.vectors_cache.entry(store.db, "default", kind)
    steps[kind.value + " vectors"] = rollup()
    assert entry.scan is not None and entry.scan.wait(600)
    steps[kind.value + " kernel"] = rollup()
print(json.dumps(steps))
"""


def holds_part(db: Path, sides: dict[str, Path]) -> list[str]:
    """Part ``holds``: what a process holds for the vector legs, step by step (a fresh
    process a side, after ``first`` saved the vectors)."""
    lines = [
        f"{db.name}: what one process holds for the vector legs, MB added by each step "
        "(RSS / PSS anonymous / PSS file-backed; kernels loaded from their saved files)"
    ]
    for side, src in sides.items():
        steps: dict[str, list[float]] = child(HOLDS, src, str(db))
        names = list(steps)
        cells = []
        for before, after in itertools.pairwise(names):
            delta = [b - a for a, b in zip(steps[before], steps[after], strict=True)]
            cells.append(f"{after} +{delta[0]:.0f} / {delta[1]:+.0f} / {delta[2]:+.0f}")
        lines.append(f"  {side}: {'; '.join(cells)} (load {load():.1f})")
    return lines


DESCRIPTION = """\
Before: every process reads each kind's vectors from SQLite into matrices of its own
(float32 and int8 codes). After: the first process saves them beside the store
(`<db>.ann/<name>-<kind>-<seq>.vectors`) and every process maps that file copy-on-write
(store/sqlite/saved_vectors.py). Both sides run on private copies of the full MetaQA
store (42,828 objects, 129,235 relationships) and of the REST sample graph, with the
bundled model and the scan kernels already saved beside them. *first*: a fresh process
opens an engine and runs one unified search (a MetaQA dev question of its own a round,
the same for both sides; sides take turns); wall from the process's start and the
process's CPU (imports and model load included), then the search's own. *after cold*
is the process that reads the rows and saves them. *holds*: MB one process adds as it
loads each kind's vectors and its kernel (PSS anonymous is private memory; file-backed
pages are the page cache's, shared by every process mapping them and counted in their
PSS in equal parts). *serve*: `kgsearch serve --workers 2` after 50 unified searches
over HTTP, each worker's RSS and PSS from /proc/<pid>/smaps_rollup. Load average with
every figure; the machine is shared (2 cores), so prefer the CPU figures.\
"""


def load() -> float:
    return os.getloadavg()[0]


def private_copy(source: Path, folder: Path) -> Path:
    """A copy of ``source`` (SQLite's backup: consistent while others read it), with the
    scan kernels saved beside it (``*.nbits``) copied along."""
    target = folder / source.name
    with (
        sqlite3.connect(f"file:{source}?mode=ro", uri=True) as src,
        sqlite3.connect(target) as dst,
    ):
        src.backup(dst)
    kernels = Path(f"{source}.ann")
    if kernels.is_dir():
        (folder / f"{source.name}.ann").mkdir(exist_ok=True)
        for kernel in kernels.glob("*.nbits"):
            shutil.copy(kernel, folder / f"{source.name}.ann" / kernel.name)
    return target


def first(db: Path, src: Path, question: str) -> dict[str, Any]:
    """The ``FIRST`` figures of one fresh process (wall from its start, measured here)."""
    started = time.perf_counter()
    found: dict[str, Any] = child(FIRST, src, str(db), question)
    found["wall"] = time.perf_counter() - started
    found["load"] = load()
    return found


def first_part(db: Path, sides: dict[str, Path], rounds: int, questions: list[str]) -> list[str]:
    """Part ``first`` on ``db`` (a private copy): lines of the report."""
    for saved in Path(f"{db}.ann").glob("*.vectors"):
        saved.unlink()
    runs: dict[str, list[dict[str, Any]]] = {}
    for round_ in range(rounds + 1):
        order = list(sides.items()) if round_ % 2 == 0 else list(sides.items())[::-1]
        for side, src in order:
            label = f"{side} cold" if side == "after" and round_ == 0 else side
            runs.setdefault(label, []).append(first(db, src, questions[round_]))
    same = all(
        runs["before"][i]["digest"] == b["digest"]
        for i, b in enumerate(runs["after cold"] + runs.get("after", []))
    )
    lines = [
        f"{db.name}: a fresh process to its first unified search (s; process wall from its "
        "start / process CPU, imports and model load included; the search's own wall / CPU), "
        f"sides taking turns; responses identical: {same}"
    ]
    for label, found in runs.items():
        cells = "; ".join(
            f"{r['wall']:.2f} / {r['cpu']:.2f} (search {r['search'][0]:.2f} / "
            f"{r['search'][1]:.2f}, load {r['load']:.1f})"
            for r in found
        )
        lines.append(f"  {label}: {cells}")
    files = sorted(Path(f"{db}.ann").glob("*.vectors"))
    if files:
        sizes = ", ".join(
            f"{p.name.split('-')[1]} {p.stat().st_size / 2**20:.1f} MB" for p in files
        )
        lines.append(f"  saved vectors beside the store: {sizes}")
    return lines


def rollup(pid: int) -> dict[str, float]:
    """A process's smaps_rollup figures in MB."""
    found: dict[str, float] = {}
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines()[1:]:
        name, value, *_ = line.split()
        found[name.rstrip(":")] = int(value) / 1024
    return found


def workers(pid: int) -> list[int]:
    """The server processes under uvicorn's supervisor ``pid`` (its children that
    import kgsearch: not multiprocessing's resource tracker)."""
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        for kid in (task / "children").read_text().split():
            cmdline = Path(f"/proc/{kid}/cmdline").read_bytes()
            if b"resource_tracker" not in cmdline:
                found.append(int(kid))
    return found


def serve_part(db: Path, sides: dict[str, Path], searches: int, questions: list[str]) -> list[str]:
    """Part ``serve``: each worker's memory after ``searches`` searches."""
    from bench_load import free_port, make_key, start_server

    key, _ = make_key(str(db))
    headers = {"Authorization": f"Bearer {key}"}

    lines = [
        f"kgsearch serve --workers 2 on {db.name} after {searches} unified searches: per worker "
        "MB, RSS / PSS (PSS anonymous + file-backed)"
    ]
    for side, src in sides.items():
        port = free_port()
        server = start_server(str(db), port, None, workers=2, src=src)
        try:
            base = f"http://127.0.0.1:{port}"
            with httpx.Client(base_url=base, headers=headers, timeout=120) as client:
                for question in questions[:searches]:
                    reply = client.post("/api/search/unified", json={"query": question})
                    reply.raise_for_status()
            cells = []
            for pid in workers(server.pid):
                r = rollup(pid)
                cells.append(
                    f"{r['Rss']:.0f} / {r['Pss']:.0f} ({r.get('Pss_Anon', 0):.0f} + "
                    f"{r.get('Pss_File', 0):.0f})"
                )
            lines.append(f"  {side}: {'; '.join(cells)} (load {load():.1f})")
        finally:
            server.terminate()
            server.wait(60)
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", default="/work/wt-head/src", help="the before side's src/")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--searches", type=int, default=50)
    parser.add_argument("--parts", default="first,holds,serve,demo")
    parser.add_argument("--write", action="store_true", help="write docs/benchmarks.md's section")
    args = parser.parse_args()
    from bench_load import questions as sample_questions
    from bench_quality import metaqa_questions

    metaqa = [q for q, _ in metaqa_questions(args.rounds + 1 + args.searches, offset=500)]
    sides = {"before": Path(args.before), "after": ROOT / "src"}
    parts = args.parts.split(",")
    report: list[str] = []
    with tempfile.TemporaryDirectory(prefix="bench-vecmap-") as tmp:
        if "first" in parts or "holds" in parts or "serve" in parts:
            db = private_copy(METAQA, Path(tmp))
            if "first" in parts:
                report += first_part(db, sides, args.rounds, metaqa)
                print("\n".join(report), flush=True)
            if "holds" in parts:
                lines = holds_part(db, sides)
                print("\n".join(lines), flush=True)
                report += lines
            if "serve" in parts:
                lines = serve_part(db, sides, args.searches, metaqa[args.rounds + 1 :])
                print("\n".join(lines), flush=True)
                report += lines
            db.unlink()
            shutil.rmtree(Path(f"{db}.ann"), ignore_errors=True)
        if "demo" in parts:
            demo = private_copy(DEMO, Path(tmp))
            lines = first_part(demo, sides, args.rounds, sample_questions(args.rounds + 1))
            print("\n".join(lines), flush=True)
            report += lines
    if args.write:
        from benchdoc import write_section

        body = DESCRIPTION + "\n\n```\n" + "\n".join(report) + "\n```\n"
        flags = [a for a in sys.argv[1:] if a != "--write"]
        command = " ".join(["python scripts/bench_vecmap.py", *flags])
        write_section("vecmap", "Vectors mapped from a saved file (issue 34)", command, body)


if __name__ == "__main__":
    main()
