"""A small document-QA check of the context (issue 30 #4, "passages are the evidence").

Usage:
    python scripts/check_evidence.py --db bench-data/evidence.db --build
    python scripts/check_evidence.py --db bench-data/evidence.db --recipes default,naive

Data: MuSiQue (train split of the HippoRAG release in shared/eval-data/
musique-hipporag-train100, CC BY 4.0, see its LICENSES). The first 20 answerable
questions; their supporting paragraphs plus 32 seeded distractors from the same
questions, written as Markdown notes (``## title`` + paragraph, five articles per
file) and ingested with the default offline extractor and the bundled embedder.

For each question and recipe, ``Engine.context(question, max_tokens=1500,
style="sections")`` (the CLI's ``context --sections --max-tokens 1500``): the
answer-in-context rate (the answer or an alias, case-folded, in the context) and the
supporting-passage recall (a supporting paragraph counts when its first 60 characters
are in the context). The ingest is the same on any branch, so one store serves a
before/after comparison (run this script with each branch's sources first).
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import time
from pathlib import Path
from typing import Any

from kgsearch import Engine, connect

DATA = Path("/work/shared/eval-data/musique-hipporag-train100/musique_train.json")
QUESTIONS = 20
DISTRACTORS = 32
PER_FILE = 5


def _norm(text: str) -> str:
    return " ".join(re.sub(r"[^\w\s]", " ", text.casefold()).split())


def sample() -> tuple[list[dict[str, Any]], list[tuple[str, str]]]:
    """The questions and the paragraphs (title, text) of the check."""
    data = json.loads(DATA.read_text(encoding="utf-8"))
    questions = [q for q in data if q.get("answerable", True)][:QUESTIONS]
    supporting: dict[tuple[str, str], None] = {}
    others: dict[tuple[str, str], None] = {}
    for q in questions:
        for p in q["paragraphs"]:
            key = (p["title"], p["paragraph_text"])
            (supporting if p["is_supporting"] else others)[key] = None
    pool = [p for p in others if p not in supporting]
    random.Random(0).shuffle(pool)
    paragraphs = [*supporting, *pool[:DISTRACTORS]]
    random.Random(1).shuffle(paragraphs)
    return questions, paragraphs


def build(db: Path, paragraphs: list[tuple[str, str]]) -> None:
    """Write the notes and ingest them (default extractor, bundled embedder)."""
    notes = db.parent / (db.stem + "-notes")
    notes.mkdir(parents=True, exist_ok=True)
    for i in range(0, len(paragraphs), PER_FILE):
        body = "\n\n".join(f"## {t}\n\n{text}" for t, text in paragraphs[i : i + PER_FILE])
        (notes / f"note-{i // PER_FILE:02d}.md").write_text(body + "\n", encoding="utf-8")
    started = time.perf_counter()
    with Engine(connect(str(db))) as engine:
        report = engine.ingest(sorted(notes.glob("*.md")))
        engine.embed_pending()
        print(f"ingested in {time.perf_counter() - started:.0f} s: {report}", file=sys.stderr)


def measure(db: Path, questions: list[dict[str, Any]], recipes: list[str]) -> dict[str, Any]:
    """Answer-in-context and supporting-passage recall per recipe."""
    out: dict[str, Any] = {}
    with Engine(connect(str(db))) as engine:
        for recipe in recipes:
            hits, recall, tokens = 0, 0.0, 0
            for q in questions:
                options = {} if recipe == "default" else {"recipe": recipe}
                value = engine.context(q["question"], max_tokens=1500, style="sections", **options)
                text = _norm(value.context)
                answers = [q["answer"], *q.get("answer_aliases", [])]
                hits += any(_norm(a) and _norm(a) in text for a in answers)
                gold = [p for p in q["paragraphs"] if p["is_supporting"]]
                found = sum(_norm(p["paragraph_text"])[:60] in text for p in gold)
                recall += found / len(gold)
                tokens += value.tokens
            n = len(questions)
            out[recipe] = {
                "answer_in_context": round(hits / n, 3),
                "supporting_recall": round(recall / n, 3),
                "mean_tokens": round(tokens / n),
            }
            print(recipe, out[recipe], file=sys.stderr)
    return out


def main() -> None:
    """Build the store if asked, then measure."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", type=Path, required=True)
    parser.add_argument("--build", action="store_true")
    parser.add_argument("--recipes", default="default,naive,mix,multi_hop")
    args = parser.parse_args()
    questions, paragraphs = sample()
    if args.build:
        build(args.db, paragraphs)
    print(json.dumps(measure(args.db, questions, args.recipes.split(",")), indent=1))


if __name__ == "__main__":
    main()
