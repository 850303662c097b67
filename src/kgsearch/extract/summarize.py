"""LLM summaries of long merged descriptions, map-reduce.

When the descriptions many chunks gave one entity or relationship pass the budget,
the offline default keeps their most central sentences
(:mod:`kgsearch.text.descriptions`). With ``extract.summaries = "llm"`` the model
writes the summary instead: the descriptions are cut into groups that fit a prompt
(map: one summary per group), and while there is more than one partial summary they
are summarised together, a prompt-sized group at a time (reduce). Every call goes
through the store's response cache, so the same descriptions are never summarised
twice.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kgsearch.errors import ProviderError
from kgsearch.llm.base import LLM, Message
from kgsearch.text.descriptions import sentences

__all__ = ["PROMPT_VERSION", "Summary", "summarize"]

PROMPT_VERSION = "1"

_SYSTEM = (
    "You write one description of an entity or a relationship from several "
    "descriptions of it, each taken from a different passage of the same documents. "
    "Keep every distinct fact, state contradictions as such, add nothing that the "
    "descriptions do not say, and write plain prose in the third person, without "
    "headings, lists or a preamble."
)

_GROUP_CHARS = 6000
"""Descriptions per map call, in characters (about 1,500 tokens)."""
_MAX_PART_CHARS = _GROUP_CHARS
"""The most of one reply that is kept: a reply asked for in at most a budget's words is
far shorter; a model that does not stop is cut here before the next round reads it
(and the final summary is cut to the budget, ending in "…")."""


@dataclass(frozen=True)
class Summary:
    """A summary and what it took.

    Attributes:
        text: At most the budget's characters.
        model: The model that wrote it.
        calls: Model calls made (cached replies included).
        cached: Calls answered from the response cache.
    """

    text: str
    model: str
    calls: int
    cached: int


def _prompt(subject: str, texts: Sequence[str], words: int) -> list[Message]:
    listed = "\n".join(f"- {' '.join(t.split())}" for t in texts)
    return [
        Message("system", _SYSTEM),
        Message(
            "user",
            f"Subject: {subject}\n\nDescriptions:\n{listed}\n\n"
            f"Write one description of {subject} in at most {words} words.",
        ),
    ]


def _groups(texts: Sequence[str]) -> list[list[str]]:
    groups: list[list[str]] = [[]]
    size = 0
    for text in texts:
        if groups[-1] and size + len(text) > _GROUP_CHARS:
            groups.append([])
            size = 0
        groups[-1].append(text)
        size += len(text) + 3
    return groups


def _fit(text: str, budget: int) -> str:
    """``text`` within ``budget`` characters, cut after the last whole sentence."""
    text = text.strip()
    if len(text) <= budget:
        return text
    kept = ""
    for sentence in sentences(text):
        candidate = f"{kept} {sentence}".strip()
        if len(candidate) > budget:
            break
        kept = candidate
    return kept or text[: max(budget - 1, 0)].rstrip() + "…"


def summarize(llm: LLM, subject: str, texts: Sequence[str], budget: int) -> Summary:
    """One description of ``subject`` from ``texts``, at most ``budget`` characters.

    Raises:
        ProviderError: The model failed, or answered with nothing.
    """
    words = max(budget // 7, 20)  # about 6 characters a word, with a margin
    calls = cached = 0
    model = ""

    def ask(pieces: Sequence[str]) -> str:
        nonlocal calls, cached, model
        reply = llm.complete(_prompt(subject, pieces, words), max_tokens=words * 3)
        calls += 1
        cached += reply.cached
        model = reply.model
        if not reply.text.strip():
            raise ProviderError(f"the model returned an empty summary of {subject!r}")
        return reply.text[:_MAX_PART_CHARS]

    partial = [ask(group) for group in _groups(texts)]
    while len(partial) > 1:  # reduce, a prompt-sized group at a time
        groups = _groups(partial)
        if len(groups) == len(partial):  # summaries too long to pair: all at once
            groups = [list(partial)]
        partial = [ask(group) for group in groups]
    return Summary(_fit(partial[0], budget), model, calls, cached)
