"""The document-QA benchmark's data and metrics (scripts/bench_docqa.py): the three
multi-hop sets as passages and questions, the passages written as Markdown notes, and
the SQuAD-style matching of answers and supporting passages in a context.

Pure functions over the files in eval-data; nothing here touches a store.

Data: MuSiQue (CC BY 4.0), HotpotQA (CC BY-SA 4.0) and 2WikiMultihopQA (Apache-2.0)
subsets as published with HippoRAG (eval-data/*-hipporag*; see their READMEs).
"""

from __future__ import annotations

import ast
import json
import random
import re
import string
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

EVAL = Path(__file__).resolve().parent.parent.parent / "shared" / "eval-data"
MUSIQUE = EVAL / "musique-hipporag-train100"
HOTPOT = EVAL / "hotpotqa-hipporag-train100"
TWOWIKI = EVAL / "2wikimultihopqa-hipporag"
SETS = ("musique", "hotpotqa", "2wiki")
PREFIX_CHARS = 60
"""A gold passage counts as present when the first this many characters of its
normalised text appear in the normalised context."""


@dataclass(frozen=True)
class Passage:
    """One paragraph of a corpus: its article title and text."""

    title: str
    text: str


@dataclass(frozen=True)
class Question:
    """A question, its accepted answers (empty: not scored for answers), the texts of
    its gold supporting passages and the passages the dataset gives with it (gold and
    distractors; for 2Wiki the gold ones only)."""

    text: str
    answers: tuple[str, ...]
    gold: tuple[str, ...]
    pool: tuple[Passage, ...] = ()


def _listed(value: Any) -> Any:
    """A list field, whether stored as JSON or as its Python repr."""
    return ast.literal_eval(value) if isinstance(value, str) else value


def _load(path: Path) -> Any:
    return json.loads(path.read_text("utf-8"))


def musique() -> tuple[list[Passage], list[Question]]:
    """MuSiQue train-100: the 1,890 passages and the 100 questions (answer + aliases)."""
    corpus = [Passage(r["title"], r["text"]) for r in _load(MUSIQUE / "musique_train_corpus.json")]
    asked = []
    for r in _load(MUSIQUE / "musique_train.json"):
        paragraphs = _listed(r["paragraphs"])
        gold = tuple(p["paragraph_text"] for p in paragraphs if str(p["is_supporting"]) == "True")
        answers = (r["answer"], *_listed(r.get("answer_aliases") or []))
        pool = tuple(Passage(p["title"], p["paragraph_text"]) for p in paragraphs)
        asked.append(Question(r["question"], answers, gold, pool))
    return corpus, asked


def hotpotqa() -> tuple[list[Passage], list[Question]]:
    """HotpotQA train-100: the 994 articles and the 100 questions. Yes/no answers (the
    comparison questions that have them) are not scored for answers: "yes" is found in
    almost any context."""
    rows = _load(HOTPOT / "hotpotqa_train_corpus.json")
    text = {title: "".join(sentences).strip() for title, sentences in rows.items()}
    corpus = [Passage(title, body) for title, body in text.items()]
    asked = []
    for r in _load(HOTPOT / "hotpotqa_train.json"):
        titles = dict.fromkeys(t for t, _ in _listed(r["supporting_facts"]))
        answer = str(r["answer"])
        answers = () if normalise(answer) in {"yes", "no"} else (answer,)
        pool = tuple(Passage(t, text[t]) for t, _ in _listed(r["context"]) if t in text)
        asked.append(Question(r["question"], answers, tuple(text[t] for t in titles), pool))
    return corpus, asked


def twowiki(size: int, seed: int = 0) -> tuple[list[Passage], list[Question]]:
    """2Wiki dev-51: the 51 questions' gold passages plus a seeded sample of the
    6,119-passage corpus, ``size`` passages in all. These questions have no answers
    in the data, so they are scored for supporting passages only."""
    rows = _load(TWOWIKI / "2wikimultihopqa_corpus.json")
    by_title = {r["title"]: Passage(r["title"], r["text"]) for r in rows}
    asked = []
    for line in (TWOWIKI / "gold_dev51.jsonl").read_text("utf-8").splitlines():
        r = json.loads(line)
        titles = _listed(r["gold_titles"])
        pool = tuple(by_title[t] for t in titles)
        asked.append(Question(r["question"], (), tuple(p.text for p in pool), pool))
    gold = {t for line in asked for t in line.gold}
    chosen = [p for p in by_title.values() if p.text in gold]
    others = [p for p in by_title.values() if p.text not in gold]
    random.Random(seed).shuffle(others)
    chosen += others[: max(0, size - len(chosen))]
    return chosen, asked


