"""Retrieval-quality benchmarks over shared/eval-data with the real bundled model.

Usage: python scripts/bench_quality.py [--part metaqa|typed|scifact|all] [--questions 1000]
       [--embedder bundled:fast --data DIR]

``--embedder`` measures another embedder (its stores must be embedded with it:
``--data`` names a folder holding copies, e.g. made with ``kgsearch embed generate
--model bundled:fast --force``); its sections are written apart from the default's.

* metaqa  — MetaQA 1-hop dev (1,000 questions, drawn as in shared/notes/baselines.md):
  triple hits@10 / recall@10 / MRR@10 of relationship search (dense, BM25, hybrid) and
  answer hits@10 of unified search with relationship search on vs off. Needs the full
  MetaQA graph embedded in bench-data/metaqa-full.db (the script builds it if missing:
  about 10–15 minutes on 2 cores).
* typed   — same-name entities of different types in the MetaQA sample ("Jesse James"
  the movie vs the person): top-1 accuracy of object search with ``type_hint``, graph-aware
  text vs plain text.
* scifact — SciFact (BEIR train split, 809 claims, 5,183 abstracts as chunks):
  nDCG@10 for BM25, dense and hybrid RRF.
"""

from __future__ import annotations

import argparse
import ast
import collections
import csv
import io
import json
import math
import random
import re
import subprocess
import sys
import tempfile
import tokenize
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench_import import ensure_full
from benchdoc import table, write_section

from kgsearch import ChunkIn, Engine, Kind, SearchRequest, connect
from kgsearch.embed import create_embedder
from kgsearch.search.request import ScopeConfig
from kgsearch.store.sqlite import lexical as sqlite_lexical
from kgsearch.store.sqlite import search as sqlite_search

ROOT = Path(__file__).resolve().parent.parent
EVAL = ROOT.parent / "shared" / "eval-data"
DATA = ROOT / "bench-data"
FULL_DB = DATA / "metaqa-full.db"
"""The bundled model's full MetaQA store (other scripts read it)."""
EMBEDDER = "bundled"
"""The embedder measured (--embedder), and the folder of its stores (--data)."""
SAMPLE = ROOT / "data" / "sample" / "metaqa-movies.jsonl"


def kgsearch_cli(*args: str) -> None:
    """Run the CLI (the same code path a user runs)."""
    subprocess.run([sys.executable, "-m", "kgsearch", *args], check=True)


def engine_for(path: Path | str, **options: Any) -> Engine:
    """An engine on the store at ``path`` with the embedder measured."""
    return Engine(connect(str(path)), embedder=create_embedder(EMBEDDER), **options)


def forget_saved_texts(db: Path) -> None:
    """Remove the text vectors an earlier run's searches saved beside ``db``
    (``<db>.ann/texts.npz``, search/saved_texts.py), so a run's first-time questions are
    timed as in a store's first process, not after a run of the same questions."""
    Path(f"{db}.ann", "texts.npz").unlink(missing_ok=True)


def ensure_full_db() -> Path:
    """Import and embed the full MetaQA graph once (without saved texts: see
    :func:`forget_saved_texts`)."""
    full_db = DATA / "metaqa-full.db"
    if not full_db.exists():
        kgsearch_cli("--db", str(full_db), "import", str(ensure_full()))
    engine = engine_for(full_db)
    status = engine.embedding_status()
    if status.pending or status.failed:
        engine.embed_pending(batch_size=128)
    engine.close()
    forget_saved_texts(full_db)
    return full_db


# MetaQA 1-hop ---------------------------------------------------------------------------


def _gold(row: dict[str, Any]) -> set[tuple[str, str, str]]:
    """A gold-triples row's triples in KB orientation."""
    gold = set()
    for t in row["triples"]:
        r = t["r"]
        gold.add((t["t"], r[:-10], t["h"]) if r.endswith(" [inverse]") else (t["h"], r, t["t"]))
    return gold


