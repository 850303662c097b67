"""Multi-hop quality and latency: MetaQA 1/2/3-hop dev answer hits@10, default vs multi_hop.

Usage: python scripts/bench_multihop.py [--questions 500] [--offset 0] [--db PATH]

For each hop count, N dev questions from ``--offset`` (brackets left in the text: the
linker drops them and links from the words) are searched with the default recipe and
with ``recipe="multi_hop"``. A question is a hit when an answer is the key of one of the
top 10 objects, or an endpoint of one of the top 10 relationships. Latency is the wall
time of ``engine.search`` per question (p50 / p95 / max). The MetaQA graph is the
embedded ``bench-data/metaqa-full.db`` (see bench_quality.py), opened read-only in
effect: the searches write nothing.

Each ``multi_hop`` miss is put in one category, from a second (untimed) run of the path
walk on the question and the relation path MetaQA's question type names (the bench knows
the MetaQA schema; the search does not): the bracketed topic is not linked; the right
path is not among the walk's best paths; it is, but the objects it reached hold no
answer; or they do, but no answer reaches the top 10.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import re
import statistics
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

from benchdoc import table, write_section

from kgsearch import Engine, SearchRequest, connect
from kgsearch.search.paths import walk_paths

ROOT = Path(__file__).resolve().parent.parent
EVAL = ROOT.parent / "shared" / "eval-data" / "metaqa"
DEFAULT_DB = ROOT / "bench-data" / "metaqa-full.db"
# MetaQA question types name entity kinds; every relation joins a movie to one kind
RELATION = {
    "director": "directed_by",
    "writer": "written_by",
    "actor": "starred_actors",
    "year": "release_year",
    "language": "in_language",
    "tag": "has_tags",
    "genre": "has_genre",
    "votes": "has_imdb_votes",
    "rating": "has_imdb_rating",
}
MISSES = ("topic not linked", "path not in beam", "path reaches no answer", "answers not in top 10")

Question = tuple[str, set[str], str]


def questions(hops: int, n: int, offset: int = 0) -> list[Question]:
    """``n`` dev questions of a hop count from line ``offset``, with their answers and
    question type."""
    folder = EVAL / f"{hops}-hop"
    lines = (folder / "qa_dev.txt").read_text(encoding="utf-8").splitlines()
    types = (folder / "qa_dev_qtype.txt").read_text(encoding="utf-8").splitlines()
    out = []
    for line, qtype in list(zip(lines, types, strict=False))[offset : offset + n]:
        question, _, answers = line.partition("\t")
        out.append((question, {a.lower() for a in answers.split("|")}, qtype.strip()))
    return out


def gold_path(qtype: str) -> tuple[tuple[str, bool], ...]:
    """The relation path a question type names: ``actor_to_movie_to_director`` →
    ``starred_actors`` backwards, then ``directed_by`` forwards."""
    kinds = qtype.split("_to_")
    return tuple(
        (RELATION[b], True) if a == "movie" else (RELATION[a], False)
        for a, b in itertools.pairwise(kinds)
    )


def miss_category(engine: Engine, names: dict[str, str], question: Question) -> str:
    """Why ``multi_hop`` missed a question (one of :data:`MISSES`)."""
    text, answers, qtype = question
    topic = re.search(r"\[([^\]]+)\]", text)
    embed = engine.embedder.embed_query
    found = walk_paths(engine.store, "default", text, embed, depth=3)
    if topic is None or topic.group(1).lower() not in {names[s].lower() for s in found.seeds}:
        return MISSES[0]
    reached = dict(found.signatures).get(gold_path(qtype))
    if reached is None:
        return MISSES[1]
    if not {names.get(i, "").lower() for i in reached} & answers:
        return MISSES[2]
    return MISSES[3]


def run(
    engine: Engine,
    names: dict[str, str],
    batch: list[Question],
    recipe: str | None,
    misses: Counter[str] | None = None,
) -> tuple[float, list[float]]:
    """Hits@10 and per-question latency (ms) of one recipe on a batch of questions;
    each miss is counted by category into ``misses`` when given."""
    hits, times = 0, []
    for question in batch:
        started = time.perf_counter()
        response = engine.search(SearchRequest(query=question[0], limit=10, recipe=recipe))
        times.append((time.perf_counter() - started) * 1000)
        found: set[str] = set()
        for r in response.results:
            if r.type == "graph":
                found.add(r.key.lower())
            elif r.type == "relationship":
                found.update(names.get(i, "").lower() for i in (r.source_id, r.target_id))
        hit = bool(found & question[1])
        hits += hit
        if not hit and misses is not None:
            misses[miss_category(engine, names, question)] += 1
    return hits / len(batch), sorted(times)


CHILD = """
import json, sys, threading, time
from kgsearch import Engine, SearchRequest, connect
from kgsearch.search import legs
walk, spent = legs.walk_paths, []
def timed(*args, **kwargs):
    started = time.perf_counter()
    found = walk(*args, **kwargs)
    spent.append((time.perf_counter() - started) * 1000)
    return found
