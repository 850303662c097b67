"""Answers with citations (``kgsearch ask``): a search's cited context, sent to a chat
model, or (offline) the best sentences of its passages (a graph built from documents,
``search/extractive.py``) or else the top facts of that context as the answer.

The context is :func:`~kgsearch.search.context.format_sections`' LightRAG-style
Entities / Relationships / Sources sections, each item cited ``[E1]``, ``[R1]``,
``[S1]``. The model is told to answer from them only and to cite them; every
citation resolves to the object, relationship or source chunk it stands for
(:class:`Reference`), so an answer can be checked against the graph.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from kgsearch.llm.base import LLM, Completion, Message, complete_streaming
from kgsearch.search.extractive import extractive_answer
from kgsearch.search.request import GraphResult, RelationshipResult, TextResult

__all__ = [
    "ANSWER_MAX_TOKENS",
    "SYSTEM_PROMPT",
    "TOP_FACTS",
    "Answer",
    "Reference",
    "answer",
    "from_completion",
    "messages",
    "references",
]

SYSTEM_PROMPT = (
    "You answer questions about a knowledge graph. Use only the context the user gives: "
    "entities [E…], relationships [R…] and source passages [S…]. After each statement, "
    "cite the items it rests on with their bracketed labels, e.g. [R1] or [E2][S1]. If "
    "the context does not answer the question, say so in one sentence; never guess. "
    "Answer briefly, in the language of the question."
)

ANSWER_MAX_TOKENS = 800
"""Cap on the model's answer, in its tokens."""

TOP_FACTS = 5
"""Context items an offline (``--no-llm``) answer lists."""

_CITE = re.compile(r"\[([ERS]\d+)\]")

Result = GraphResult | RelationshipResult | TextResult


class Reference(BaseModel):
    """What a citation stands for.

    Attributes:
        cite: The label, ``E1``, ``R2``, ``S3`` or (global search) ``C1``.
        kind: ``object``, ``relationship``, ``chunk`` or ``community``.
        id: The row's id (``kgsearch objects get ID`` and friends).
        text: The row as a person reads it: name and type, triplet, or passage.
        cited: Whether the answer cites it.
    """

    model_config = ConfigDict(frozen=True)

    cite: str
    kind: Literal["object", "relationship", "chunk", "community"]
    id: str
    text: str
    cited: bool = False


class Answer(BaseModel):
    """An answer to a question, with the context it came from.

    Attributes:
        question: The question asked.
        answer: The model's answer, or (offline) the top facts of the context.
        references: Every cited item of the context, in citation order.
        context: The cited context the answer was written from.
        model: The chat model that answered (``provider:model``); None offline.
        offline: True when no model was asked (``--no-llm``).
        cached: True when the answer came from the store's LLM cache.
        usage: Prompt and completion tokens of the model call.
        metadata: The search's metadata (counts, timings, warnings).
    """

    question: str
    answer: str
    references: list[Reference] = Field(default_factory=list)
    context: str
    model: str | None = None
    offline: bool = False
    cached: bool = False
    usage: dict[str, int] = Field(default_factory=dict)
    metadata: dict[str, object] = Field(default_factory=dict)


def _text(result: Result) -> str:
    if isinstance(result, GraphResult):
        return f"{result.name} ({result.object_type})"
    if isinstance(result, RelationshipResult):
        return " ".join(result.triplet_text.split())
    return " ".join(result.snippet.split())


def references(
    results: Sequence[Result], citations: dict[str, str], labels: dict[str, str] | None = None
) -> list[Reference]:
    """The reference of each citation the context made (citation → row id); a passage's
    text starts with its ``labels`` entry (source title and section), when it has one."""
    by_id = {r.id: r for r in results}
    labels = labels or {}

    def text(id_: str) -> str:
        label = labels.get(id_)
        return f"({label}) {_text(by_id[id_])}" if label else _text(by_id[id_])

    found = [
        Reference(cite=cite, kind=by_id[id_].kind, id=id_, text=text(id_))
        for cite, id_ in citations.items()
        if id_ in by_id
    ]
    order = {"E": 0, "R": 1, "S": 2}
    return sorted(found, key=lambda r: (order[r.cite[0]], int(r.cite[1:])))


def messages(question: str, context: str) -> list[Message]:
    """The chat: the rules, then the cited context and the question."""
    return [
        Message("system", SYSTEM_PROMPT),
        Message("user", f"Context:\n\n{context}\n\nQuestion: {question}"),
    ]


def answer(
    question: str,
    context: str,
    refs: list[Reference],
    *,
    llm: LLM | None,
    on_text: Callable[[str], None] | None = None,
    metadata: dict[str, object] | None = None,
    passages: Sequence[tuple[str, str]] = (),
    labels: dict[str, str] | None = None,
) -> Answer:
    """Answer ``question`` from ``context``: by ``llm`` (streamed to ``on_text``), or,
    when ``llm`` is None, with the best sentences of ``passages`` (each cited) when
    there are any, else with the top facts of the context.

    Args:
        passages: The context's passages, best first: citation and whole text.
        labels: Each passage citation's ``Title › Section``, when known.

    Raises:
        ProviderError: The model failed (after its retries) or timed out.
    """
    meta = dict(metadata or {})
    if llm is None and passages:
        facts = [(r.cite, r.text) for r in refs if r.kind == "relationship"]
        text, quoted = extractive_answer(question, passages, labels or {}, facts)
        if on_text is not None:
            on_text(text)
        return Answer(
            question=question,
            answer=text,
            references=[r.model_copy(update={"cited": r.cite in quoted}) for r in refs],
            context=context,
            offline=True,
            metadata=meta,
        )
    if llm is None or not refs:
        text = _top_facts(refs) if refs else "Nothing in the graph matches the question."
        if on_text is not None:
            on_text(text)
        marked = [r.model_copy(update={"cited": True}) for r in _top(refs)]
        return Answer(
            question=question,
            answer=text,
            references=marked,
            context=context,
            offline=llm is None,
            metadata=meta,
        )
    completion = complete_streaming(
        llm,
        messages(question, context),
        on_text=on_text or (lambda _piece: None),
        max_tokens=ANSWER_MAX_TOKENS,
    )
    used = set(_CITE.findall(completion.text))
    return from_completion(question, completion, refs, used, context, llm, meta)


def from_completion(
    question: str,
    completion: Completion,
    refs: Sequence[Reference],
    used: set[str],
    context: str,
    llm: LLM,
    meta: dict[str, Any],
) -> Answer:
    """The answer a model wrote: its text, the references marked cited where ``used``
    names their labels, the model and the tokens it took."""
    return Answer(
        question=question,
        answer=completion.text,
        references=[r.model_copy(update={"cited": r.cite in used}) for r in refs],
        context=context,
        model=completion.model or llm.model_id,
        cached=completion.cached,
        usage={
            "prompt_tokens": completion.usage.prompt_tokens,
            "completion_tokens": completion.usage.completion_tokens,
        },
        metadata=meta,
    )


def _top(refs: list[Reference]) -> list[Reference]:
    """The best items first: relationships (facts), then entities, then passages."""
    order = {"R": 0, "E": 1, "S": 2}
    return sorted(refs, key=lambda r: (order[r.cite[0]], int(r.cite[1:])))[:TOP_FACTS]


def _top_facts(refs: list[Reference]) -> str:
    lines = [f"- {r.text} [{r.cite}]" for r in _top(refs)]
    return "Top facts from the graph (no model asked):\n" + "\n".join(lines)