def metaqa_questions(
    n: int, split: str = "dev", offset: int = 0
) -> list[tuple[str, set[tuple[str, str, str]]]]:
    """``n`` questions with gold KB triples (baselines.md protocol), from ``offset`` on.

    Splits: ``dev`` (dev_gold_triples.jsonl, shuffled with seed 42 as in baselines.md);
    ``ntm`` (the same dev questions paraphrased by back-translation, qa_dev_ntm.txt,
    line-aligned with qa_dev.txt, gold triples of the original question; same order);
    ``test`` (test_gold_triples.jsonl in the same format, when present).
    """
    folder = EVAL / "metaqa" / "1-hop"
    kb = {
        tuple(line.rstrip("\n").split("|"))
        for line in (EVAL / "metaqa" / "kb.txt").open(encoding="utf-8")
    }
    source = folder / ("test_gold_triples.jsonl" if split == "test" else "dev_gold_triples.jsonl")
    if not source.exists():
        raise SystemExit(f"{source} is missing: the {split} split is not in shared/eval-data")
    rows = [json.loads(line) for line in source.open(encoding="utf-8")]
    random.Random(42).shuffle(rows)
    if split == "ntm":
        originals = [line.split("\t")[0] for line in (folder / "qa_dev.txt").open(encoding="utf-8")]
        phrased = [
            line.split("\t")[0] for line in (folder / "qa_dev_ntm.txt").open(encoding="utf-8")
        ]
        paraphrase = dict(zip(originals, phrased, strict=True))
        rows = [
            {**row, "question": paraphrase[row["question"]]}
            for row in rows
            if row["question"] in paraphrase
        ]
    out: list[tuple[str, set[tuple[str, str, str]]]] = []
    for row in rows:
        gold = _gold(row)
        if gold and gold <= kb:
            out.append((re.sub(r"[\[\]]", "", row["question"]), gold))
        if len(out) == offset + n:
            break
    return out[offset:]


def triple_index(engine: Engine) -> dict[str, tuple[str, str, str]]:
    """relationship id → (head name, relation, tail name)."""
    names = {o.id: o.key for o in engine.store.iter_rows("default", "object")}
    return {
        r.id: (names[r.source_id], r.type, names[r.target_id])
        for r in engine.store.iter_rows("default", "relationship")
    }


def score_triples(
    ranked: list[tuple[str, str, str]], gold: set[tuple[str, str, str]]
) -> tuple[float, float, float]:
    """hits@10, recall@10, MRR@10 of a ranked triple list."""
    top = ranked[:10]
    hits = [t in gold for t in top]
    recall = sum(hits) / min(len(gold), 10)
    mrr = next((1 / (i + 1) for i, h in enumerate(hits) if h), 0.0)
    return float(any(hits)), recall, mrr


def run_metaqa(n: int, split: str = "dev", offset: int = 0) -> str:
    """Relationship search and unified search on MetaQA 1-hop."""
    engine = engine_for(ensure_full_db())
    store = engine.store
    for kind in Kind:
        getattr(store, "wait_for_index", lambda *a, **k: True)("default", kind, 600)
    triples = triple_index(engine)
    names = {o.id: o.key for o in store.iter_rows("default", "object")}
    questions = metaqa_questions(n, split, offset)
    rel_only = {"objects": None, "chunks": None}
    off = {"weights": {"relationships:anchored": 0.0}}  # the leg runs, fusion ignores it
    configs: dict[str, dict[str, Any]] = {
        "relationships: dense": {**rel_only, "relationships": ScopeConfig(methods=["vector"])},
        "relationships: BM25": {
            **rel_only,
            "relationships": ScopeConfig(methods=["bm25"]),
            **off,
        },
        "relationships: anchored leg alone": {
            **rel_only,
            "weights": {"relationships:vector": 0.0, "relationships:bm25": 0.0},
        },
        "relationships: hybrid RRF, dense + BM25 (before)": {**rel_only, **off},
        "relationships: hybrid RRF, dense + BM25 + anchored (default)": rel_only,
        "unified (objects + relationships), RRF, without anchored": off,
        "unified (objects + relationships), RRF (default)": {},
    }
    rows = []
    for label, options in configs.items():
        sums = [0.0, 0.0, 0.0]
        for question, gold in questions:
            response = engine.search(SearchRequest(query=question, limit=10, **options))
            ranked = [triples[r.id] for r in response.results if r.type == "relationship"]
            for i, v in enumerate(score_triples(ranked, gold)):
                sums[i] += v
        rows.append([label] + [f"{s / len(questions):.3f}" for s in sums])
    # Answer recall: does the top 10 surface the answer entity, relationship search on/off?
    answer_rows = []
    answer_configs: dict[str, dict[str, Any]] = {
        "objects only (relationship search off)": {"relationships": None, "chunks": None},
        "objects + relationships, without anchored": {"chunks": None, **off},
        "objects + relationships (default)": {"chunks": None},
    }
    for label, options in answer_configs.items():
        hit = 0
        for question, gold in questions:
            response = engine.search(SearchRequest(query=question, limit=10, **options))
            found: set[str] = set()
            for r in response.results:
                if r.type == "graph":
                    found.add(r.key)
                elif r.type == "relationship":
                    found.update((names.get(r.source_id, ""), names.get(r.target_id, "")))
            hit += bool(found & _answers(question, gold))
        answer_rows.append([label, f"{hit / len(questions):.3f}"])
    engine.close()
    return (
        f"{len(questions)} MetaQA 1-hop {split} questions (from #{offset} of the seed-42 "
        "shuffle) over the full graph "
        "(43k objects, 129k relationships, all embedded).\n\n"
        + table(["method", "triple hits@10", "recall@10", "MRR@10"], rows)
        + "\n\nReference (shared/notes/baselines.md, same protocol): dense exact 0.901 / "
        "0.876 / 0.687, BM25 0.926 / 0.902 / 0.649, RRF dense+BM25 0.966 / 0.940 / 0.732.\n\n"
        "Answer hits@10 (an answer entity appears in the top 10 as an object or as a "
        "relationship endpoint):\n\n" + table(["unified search", "answer hits@10"], answer_rows)
    )


