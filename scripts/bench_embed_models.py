"""The bundled model against ``bundled:fast`` (re-quantised per channel): speed, memory,
fidelity and passage retrieval, each model in one run.

Usage: python scripts/bench_embed_models.py [--part speed,cosine,passages]
       [--sets musique,hotpotqa,2wiki] [--rounds 3] [--data DIR] [--write]

* speed: texts/s on three kinds of text (1,000 MetaQA 1-hop questions, 500 MuSiQue
  passages, 200 SciFact abstracts), each model in a fresh process per round, the two
  alternating so machine noise hits both; the peak RSS of each process (model,
  interpreter and vectors included).
* cosine: each text's cosine between the two models' vectors, on the same texts.
* passages: recall@2/@5 of dense (chunks' vector leg) and hybrid (vector + BM25, the
  ``chunks`` recipe) search on the HippoRAG passage sets of bench_passages.py, each
  passage one chunk (title + text) in a chunks-only store per model (kept in ``--data``;
  no graph, so the multi_hop recipe is not measured here).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench_passages import corpus, questions
from bench_quality import _sentences
from benchdoc import table, write_section

ROOT = Path(__file__).resolve().parent.parent
EVAL = ROOT.parent / "shared" / "eval-data"
MODELS = {"bundled": "bundled (today)", "bundled:fast": "bundled:fast"}
SETS = {"musique": "musique-spacy", "hotpotqa": "hotpotqa-spacy", "2wiki": "2wiki-spacy"}


def texts() -> dict[str, list[str]]:
    """The fixed texts of the speed and cosine parts, by kind."""
    questions_ = [
        line.split("\t")[0].replace("[", "").replace("]", "")
        for line in (EVAL / "metaqa/1-hop/qa_dev.txt").open(encoding="utf-8")
    ][:1000]
    passages = [f"{title}\n{text}" for title, text in corpus("musique")[:500]]
    csv.field_size_limit(10**9)
    with (EVAL / "scifact/corpus.csv").open(encoding="utf-8") as handle:
        abstracts = [
            r["title"] + " " + " ".join(_sentences(r["abstract"]))
            for _, r in zip(range(200), csv.DictReader(handle), strict=False)
        ]
    return {
        "MetaQA questions": questions_,
        "MuSiQue passages": passages,
        "SciFact abstracts": abstracts,
    }


def _speed_child(spec: str) -> None:
    """One round for one model: texts/s per kind (64 texts per call, warm), peak RSS."""
    from kgsearch.embed import create_embedder

    embedder = create_embedder(spec)
    embedder.embed_documents(["warm up"] * 64)
    out: dict[str, Any] = {}
    for kind, items in texts().items():
        started = time.perf_counter()
        for i in range(0, len(items), 64):
            embedder.embed_documents(items[i : i + 64])
        out[kind] = len(items) / (time.perf_counter() - started)
    singles = []
    for question in texts()["MetaQA questions"][:200]:
        started = time.perf_counter()
        embedder.embed_query(question)
        singles.append(1000 * (time.perf_counter() - started))
    out["query p50 ms"] = statistics.median(singles)
    out["peak_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps(out))


def run_speed(rounds: int) -> str:
    """Alternating rounds in fresh processes; medians of texts/s, max peak RSS."""
    # the fast model is built (or found in the cache) first, so no round includes a build
    build = (
        "from kgsearch.embed import create_embedder; "
        "create_embedder('bundled:fast').embed_query('x')"
    )
    subprocess.run([sys.executable, "-c", build], check=True)
    runs: dict[str, list[dict[str, float]]] = {spec: [] for spec in MODELS}
    for _ in range(rounds):
        for spec in MODELS:
            done = subprocess.run(
                [sys.executable, __file__, "--speed-child", spec],
                capture_output=True,
                text=True,
                check=True,
            )
            runs[spec].append(json.loads(done.stdout.splitlines()[-1]))
            print(spec, runs[spec][-1], file=sys.stderr)
    kinds = [k for k in runs["bundled"][0] if k != "peak_mb"]
    rows = []
    for spec, label in MODELS.items():
        medians = [statistics.median(r[k] for r in runs[spec]) for k in kinds]
        peak = max(r["peak_mb"] for r in runs[spec])
        rows.append(
            [label, *(f"{m:.1f}" if m < 100 else f"{m:.0f}" for m in medians), f"{peak:.0f}"]
        )
    ratios = [
        statistics.median(
            f[k] / b[k] for f, b in zip(runs["bundled:fast"], runs["bundled"], strict=True)
        )
        for k in kinds
    ]
    rows.append(["ratio fast / today (median of rounds)", *(f"{r:.2f}×" for r in ratios), ""])
    heads = [k if k.endswith(" ms") else f"{k} texts/s" for k in kinds]
    return (
        f"Texts per second, median of {rounds} rounds (each round: each model in a fresh "
        "process, 64 texts per call after a warm-up call; the models alternate). Peak RSS: "
        "the highest of a model's processes. Query p50: 200 questions embedded one at a "
        "time (`embed_query`), as a search does.\n\n"
        + table(["model", *heads, "peak RSS MB"], rows)
    )


def run_cosine() -> str:
    """Per-text cosine between the two models' vectors."""
    import numpy as np

    from kgsearch.embed import create_embedder

    base, fast = create_embedder("bundled"), create_embedder("bundled:fast")
    rows = []
    for kind, items in texts().items():
        a, b = np.stack(base.embed_documents(items)), np.stack(fast.embed_documents(items))
        cosines = np.einsum("ij,ij->i", a, b)
        rows.append(
            [
                kind,
                len(items),
                f"{cosines.mean():.4f}",
                f"{np.percentile(cosines, 1):.4f}",
                f"{cosines.min():.4f}",
            ]
        )
    return (
        "Cosine between the two models' vectors of the same text (64 texts per call, as "
        "the lifecycle embeds):\n\n" + table(["texts", "n", "mean", "1st percentile", "min"], rows)
    )