legs.walk_paths = timed
engine = Engine(connect(sys.argv[1]))
key = engine.store.list_rows("default", "object", limit=1).items[0].key
for _ in range(3):  # a linked question; then wait for what the walk reads in the background
    engine.search(SearchRequest(query=f"which films are related to {key}", recipe="multi_hop"))
    for _ in range(1200):
        if not any(t.name.startswith("kgsearch-path") for t in threading.enumerate()):
            break
        time.sleep(0.1)
print(json.dumps([0.0, 0.0]), flush=True)
for line in sys.stdin:
    spent.clear()
    started = time.perf_counter()
    engine.search(SearchRequest(query=line.strip(), limit=10, recipe="multi_hop"))
    print(json.dumps([(time.perf_counter() - started) * 1000, sum(spent)]), flush=True)
"""


def ab(db: str, base_src: str, batch: list[str]) -> dict[str, list[tuple[float, float]]]:
    """``multi_hop`` latency (the whole search, and its ``graph:paths`` walk) of this
    checkout and of the kgsearch sources at ``base_src``, each in a child process,
    taking turns question by question (the order flips each question) so the machine's
    noise falls on both alike. Both children are warmed up first, and wait until what
    the walk reads in the background (the held graph, its type vectors) is done."""
    here = str(ROOT / "src")
    children = {
        name: subprocess.Popen(
            [sys.executable, "-c", CHILD, db],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONPATH": src},
        )
        for name, src in (("base", base_src), ("head", here))
    }
    for child in children.values():  # ready: warmed up
        assert child.stdout is not None
        child.stdout.readline()
    times: dict[str, list[tuple[float, float]]] = {"base": [], "head": []}
    for k, question in enumerate(batch):
        for name in ("base", "head") if k % 2 == 0 else ("head", "base"):
            child = children[name]
            assert child.stdin is not None and child.stdout is not None
            child.stdin.write(" ".join(question.split()) + "\n")
            child.stdin.flush()
            total, walked = json.loads(child.stdout.readline())
            times[name].append((total, walked))
    for child in children.values():
        assert child.stdin is not None
        child.stdin.close()
        child.wait()
    return times


def row(hops: int, recipe: str | None, score: float, times: list[float]) -> list[str]:
    """One table row: hop count, recipe, hits@10, latency p50 / p95 / max."""
    p95 = times[min(len(times) - 1, int(0.95 * len(times)))]
    return [
        f"{hops}-hop",
        recipe or "default",
        f"{score:.3f}",
        f"{statistics.median(times):.0f}",
        f"{p95:.0f}",
        f"{times[-1]:.0f}",
    ]


def main() -> None:
    """Run the bench and write its section of docs/benchmarks.md."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=500)
    parser.add_argument("--offset", type=int, default=0, help="first question (held-out runs)")
    parser.add_argument("--db", default=str(DEFAULT_DB))
    parser.add_argument("--hops", default="1,2,3")
    parser.add_argument("--recipes", default="default,multi_hop")
    parser.add_argument("--no-write", action="store_true")
    parser.add_argument(
        "--no-misses", action="store_true", help="skip the miss categories (older sources)"
    )
    parser.add_argument(
        "--ab-base",
        help="kgsearch sources (a src/ directory) to time multi_hop against, interleaved",
    )
    parser.add_argument(
        "--passages",
        help="with --ab-base: time these passage sets (bench_passages.py's stores and "
        "questions, e.g. musique-spacy,hotpotqa-spacy) instead of MetaQA",
    )
    args = parser.parse_args()
    if args.ab_base:
        timing_ab(args)
        return
    engine = Engine(connect(args.db))
    names = {o.id: o.key for o in engine.store.iter_rows("default", "object")}
    engine.search(SearchRequest(query="warm up", limit=10))
    rows, breakdown = [], []
    for hops in (int(h) for h in args.hops.split(",")):
        batch = questions(hops, args.questions, args.offset)
        for name in args.recipes.split(","):
            recipe = None if name == "default" else name
            wanted = recipe == "multi_hop" and not args.no_misses
            misses: Counter[str] | None = Counter() if wanted else None
            score, times = run(engine, names, batch, recipe, misses)
            rows.append(row(hops, recipe, score, times))
            print(" | ".join(rows[-1]), flush=True)
            if misses is not None and hops > 1:
                breakdown.append([f"{hops}-hop", *(str(misses[m]) for m in MISSES)])
                print(" | ".join(breakdown[-1]), flush=True)
    first = f"from question {args.offset}" if args.offset else "first"
    body = (
        f"MetaQA dev, {first} {args.questions} questions per hop count, full MetaQA graph "
        "(43k movies and people, 129k relationships). Hits@10: an answer entity is among "
        "the top 10 objects or the endpoints of the top 10 relationships.\n\n"
        + table(["questions", "recipe", "hits@10", "p50 ms", "p95 ms", "max ms"], rows)
    )
    if breakdown:
        body += "\n\n`multi_hop` misses by category (see the script's docstring):\n\n" + table(
            ["questions", *MISSES], breakdown
        )
    print(body)
    if not args.no_write:
        command = f"python scripts/bench_multihop.py --questions {args.questions}"
        if args.offset:
            command += f" --offset {args.offset}"
        write_section("quality-multihop", "Quality: MetaQA multi-hop", command, body)


