"""Global search (``ask --recipe global``): GraphRAG's map-reduce over community reports.

The ``communities`` scope picks the reports a question needs
(:func:`~kgsearch.search.communities.community_results`: the big, highly ranked
communities for a broad question, the close ones for a narrow one). Each report is
labelled ``[C1]``, ``[C2]``… in that order, and then:

- **map**: the reports, packed into batches of at most :data:`MAP_TOKENS` tokens, go to
  the chat model, one call per batch, at most :data:`MAP_WORKERS` at once, each through
  the engine's guarded model (deadline, breaker, the caller's cancel token and LLM
  budget: the calls run in a copy of the caller's context). Each call returns key points
  with an importance score from 0 to 100 (:mod:`kgsearch.llm.global_prompts`). A call
  that fails, or whose reply is not such JSON, drops its batch with a warning; it never
  fails the answer. When every call fails the points are made offline instead.
- **reduce**: the points, most important first, each with its report's label and the
  facts under it (``[R1]``…: the relationships its report's finding cites), within the
  answer's token budget, go to the model once, streamed; the answer cites the labels.

Offline (no chat model) the same flow is extractive: map picks each report's findings
that share the question's words (weighed with the report's rating and the community's
place in the selection) as its points, and reduce quotes the best points, each cited.
Every citation resolves to a community or a relationship (:class:`Reference`). When a
model answers without citing anything, the references its sentences share the most
words with are marked cited, and the answer's metadata says so.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from kgsearch.community_values import CommunityReport
from kgsearch.llm.base import LLM, Message, complete_streaming
from kgsearch.llm.global_prompts import REDUCE_SYSTEM
from kgsearch.search.answer import ANSWER_MAX_TOKENS, Answer, Reference, from_completion
from kgsearch.search.global_map import Mapped, Point, extractive_points, map_reports, word_set
from kgsearch.search.request import CommunityResult, SearchResponse
from kgsearch.store.base import CommunityStore, GraphReads

__all__ = [
    "GLOBAL_RECIPES",
    "TOP_POINTS",
    "ReportReads",
    "answer_from_reports",
    "global_answer",
]

GLOBAL_RECIPES = frozenset({"global", "communities"})
"""Recipes whose answers are map-reduced over the community reports they select."""

TOP_POINTS = 5
"""Points an offline answer quotes at most."""

_ANY_CITE = re.compile(r"\[([CR]\d+)\]")


def _ranked(points: Sequence[Point]) -> list[Point]:
    """Points with a score, most important first, each text once."""
    seen: set[str] = set()
    kept = []
    for point in sorted(points, key=lambda p: -p.score):
        key = point.text.casefold()
        if point.score > 0 and key not in seen:
            seen.add(key)
            kept.append(point)
    return kept


@dataclass
class _Labels:
    """The facts' labels (``R1``…), given in the order the points meet them."""

    facts: dict[str, str] = field(default_factory=dict)

    def of(self, point: Point, known: Mapping[str, str]) -> list[str]:
        labels = []
        for fact in point.facts:
            if fact in known:
                labels.append(self.facts.setdefault(fact, f"R{len(self.facts) + 1}"))
        return labels


def _reduce_context(
    points: Sequence[Point],
    facts: Mapping[str, str],
    labels: _Labels,
    *,
    max_tokens: int,
    count_tokens: Callable[[str], int],
) -> tuple[str, list[Point]]:
    """The points, most important first, with the facts under them, within the budget."""
    lines: list[str] = []
    kept: list[Point] = []
    for point in points:
        trial = _Labels(dict(labels.facts))
        fact_labels = trial.of(point, facts)
        cites = "".join(f"[{c}]" for c in point.cites)
        line = f"{cites} (importance {point.score:g}) {point.text}"
        if fact_labels:
            line += "\n  facts: " + "; ".join(
                f"[{label}] {facts[f]}" for f, label in trial.facts.items() if label in fact_labels
            )
        if count_tokens("\n".join([*lines, line])) > max_tokens:
            continue
        labels.facts = trial.facts
        lines.append(line)
        kept.append(point)
    return "\n".join(lines), kept


def _references(
    points: Sequence[Point],
    titles: Mapping[str, tuple[str, CommunityResult]],
    facts: Mapping[str, str],
    labels: _Labels,
) -> list[Reference]:
    """The communities and facts the points cite, communities first, in label order."""
    cites = sorted({c for p in points for c in p.cites}, key=lambda c: int(c[1:]))
    refs = [
        Reference(
            cite=c,
            kind="community",
            id=titles[c][1].id,
            text=f"{titles[c][0]} (level {titles[c][1].level}, {titles[c][1].size} members)",
        )
        for c in cites
    ]
    refs += [
        Reference(cite=label, kind="relationship", id=fact, text=facts[fact])
        for fact, label in labels.facts.items()
    ]
    return refs


def _inferred(answer: str, points: Sequence[Point], labels: _Labels) -> set[str]:
    """The labels of the points the answer's sentences share the most words with (three
    at least), for an answer that cites nothing itself."""
    found: set[str] = set()
    for sentence in re.split(r"(?<=[.!?])\s+|\n+", answer):
        words = word_set(sentence)
        best = max(points, key=lambda p: len(words & word_set(p.text)), default=None)
        if best is not None and len(words & word_set(best.text)) >= 3:
            found.update(best.cites)
            found.update(labels.facts[f] for f in best.facts if f in labels.facts)
    return found