def _store(data: Path, name: str, spec: str) -> Path:
    """A chunks-only store of the set's passages, embedded with ``spec`` (built once)."""
    from kgsearch import ChunkIn, Engine, connect
    from kgsearch.embed import create_embedder

    path = data / f"chunks-{name}-{spec.replace(':', '-')}.db"
    if path.exists():
        return path
    partial = path.with_suffix(".partial")
    partial.unlink(missing_ok=True)
    started = time.perf_counter()
    with Engine(connect(str(partial)), embedder=create_embedder(spec)) as engine:
        chunks = [
            ChunkIn(id=f"passage:{i}", text=f"{title}\n{text}")
            for i, (title, text) in enumerate(corpus(SETS[name]))
        ]
        for start in range(0, len(chunks), 500):
            engine.add_chunks(chunks[start : start + 500])
        engine.embed_pending()
    partial.rename(path)
    print(f"built {path.name} in {time.perf_counter() - started:.0f} s", file=sys.stderr)
    return path


def run_passages(data: Path, sets: list[str]) -> str:
    """Recall@2/@5 of dense and hybrid chunk search, per set and model."""
    from kgsearch import Engine, SearchRequest, connect
    from kgsearch.embed import create_embedder
    from kgsearch.search.request import ScopeConfig

    data.mkdir(parents=True, exist_ok=True)
    methods = {
        "dense": lambda q: SearchRequest(
            query=q,
            limit=5,
            objects=None,
            relationships=None,
            chunks=ScopeConfig(methods=["vector"]),
        ),
        "hybrid": lambda q: SearchRequest(query=q, limit=5, recipe="chunks"),
    }
    rows = []
    for name in sets:
        asked = questions(SETS[name])
        titles = {f"passage:{i}": title for i, (title, _) in enumerate(corpus(SETS[name]))}
        for spec, label in MODELS.items():
            with Engine(
                connect(str(_store(data, name, spec))), embedder=create_embedder(spec)
            ) as engine:
                for method, make in methods.items():
                    at2, at5 = [], []
                    for question, gold in asked:
                        found: list[str] = []
                        for r in engine.search(make(question)).results:
                            title = titles.get(r.id, "")
                            if title and title not in found:
                                found.append(title)
                        at2.append(len(gold & set(found[:2])) / len(gold))
                        at5.append(len(gold & set(found[:5])) / len(gold))
                    rows.append(
                        [
                            name,
                            method,
                            label,
                            f"{statistics.mean(at2):.3f}",
                            f"{statistics.mean(at5):.3f}",
                        ]
                    )
                    print(rows[-1], file=sys.stderr)
    return (
        "Passage retrieval (HippoRAG subsets, the questions of bench_passages.py; each "
        "passage one chunk, title + text; gold passages matched by title):\n\n"
        + table(["set", "method", "model", "recall@2", "recall@5"], rows)
    )


def main() -> None:
    """Run the chosen parts; print them, and with --write record them."""
    if len(sys.argv) > 2 and sys.argv[1] == "--speed-child":
        _speed_child(sys.argv[2])
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--part", default="speed,cosine,passages")
    parser.add_argument("--sets", default="musique,hotpotqa")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--data", type=Path, default=ROOT / "bench-data")
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args()
    parts = args.part.split(",")
    before = os.getloadavg()
    bodies = []
    if "speed" in parts:
        bodies.append(run_speed(args.rounds))
    if "cosine" in parts:
        bodies.append(run_cosine())
    if "passages" in parts:
        bodies.append(run_passages(args.data, args.sets.split(",")))
    after = os.getloadavg()
    load = (
        ", ".join(f"{x:.1f}" for x in before) + " before; " + ", ".join(f"{x:.1f}" for x in after)
    )
    body = "\n\n".join(bodies) + f"\n\nLoad average (1, 5, 15 min): {load} after."
    print(body)
    if args.write:
        write_section(
            "embed-models-" + "-".join(parts),
            "Embedding: bundled vs bundled:fast (" + ", ".join(parts) + ")",
            f"python scripts/bench_embed_models.py --part {args.part} --sets {args.sets} "
            f"--rounds {args.rounds} --write",
            body,
        )


if __name__ == "__main__":
    main()
