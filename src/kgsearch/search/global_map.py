"""Global search's map stage: community reports to key points, by a model or offline.

With a chat model, the reports are packed into batches of at most :data:`MAP_TOKENS`
tokens, one call per batch, at most :data:`MAP_WORKERS` calls in flight in the process;
each reply is GraphRAG's points JSON (:mod:`kgsearch.llm.global_prompts`). A call that
fails, or whose reply is not such JSON, drops its batch with a warning. Offline,
:func:`extractive_points` takes each report's findings that share the question's words.
The reduce stage is :mod:`kgsearch.search.global_search`.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field

from kgsearch.cancel import POLL_SECONDS, check_cancelled
from kgsearch.community_values import CommunityReport, Finding
from kgsearch.errors import KgsearchError, ProviderError
from kgsearch.llm.base import LLM, Forgetting, Message
from kgsearch.llm.global_prompts import MAP_SCHEMA, MAP_SYSTEM
from kgsearch.llm.meter import in_context
from kgsearch.search.extractive import terms
from kgsearch.search.request import CommunityResult

__all__ = [
    "FACTS_PER_POINT",
    "MAP_TOKENS",
    "MAP_WORKERS",
    "Mapped",
    "Point",
    "extractive_points",
    "map_reports",
    "parse_points",
    "word_set",
]

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

FACTS_PER_POINT = 3
"""Facts listed under one point at most."""

_REPORT_CITE = re.compile(r"\[(C\d+)\]")
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


def word_set(text: str) -> set[str]:
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
    words = word_set(text)
    best, shared = None, 1
    for report in reports:
        for finding in report.findings:
            common = len(words & word_set(_finding_text(finding)))
            if common > shared:
                best, shared = finding, common
    return best


def _closest(text: str, reports: Mapping[str, CommunityReport]) -> str:
    """The label of the report with the one part (title and summary, or a finding) that
    shares the most words with ``text``: a point restates a part, and a long report
    would win a count over its whole text."""
    words = word_set(text)

    def shared(report: CommunityReport) -> int:
        parts = [f"{report.title} {report.summary}", *map(_finding_text, report.findings)]
        return max(len(words & word_set(part)) for part in parts)

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
    wanted = word_set(question) - _BROAD
    candidates: list[tuple[str, tuple[str, ...]]] = [(report.summary, ())] if report.summary else []
    candidates += [(_finding_text(f), f.relationships) for f in report.findings]
    rating = min(max(report.rating, 0.0), 10.0) / 10 if report.rating else 0.5
    points = []
    for order, (text, facts) in enumerate(candidates):
        overlap = len(wanted & word_set(text)) / len(wanted) if wanted else 0.0
        score = 100 * (0.6 * overlap + 0.4 * rating) * (1 - 0.1 * min(order, 5))
        score *= 1 - 0.05 * min(place, 10)
        if score > 0 and text:
            points.append(Point((cite,), " ".join(text.split()), round(score, 1), facts[:3]))
    points.sort(key=lambda p: -p.score)  # stable: ties keep the report's order
    return points[:POINTS_PER_REPORT]
