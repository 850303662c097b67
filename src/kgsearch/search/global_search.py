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

import json
import re
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Protocol

from kgsearch.cancel import POLL_SECONDS, check_cancelled
from kgsearch.community_values import CommunityReport, Finding
from kgsearch.errors import KgsearchError, ProviderError
from kgsearch.llm.base import LLM, Forgetting, Message, complete_streaming
from kgsearch.llm.global_prompts import MAP_SCHEMA, MAP_SYSTEM, REDUCE_SYSTEM
from kgsearch.llm.meter import in_context
from kgsearch.search.answer import ANSWER_MAX_TOKENS, Answer, Reference, from_completion
from kgsearch.search.extractive import terms
from kgsearch.search.request import CommunityResult, SearchResponse
from kgsearch.store.base import CommunityStore, GraphReads

__all__ = [
    "GLOBAL_RECIPES",
    "MAP_TOKENS",
    "MAP_WORKERS",
    "TOP_POINTS",
    "Point",
    "ReportReads",
    "answer_from_reports",
    "extractive_points",
    "global_answer",
    "map_reports",
    "parse_points",
]

GLOBAL_RECIPES = frozenset({"global", "communities"})
"""Recipes whose answers are map-reduced over the community reports they select."""

MAP_TOKENS = 6000
"""Tokens of reports one map call reads at most (GraphRAG packs 8k)."""

MAP_WORKERS = 4
"""Map calls in flight at once in this process, however many answers are made: they
queue for a slot rather than take every thread of the guard (which refuses the rest)."""

_MAP_SLOTS = threading.BoundedSemaphore(MAP_WORKERS)

MAP_MAX_TOKENS = 1000
"""Cap on a map reply, in the model's tokens."""

POINTS_PER_REPORT = 3
"""Points the offline map takes from one report at most."""

TOP_POINTS = 5
"""Points an offline answer quotes at most."""

FACTS_PER_POINT = 3
"""Facts listed under one point at most."""

_REPORT_CITE = re.compile(r"\[(C\d+)\]")
_ANY_CITE = re.compile(r"\[([CR]\d+)\]")
_FENCE = re.compile(r"^```(?:json)?\s*|\s*```$")
# words that ask for breadth, not for a subject: they match no report better than another
_BROAD = frozenset({"main", "key", "theme", "themes", "topic", "topics", "top", "major"})
_BROAD |= {"overall", "dataset", "data", "story", "summary", "summarize", "about", "important"}


@dataclass(frozen=True)
class Point:
    """A key point the map took from the reports.

    Attributes:
        cites: Labels of the reports it rests on (``C1``…), never empty.
        text: The point, without its report labels.
        score: Importance for the question, 0 to 100.
        facts: Ids of the relationships under it (its report's finding's citations).
    """

    cites: tuple[str, ...]
    text: str
    score: float
    facts: tuple[str, ...] = ()


@dataclass
class Mapped:
    """What the map stage produced: the points, calls made and batches dropped."""

    points: list[Point] = field(default_factory=list)
    calls: int = 0
    failed: int = 0
    warnings: list[str] = field(default_factory=list)


def _terms(text: str) -> set[str]:
    """Content words, case-folded, a plural ``s`` dropped (:func:`extractive.terms`)."""
    return set(terms(text))


def _finding_text(finding: Finding) -> str:
    if finding.explanation:
        return f"{finding.summary}: {finding.explanation}"
    return finding.summary


def _block(cite: str, hit: CommunityResult, report: CommunityReport) -> str:
    """A report as the map reads it: label, title, place in the graph, summary, findings."""
    head = f"[{cite}] {report.title} (level {hit.level}, {hit.size} members"
    head += f", rating {report.rating:g})" if report.rating else ")"
    lines = [head, report.summary]
    lines += [f"- {_finding_text(f)}" for f in report.findings]
    return "\n".join(line for line in lines if line)


def _best_finding(text: str, reports: Sequence[CommunityReport]) -> Finding | None:
    """The finding of ``reports`` that shares the most words (two at least) with ``text``."""
    words = _terms(text)
    best, shared = None, 1
    for report in reports:
        for finding in report.findings:
            common = len(words & _terms(_finding_text(finding)))
            if common > shared:
                best, shared = finding, common
    return best


def _closest(text: str, reports: Mapping[str, CommunityReport]) -> str:
    """The label of the report with the one part (title and summary, or a finding) that
    shares the most words with ``text``: a point restates a part, and a long report
    would win a count over its whole text."""
    words = _terms(text)

    def shared(report: CommunityReport) -> int:
        parts = [f"{report.title} {report.summary}", *map(_finding_text, report.findings)]
        return max(len(words & _terms(part)) for part in parts)

    return max(reports, key=lambda c: shared(reports[c]))


def parse_points(
    text: str, reports: Mapping[str, CommunityReport], *, limit: int = 20
) -> list[Point]:
    """The points of a map reply (JSON ``{"points": [{"description", "score"}]}``, in a
    code fence or not). A point cites the batch's reports by label; one that cites none
    rests on the report with the part it shares the most words with. Scores are clamped to 0–100;
    points without a text or a numeric score are skipped.

    Args:
        text: The reply.
        reports: The batch's reports by label, best first.
        limit: Points kept at most.

    Raises:
        ProviderError: The reply is not JSON with a ``points`` list.
    """
    body = _FENCE.sub("", text.strip())
    start, end = body.find("{"), body.rfind("}")
    try:
        data = json.loads(body[start : end + 1] if 0 <= start < end else body)
        items = data["points"]
        if not isinstance(items, list):
            raise TypeError("points is not a list")
    except (ValueError, KeyError, TypeError) as exc:
        raise ProviderError(
            f"the map reply is not the points JSON asked for ({exc}); its reports are left out",
            details={"reply": text[:300]},
        ) from None
    points = []
    for item in items[:limit]:
        if not isinstance(item, dict) or not isinstance(item.get("description"), str):
            continue
        try:
            score = min(max(float(item["score"]), 0.0), 100.0)
        except (KeyError, TypeError, ValueError):
            continue
        said = " ".join(item["description"].split())[:2000]
        cites = tuple(dict.fromkeys(c for c in _REPORT_CITE.findall(said) if c in reports))
        plain = " ".join(re.sub(r"\s*\[C\d+\]", "", said).split())
        if not plain:
            continue
        if not cites:
            cites = (_closest(plain, reports),)
        finding = _best_finding(plain, [reports[c] for c in cites])
        facts = finding.relationships[:FACTS_PER_POINT] if finding else ()
        points.append(Point(cites, plain, score, tuple(facts)))
    return points