def global_answer(
    question: str,
    hits: Sequence[CommunityResult],
    reports: Mapping[str, CommunityReport],
    facts: Mapping[str, str],
    *,
    llm: LLM | None,
    count_tokens: Callable[[str], int],
    max_tokens: int,
    on_text: Callable[[str], None] | None = None,
    metadata: Mapping[str, object] | None = None,
) -> Answer:
    """Answer a broad question from community reports, by map-reduce.

    Args:
        question: The question.
        hits: The selected communities, best first (not empty).
        reports: Their reports by community id.
        facts: Text of the relationships their findings cite, by id.
        llm: The chat model, or None for the offline (extractive) flow.
        count_tokens: The embedder's token counter (batches and the reduce budget).
        max_tokens: Budget of the points sent to the reduce call.
        on_text: Called with the answer's pieces as they are written.
        metadata: The search's metadata (warnings are added to a copy).

    Raises:
        ProviderError: The reduce call failed (the map's failures never raise).
    """
    meta = dict(metadata or {})
    warnings = list(meta.get("warnings") or [])  # type: ignore[call-overload]
    labelled = [
        (f"C{n}", hit, reports[hit.id])
        for n, hit in enumerate((h for h in hits if h.id in reports), start=1)
    ]
    titles = {cite: (report.title, hit) for cite, hit, report in labelled}
    mapped = Mapped()
    if llm is not None:
        mapped = map_reports(question, labelled, llm, count_tokens)
        warnings += mapped.warnings
        if mapped.calls and mapped.failed == mapped.calls:
            warnings.append("every map call failed: the points are the reports' own findings")
    offline_map = llm is None or (mapped.calls > 0 and mapped.failed == mapped.calls)
    if offline_map:
        mapped.points = [
            p
            for place, (cite, _, report) in enumerate(labelled)
            for p in extractive_points(question, cite, report, place)
        ]
    points = _ranked(mapped.points)
    labels = _Labels()
    context, kept = _reduce_context(
        points, facts, labels, max_tokens=max_tokens, count_tokens=count_tokens
    )
    meta["global"] = {
        "communities": len(labelled),
        "map_calls": mapped.calls,
        "map_failed": mapped.failed,
        "points": len(points),
        "map": "extractive" if offline_map else "llm",
    }
    meta["warnings"] = warnings
    if llm is None or not kept:
        return _offline(question, context, kept, titles, facts, labels, llm, on_text, meta)
    messages = [
        Message("system", REDUCE_SYSTEM),
        Message("user", f"Key points:\n\n{context}\n\nQuestion: {question}"),
    ]
    completion = complete_streaming(
        llm, messages, on_text=on_text or (lambda _piece: None), max_tokens=ANSWER_MAX_TOKENS
    )
    refs = _references(kept, titles, facts, labels)
    used = set(_ANY_CITE.findall(completion.text))
    if not used & {r.cite for r in refs}:
        used = _inferred(completion.text, kept, labels)
        if used:
            warnings.append(
                "the model cited no report: the references its sentences share the most "
                "words with are marked cited"
            )
    return from_completion(question, completion, refs, used, context, llm, meta)


def _offline(
    question: str,
    context: str,
    kept: Sequence[Point],
    titles: Mapping[str, tuple[str, CommunityResult]],
    facts: Mapping[str, str],
    labels: _Labels,
    llm: LLM | None,
    on_text: Callable[[str], None] | None,
    meta: dict[str, object],
) -> Answer:
    """The extractive reduce: the most important points, each cited, then the
    communities they came from (or, when no point is left, what was found)."""
    top = list(kept[:TOP_POINTS])
    if top:
        lines = []
        for point in top:
            cites = "".join(f"[{c}]" for c in point.cites)
            cites += "".join(f"[{labels.facts[f]}]" for f in point.facts if f in labels.facts)
            lines.append(f"- {point.text} {cites}")
        shown = sorted({c for p in top for c in p.cites}, key=lambda c: int(c[1:]))
        text = "\n".join(
            [
                "From the community reports (no model asked; their most important points):",
                *lines,
                "",
                "Communities:",
                *(f"[{c}] {titles[c][0]}" for c in shown),
            ]
        )
    else:
        text = "The community reports found hold nothing that answers the question."
    if llm is not None and not top:
        text = "The model found nothing in the community reports that answers the question."
    if on_text is not None:
        on_text(text)
    refs = _references(kept, titles, facts, labels)
    used = set(_ANY_CITE.findall(text))
    return Answer(
        question=question,
        answer=text,
        references=[r.model_copy(update={"cited": r.cite in used}) for r in refs],
        context=context,
        offline=llm is None,
        metadata=meta,
    )


class ReportReads(CommunityStore, GraphReads, Protocol):
    """What a global answer reads: the reports and the relationships they cite."""


def answer_from_reports(
    store: ReportReads,
    project: str,
    question: str,
    response: SearchResponse,
    *,
    llm: LLM | None,
    count_tokens: Callable[[str], int],
    max_tokens: int,
    on_text: Callable[[str], None] | None = None,
) -> Answer:
    """:func:`global_answer` over the communities a search selected (two reads: their
    reports, and the relationships their findings cite).

    Raises:
        ProviderError: The reduce call failed.
    """
    hits = response.communities
    reports = {r.id: r for r in store.community_reports(project, [h.id for h in hits])}
    cited = dict.fromkeys(
        fact for r in reports.values() for f in r.findings for fact in f.relationships
    )
    facts = {
        rel.id: " ".join(
            (rel.embedding.text or f"{rel.source_id} {rel.type} {rel.target_id}").split()
        )
        for rel in (store.get_relationships(project, list(cited)) if cited else [])
    }
    return global_answer(
        question,
        hits,
        reports,
        facts,
        llm=llm,
        count_tokens=count_tokens,
        max_tokens=max_tokens,
        on_text=on_text,
        metadata=response.metadata,
    )
