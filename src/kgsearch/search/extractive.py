"""An extractive answer (``kgsearch ask --no-llm`` on a graph built from documents):
the best sentences of the context's passages, each cited.

Every sentence of the cited passages is scored against the question with BM25 over
those sentences (a word the question shares with few sentences weighs more than one
found in many; stop words and the question's own wh-words count for nothing), with a
mild preference for the better-ranked passages. The best :data:`TOP_SENTENCES` that
reach :data:`MIN_SHARE` of the best score are the answer, best first, each followed by
the citation of its passage (``[S1]``). The context's relationships compete too, each
as one sentence cited ``[R1]`` (a typed fact can answer outright), unless the passages
in the context state it already: its passage's whole sentence is quoted instead. No model, no
network: the same question and context always give the same answer.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from kgsearch.search.context import sentences
from kgsearch.text.stopwords import STOPWORDS

__all__ = [
    "MIN_SHARE",
    "TOP_SENTENCES",
    "Sentence",
    "best_sentences",
    "extractive_answer",
    "terms",
]

TOP_SENTENCES = 3
"""Sentences an extractive answer quotes at most."""

MIN_SHARE = 0.3
"""A sentence after the best is quoted only with at least this share of its score."""

RANK_DECAY = 0.1
"""Score divisor per passage rank: ``1 + RANK_DECAY * rank`` (the first passage 1)."""

_K1, _B = 1.2, 0.75
_WORD = re.compile(r"\w+", re.UNICODE)
_QUESTION_WORDS = frozenset({"who", "whom", "whose", "what", "which", "when", "where", "why"})
_QUESTION_WORDS |= {"how", "did", "does", "do", "is", "was", "are", "were"}


@dataclass(frozen=True)
class Sentence:
    """A sentence of a cited passage, with its score against the question."""

    cite: str
    text: str
    score: float


def terms(text: str) -> list[str]:
    """Content words, case-folded, a plural ``s`` dropped (question words left out)."""
    words = (w for w in _WORD.findall(text.casefold()) if w not in STOPWORDS)
    return [
        w[:-1] if len(w) > 3 and w.endswith("s") and not w.endswith("ss") else w
        for w in words
        if w not in _QUESTION_WORDS
    ]


def _stated_in(fact: str, passages: str) -> bool:
    """Whether a fact's description (after its ``triplet: ``) is a stretch of the
    passages: the passage's own sentence then says it, whole, and is quoted instead."""
    _, _, described = fact.partition(": ")
    described = " ".join(described.split()).rstrip("…")
    return len(described) >= 20 and described in passages


def best_sentences(
    question: str, passages: Sequence[tuple[str, str]], facts: Sequence[tuple[str, str]] = ()
) -> list[Sentence]:
    """The passages' sentences (and facts) that answer ``question`` best, best first.

    Args:
        question: The question.
        passages: Each passage's citation and whole text, best passage first.
        facts: Each relationship's citation and text, best first (one sentence each).

    Returns:
        Up to :data:`TOP_SENTENCES` sentences sharing a word with the question (empty
        when none does).
    """
    wanted = set(terms(question))
    split = [(rank, cite, s) for rank, (cite, text) in enumerate(passages) for s in sentences(text)]
    whole = " ".join(" ".join(text.split()) for _, text in passages)
    split += [
        (rank, cite, " ".join(text.split()))
        for rank, (cite, text) in enumerate(facts)
        if not _stated_in(text, whole)
    ]
    if not wanted or not split:
        return []
    bags = [Counter(terms(s)) for _, _, s in split]
    df = Counter(t for bag in bags for t in set(bag) if t in wanted)
    n = len(bags)
    mean = sum(sum(bag.values()) for bag in bags) / n or 1.0
    scored: list[Sentence] = []
    for (rank, cite, text), bag in zip(split, bags, strict=True):
        length = sum(bag.values())
        score = 0.0
        for term in wanted & set(bag):
            idf = math.log(1 + (n - df[term] + 0.5) / (df[term] + 0.5))
            tf = bag[term]
            score += idf * tf * (_K1 + 1) / (tf + _K1 * (1 - _B + _B * length / mean))
        if score > 0:
            scored.append(Sentence(cite, text, score / (1 + RANK_DECAY * rank)))
    scored.sort(key=lambda s: -s.score)  # stable: ties keep the passages' order
    if not scored:
        return []
    floor = scored[0].score * MIN_SHARE
    return [s for s in scored[:TOP_SENTENCES] if s.score >= floor]


def extractive_answer(
    question: str,
    passages: Sequence[tuple[str, str]],
    labels: dict[str, str],
    facts: Sequence[tuple[str, str]] = (),
) -> tuple[str, list[str]]:
    """The answer text and the citations it uses.

    The best sentences, each cited, then a ``Sources`` list of the passages cited (the
    best passage when only facts were quoted), with their source title and section
    when known. When no sentence shares a word with the question, it says so and
    quotes the start of the best passage instead.

    Args:
        question: The question.
        passages: Each passage's citation and whole text, best first (not empty).
        labels: Each citation's ``Title › Section`` ('' or missing when unknown).
        facts: The context's relationships: citation and text, best first.
    """
    chosen = best_sentences(question, passages, facts)
    if chosen:
        head = "From the sources (no model asked; the best-matching sentences):"
        lines = [f"- {s.text} [{s.cite}]" for s in chosen]
    else:
        cite, text = passages[0]
        opening = (sentences(text) or [text])[0]
        head = (
            "No sentence of the passages found shares a word with the question "
            "(no model asked); the best passage begins:"
        )
        lines = [f"- {opening} [{cite}]"]
        chosen = [Sentence(cite, opening, 0.0)]
    cites = list(dict.fromkeys(s.cite for s in chosen))
    shown = sorted((c for c in cites if c.startswith("S")), key=lambda c: int(c[1:]))
    sources = [f"[{c}] {labels.get(c) or 'passage'}" for c in shown or [passages[0][0]]]
    return "\n".join([head, *lines, "", "Sources:", *sources]), cites