def _answers(question: str, gold: set[tuple[str, str, str]]) -> set[str]:
    """The entities a question asks for: gold-triple ends that are not in the question."""
    ends = {h for h, _, _ in gold} | {t for _, _, t in gold}
    asked = {e for e in ends if e.lower() not in question.lower()}
    return asked or ends


# typed search ------------------------------------------------------------------------------


def run_typed() -> str:
    """Same-name, different-type objects: top-1 type accuracy with type_hint."""
    rows = []
    pairs: list[tuple[str, str]] = []
    for graph_aware in (True, False):
        with tempfile.TemporaryDirectory() as tmp:
            engine = engine_for(Path(tmp) / "t.db", graph_aware=graph_aware)
            engine.import_files([SAMPLE])
            if not pairs:
                by_key: dict[str, set[str]] = collections.defaultdict(set)
                for o in engine.store.iter_rows("default", "object"):
                    by_key[o.key].add(o.type)
                pairs = sorted((k, t) for k, ts in by_key.items() if len(ts) > 1 for t in ts)
            engine.embed_pending(kinds=[Kind.OBJECT], batch_size=128)
            for methods in (["vector"], ["vector", "bm25"]):
                for hinted in (True, False):
                    correct = 0
                    for key, type_ in pairs:
                        response = engine.search(
                            SearchRequest(
                                query=key,
                                limit=1,
                                relationships=None,
                                chunks=None,
                                objects=ScopeConfig(methods=methods),
                                type_hint=type_.lower() if hinted else None,
                            )
                        )
                        top = response.results[0] if response.results else None
                        correct += bool(
                            top
                            and top.type == "graph"
                            and top.key == key
                            and top.object_type == type_
                        )
                    rows.append(
                        [
                            "graph-aware" if graph_aware else "plain",
                            " + ".join(methods),
                            "yes" if hinted else "no",
                            f"{correct}/{len(pairs)}",
                            f"{correct / len(pairs):.3f}",
                        ]
                    )
            engine.close()
    return (
        f"{len(pairs)} (name, type) pairs from the {len(pairs) // 2}+ names in the MetaQA "
        "sample that name objects of two types (e.g. Jesse James: Movie and Person). "
        "Query = the bare name; success = the top object hit is that name with the hinted "
        "type. A hint embeds the query as `[Type: #hint] name` and adds legs that rank "
        "only objects of the hinted type (fused by RRF: a boost, not a filter). With "
        "`bm25`, the exact-name legs run too (`objects:name`, and `objects:name:hinted` "
        "with a hint: objects whose key is the whole query).\n\n"
        + table(["object text", "object legs", "type_hint", "correct", "top-1 accuracy"], rows)
        + "\n\nWithout a hint, both objects of a pair are the same query, so at most "
        "half can be right: 0.5 is the ceiling there."
    )


# SciFact ---------------------------------------------------------------------------------------


def _sentences(raw: str) -> list[str]:
    return [
        ast.literal_eval(t.string)
        for t in tokenize.generate_tokens(io.StringIO(raw).readline)
        if t.type == tokenize.STRING
    ]


def ndcg10(ranked: list[str], relevant: set[str]) -> float:
    """Binary-relevance nDCG@10 (BEIR convention)."""
    dcg = sum(1 / math.log2(i + 2) for i, d in enumerate(ranked[:10]) if d in relevant)
    ideal = sum(1 / math.log2(i + 2) for i in range(min(len(relevant), 10)))
    return dcg / ideal if ideal else 0.0


