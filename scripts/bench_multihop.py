"""Multi-hop quality and latency: MetaQA 1/2/3-hop dev answer hits@10, default vs multi_hop.

Usage: python scripts/bench_multihop.py [--questions 500] [--db PATH]

For each hop count, the first N dev questions (brackets left in the text: the linker
drops them and links from the words) are searched with the default recipe and with
``recipe="multi_hop"``. A question is a hit when an answer is the key of one of the top
10 objects, or an endpoint of one of the top 10 relationships. Latency is the wall time
of ``engine.search`` per question (p50 / p95 / max). The MetaQA graph is the embedded
``bench-data/metaqa-full.db`` (see bench_quality.py), opened read-only in effect: the
searches write nothing.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from benchdoc import table, write_section

from kgsearch import Engine, SearchRequest, connect

ROOT = Path(__file__).resolve().parent.parent
EVAL = ROOT.parent / "shared" / "eval-data" / "metaqa"
DEFAULT_DB = ROOT / "bench-data" / "metaqa-full.db"


def questions(hops: int, n: int) -> list[tuple[str, set[str]]]:
    """The first ``n`` dev questions of a hop count, with their answers."""
    out = []
    with (EVAL / f"{hops}-hop" / "qa_dev.txt").open(encoding="utf-8") as f:
        for line in f:
            question, _, answers = line.rstrip("\n").partition("\t")
            out.append((question, {a.lower() for a in answers.split("|")}))
            if len(out) >= n:
                break
    return out


def run(engine: Engine, names: dict[str, str], hops: int, n: int, recipe: str | None) -> list[str]:
    """Hits@10 and latency of one recipe on one hop count."""
    hits, times = 0, []
    for question, answers in questions(hops, n):
        started = time.perf_counter()
        response = engine.search(SearchRequest(query=question, limit=10, recipe=recipe))
        times.append((time.perf_counter() - started) * 1000)
        found: set[str] = set()
        for r in response.results:
            if r.type == "graph":
                found.add(r.key.lower())
            elif r.type == "relationship":
                found.update(names.get(i, "").lower() for i in (r.source_id, r.target_id))
        hits += bool(found & answers)
    times.sort()
    p95 = times[min(len(times) - 1, int(0.95 * len(times)))]
    return [
        f"{hops}-hop",
        recipe or "default",
        f"{hits / n:.3f}",
        f"{statistics.median(times):.0f}",
        f"{p95:.0f}",
        f"{times[-1]:.0f}",
    ]


def main() -> None:
    """Run the bench and write its section of docs/benchmarks.md."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=500)
    parser.add_argument("--db", default=str(DEFAULT_DB))
    parser.add_argument("--hops", default="1,2,3")
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    engine = Engine(connect(args.db))
    names = {o.id: o.key for o in engine.store.iter_rows("default", "object")}
    engine.search(SearchRequest(query="warm up", limit=10))
    rows = []
    for hops in (int(h) for h in args.hops.split(",")):
        for recipe in (None, "multi_hop"):
            rows.append(run(engine, names, hops, args.questions, recipe))
            print(" | ".join(rows[-1]), flush=True)
    body = (
        f"MetaQA dev, first {args.questions} questions per hop count, full MetaQA graph "
        "(43k movies and people, 270k relationships). Hits@10: an answer entity is among "
        "the top 10 objects or the endpoints of the top 10 relationships.\n\n"
        + table(["questions", "recipe", "hits@10", "p50 ms", "p95 ms", "max ms"], rows)
    )
    print(body)
    if not args.no_write:
        command = f"python scripts/bench_multihop.py --questions {args.questions}"
        write_section("quality-multihop", "Quality: MetaQA multi-hop", command, body)


if __name__ == "__main__":
    main()