def timing_ab(args: argparse.Namespace) -> None:
    """Print ``multi_hop`` p50 / p95 of the base and this checkout (the whole search and
    its ``graph:paths`` walk), with the load, per hop count or per passage set."""
    batches: list[tuple[str, str, list[str]]] = []
    if args.passages:
        from bench_passages import DATA
        from bench_passages import questions as passage_questions

        for name in args.passages.split(","):
            texts = [q for q, _ in passage_questions(name)]
            asked = texts[args.offset : args.offset + args.questions]
            batches.append((name, str(DATA / f"passages-{name}.db"), asked))
    else:
        for hops in (int(h) for h in args.hops.split(",")):
            metaqa = questions(hops, args.questions, args.offset)
            batches.append((f"{hops}-hop", args.db, [q for q, _, _ in metaqa]))
    rows = []
    for label, db, batch in batches:
        load = os.getloadavg()[0]
        for name, pairs in ab(db, args.ab_base, batch).items():
            rows.append([label, name, *_percentiles([t for t, _ in pairs])])
            rows[-1] += [*_percentiles([w for _, w in pairs]), f"{load:.1f}"]
            print(" | ".join(rows[-1]), flush=True)
    headers = ["questions", "version", "p50 ms", "p95 ms", "graph:paths p50", "p95"]
    print(table([*headers, "load (1 min) at start"], rows))


def _percentiles(times: list[float]) -> list[str]:
    """p50 and p95 of some times, formatted."""
    ordered = sorted(times)
    p95 = ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]
    return [f"{statistics.median(ordered):.1f}", f"{p95:.1f}"]


if __name__ == "__main__":
    main()