def load(name: str, twowiki_size: int = 600) -> tuple[list[Passage], list[Question]]:
    """A set's passages and questions by name (one of :data:`SETS`)."""
    if name == "musique":
        return musique()
    if name == "hotpotqa":
        return hotpotqa()
    if name == "2wiki":
        return twowiki(twowiki_size)
    raise SystemExit(f"unknown set {name!r}: choose from {', '.join(SETS)}")


def asked_corpus(asked: Sequence[Question]) -> list[Passage]:
    """The passages the dataset gives with these questions, each once, in order: a
    corpus sized to the questions asked (MuSiQue's first 25 questions: 490 passages)."""
    return list(dict.fromkeys(p for q in asked for p in q.pool))


def notes(passages: Sequence[Passage], per_file: int = 10, seed: int = 0) -> list[str]:
    """The passages as Markdown notes: ``## title`` + paragraph blocks, ``per_file``
    articles to a file, in a seeded shuffle so that one file mixes unrelated articles."""
    order = list(range(len(passages)))
    random.Random(seed).shuffle(order)
    files = []
    for start in range(0, len(order), per_file):
        blocks = [
            f"## {passages[i].title}\n\n{passages[i].text.strip()}\n"
            for i in order[start : start + per_file]
        ]
        files.append("\n".join(blocks))
    return files


def write_notes(directory: Path, files: Sequence[str], suffix: str = ".md") -> None:
    """Write the files as ``note-0001.md``, … into an empty (or new) directory."""
    directory.mkdir(parents=True, exist_ok=True)
    for old in directory.iterdir():
        old.unlink()
    for i, body in enumerate(files, 1):
        (directory / f"note-{i:04d}{suffix}").write_text(body, encoding="utf-8")


def small_files(passages: Sequence[Passage], count: int = 60, seed: int = 0) -> list[str]:
    """``count`` small plain-text files of 1–3 paragraphs each (seeded), one article per
    paragraph as ``Title`` line + text, paragraphs separated by a blank line."""
    rng = random.Random(seed)
    files = []
    for _ in range(count):
        picked = rng.sample(list(passages), rng.randint(1, 3))
        files.append("\n\n".join(f"{p.title}\n{p.text.strip()}" for p in picked) + "\n")
    return files


_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCT = str.maketrans({c: " " for c in string.punctuation + "‘’“”–—"})


def normalise(text: str) -> str:
    """SQuAD-style: NFKC, lower case, punctuation to spaces, articles dropped, spaces
    collapsed."""
    text = unicodedata.normalize("NFKC", text).casefold().translate(_PUNCT)
    return " ".join(_ARTICLES.sub(" ", text).split())


def answer_found(answers: Sequence[str], context: str) -> bool:
    """Whether any accepted answer, normalised, is a whole-word substring of the
    normalised context."""
    padded = f" {normalise(context)} "
    return any(f" {a} " in padded for a in map(normalise, answers) if a)


def passage_key(text: str) -> str:
    """The part of a passage looked for in a context: its first :data:`PREFIX_CHARS`
    normalised characters, cut back to a whole word."""
    key = normalise(text)
    if len(key) <= PREFIX_CHARS:
        return key
    cut = key[:PREFIX_CHARS]
    return cut if key[PREFIX_CHARS] == " " else cut.rsplit(" ", 1)[0]


def passage_recall(gold: Sequence[str], context: str) -> float:
    """The share of the gold passages whose key is in the normalised context."""
    if not gold:
        return 0.0
    normalised = normalise(context)
    return sum(passage_key(g) in normalised for g in gold) / len(gold)