def _batches(blocks: Sequence[str], count_tokens: Callable[[str], int]) -> list[list[int]]:
    """Indices of the blocks in batches of at most :data:`MAP_TOKENS` tokens, in order
    (a block over the budget alone makes a batch of its own)."""
    batches: list[list[int]] = []
    used = MAP_TOKENS
    for i, block in enumerate(blocks):
        size = count_tokens(block)
        if used + size > MAP_TOKENS and (not batches or batches[-1]):
            batches.append([])
            used = 0
        batches[-1].append(i)
        used += size
    return batches


def _map_messages(question: str, blocks: Sequence[str]) -> list[Message]:
    reports = "\n\n".join(blocks)
    return [
        Message("system", MAP_SYSTEM),
        Message("user", f"Reports:\n\n{reports}\n\nQuestion: {question}"),
    ]


def _map_batch(
    llm: LLM, question: str, blocks: Sequence[str], reports: Mapping[str, CommunityReport]
) -> list[Point]:
    """One map call's points; a reply that is not the points JSON is dropped from the
    response cache (a retry asks the model again) and raises ProviderError."""
    messages = _map_messages(question, blocks)
    completion = llm.complete(messages, json_schema=MAP_SCHEMA, max_tokens=MAP_MAX_TOKENS)
    try:
        return parse_points(completion.text, reports)
    except ProviderError:
        if isinstance(llm, Forgetting):
            llm.forget(messages, json_schema=MAP_SCHEMA, max_tokens=MAP_MAX_TOKENS)
        raise


def map_reports(
    question: str,
    labelled: Sequence[tuple[str, CommunityResult, CommunityReport]],
    llm: LLM,
    count_tokens: Callable[[str], int],
) -> Mapped:
    """The map stage with a model: the reports in batches, the calls in parallel.

    Args:
        question: The question.
        labelled: Each report's label, hit and report, best first.
        llm: The chat model (the engine's guarded, cached one).
        count_tokens: Counts a batch's tokens.

    Returns:
        The points of every batch that answered; a failed call's batch is left out and
        counted, with its error among the warnings.
    """
    blocks = [_block(cite, hit, report) for cite, hit, report in labelled]
    batches = _batches(blocks, count_tokens)
    mapped = Mapped()

    def run(batch: list[int]) -> list[Point]:
        reports = {labelled[i][0]: labelled[i][2] for i in batch}
        with _map_slot():
            return _map_batch(llm, question, [blocks[i] for i in batch], reports)

    with ThreadPoolExecutor(max_workers=max(1, min(MAP_WORKERS, len(batches)))) as pool:
        futures = [(batch, pool.submit(in_context(run), batch)) for batch in batches]
        for batch, future in futures:
            mapped.calls += 1
            try:
                mapped.points.extend(future.result())
            except KgsearchError as exc:  # a failed map call drops its reports only
                mapped.failed += 1
                cites = ", ".join(labelled[i][0] for i in batch)
                mapped.warnings.append(f"map call over {cites} failed: {exc.message}")
    return mapped


@contextmanager
def _map_slot() -> Iterator[None]:
    """Hold a map-call slot (:data:`MAP_WORKERS`); a cancelled answer stops waiting."""
    while not _MAP_SLOTS.acquire(timeout=POLL_SECONDS):
        check_cancelled("the map call")
    try:
        yield
    finally:
        _MAP_SLOTS.release()


def extractive_points(
    question: str, cite: str, report: CommunityReport, place: int = 0
) -> list[Point]:
    """The offline map of one report: its summary and findings that share the
    question's words, scored with its rating, their order and the
    community's ``place`` in the selection (0 for the best); broad questions, whose
    words match no report better than another, take the findings in the report's order.

    Returns:
        Up to :data:`POINTS_PER_REPORT` points with a score above 0, best first.
    """
    wanted = _terms(question) - _BROAD
    candidates: list[tuple[str, tuple[str, ...]]] = [(report.summary, ())] if report.summary else []
    candidates += [(_finding_text(f), f.relationships) for f in report.findings]
    rating = min(max(report.rating, 0.0), 10.0) / 10 if report.rating else 0.5
    points = []
    for order, (text, facts) in enumerate(candidates):
        overlap = len(wanted & _terms(text)) / len(wanted) if wanted else 0.0
        score = 100 * (0.6 * overlap + 0.4 * rating) * (1 - 0.1 * min(order, 5))
        score *= 1 - 0.05 * min(place, 10)
        if score > 0 and text:
            points.append(Point((cite,), " ".join(text.split()), round(score, 1), facts[:3]))
    points.sort(key=lambda p: -p.score)  # stable: ties keep the report's order
    return points[:POINTS_PER_REPORT]


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
        words = _terms(sentence)
        best = max(points, key=lambda p: len(words & _terms(p.text)), default=None)
        if best is not None and len(words & _terms(best.text)) >= 3:
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