def run_scifact() -> str:
    """nDCG@10 of BM25, dense and hybrid over SciFact abstracts stored as chunks."""
    csv.field_size_limit(10**9)
    folder = EVAL / "scifact"
    chunks = [
        ChunkIn(id=r["doc_id"], text=r["title"] + " " + " ".join(_sentences(r["abstract"])))
        for r in csv.DictReader((folder / "corpus.csv").open(encoding="utf-8"))
    ]
    queries: dict[str, str] = {}
    qrels: dict[str, set[str]] = collections.defaultdict(set)
    for r in csv.DictReader((folder / "claims_train.csv").open(encoding="utf-8")):
        queries[r["id"]] = r["claim"]
        qrels[r["id"]].update(r["cited_doc_ids"].strip("[]").split())
    queries = {q: text for q, text in queries.items() if qrels[q]}
    engine = engine_for(DATA / "scifact.db")
    if engine.store.counts("default")["chunks"] != len(chunks):
        for start in range(0, len(chunks), 500):
            engine.add_chunks(chunks[start : start + 500])
    engine.embed_pending(kinds=[Kind.CHUNK], batch_size=32)
    rows = []
    methods: dict[str, list[Any]] = {
        "BM25": ["bm25"],
        "dense": ["vector"],
        "hybrid RRF": ["vector", "bm25"],
    }

    def score(m: list[Any]) -> float:
        total = 0.0
        for qid, text in queries.items():
            response = engine.search(
                SearchRequest(
                    query=text,
                    limit=10,
                    result_types="text",
                    chunks=ScopeConfig(methods=m, candidates=100),
                )
            )
            total += ndcg10([r.id for r in response.results], qrels[qid])
        return total / len(queries)

    for label, m in methods.items():
        rows.append([label, f"{score(m):.4f}"])
    # Diagnostic: the SQLite BM25 leg matches a long query's rarer words only and re-scores
    # a pool of 3 x its limit; unpruned (every selective word matched alone, the matches
    # re-scored, up to 1,000) shows how much of the hybrid figure rides on them.
    pruning = (sqlite_lexical._ALONE_BUDGET, sqlite_search._RESCORE_POOL)
    sqlite_lexical._ALONE_BUDGET, sqlite_search._RESCORE_POOL = 10**9, 1000
    try:
        unpruned = score(methods["hybrid RRF"])
    finally:
        sqlite_lexical._ALONE_BUDGET, sqlite_search._RESCORE_POOL = pruning
    rows.append(["hybrid RRF, BM25 unpruned (diagnostic)", f"{unpruned:.4f}"])
    engine.close()
    return (
        f"{len(queries)} SciFact claims (BEIR *train* split, the split in shared/eval-data) "
        f"over {len(chunks)} abstracts stored as chunks (title + abstract; the model "
        "reads the first 256 tokens).\n\n"
        + table(["method", "nDCG@10"], rows)
        + "\n\nThe unpruned row runs the SQLite BM25 leg without its two approximations "
        "(a long query matches its rarer words only, and a pool of 3 × the limit is "
        "re-scored): every selective word is matched alone and up to 1,000 matches re-scored.\n\n"
        "Published reference: BM25 0.665 on the BEIR SciFact *test* split "
        "(BEIR paper); all-MiniLM-L6-v2 dense about 0.645 (MTEB). Different split, so "
        "compare the ordering, not the third decimal."
    )


PARTS: dict[str, tuple[str, Callable[..., str]]] = {
    "metaqa": ("Quality: MetaQA 1-hop relationship search", run_metaqa),
    "typed": ("Quality: typed search on same-name entities", run_typed),
    "scifact": ("Quality: SciFact nDCG@10", run_scifact),
}


def main() -> None:
    """Run the chosen parts and write docs/benchmarks.md (unless ``--no-write``)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", choices=[*PARTS, "all"], default="all")
    parser.add_argument("--questions", type=int, default=1000)
    parser.add_argument(
        "--split",
        choices=["dev", "ntm", "test"],
        default="dev",
        help="MetaQA 1-hop questions: dev, ntm (dev paraphrased), test (when present)",
    )
    parser.add_argument(
        "--offset", type=int, default=0, help="skip this many MetaQA questions (tuning slices)"
    )
    parser.add_argument("--embedder", default="bundled", help="provider:model to measure")
    parser.add_argument("--data", type=Path, help="folder of the stores (default: bench-data)")
    parser.add_argument(
        "--no-write",
        action="store_true",
        help="print the figures only (docs/benchmarks.md is left as it is: for tuning runs)",
    )
    args = parser.parse_args()
    global DATA, EMBEDDER
    DATA, EMBEDDER = args.data or DATA, args.embedder
    for name in PARTS if args.part == "all" else [args.part]:
        title, func = PARTS[name]
        body = func(args.questions, args.split, args.offset) if name == "metaqa" else func()
        print(body)
        command = f"python scripts/bench_quality.py --part {name}"
        section = f"quality-{name}"
        if name == "metaqa":
            command += f" --questions {args.questions}"
            if args.split != "dev" or args.offset:
                command += f" --split {args.split} --offset {args.offset}"
                section += f"-{args.split}-{args.offset}"
                title += f" ({args.split} split, from question {args.offset})"
        if EMBEDDER != "bundled":
            command += f" --embedder {EMBEDDER} --data {DATA}"
            section += f"-{EMBEDDER.replace(':', '-')}"
            title += f", embedder {EMBEDDER}"
            body = f"Embedder `{EMBEDDER}`.\n\n{body}"
        if not args.no_write:
            write_section(section, title, command, body)


if __name__ == "__main__":
    main()
