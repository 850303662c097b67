"""Community reports from a community's material: extractive (no model) or by an LLM.

Pure: a :class:`Material` (the community, its members with names and descriptions,
the relationships inside it, and its children's reports) becomes a
:class:`~kgsearch.community_values.CommunityReport`; reading the material from a store
and writing the report is :mod:`kgsearch.lifecycle.communities`' work.

**Extractive** (:func:`extractive_report`): members are ranked by their weighted
degree over the community's own relationships, relationships by the combined degree
of their ends times their weight (GraphRAG ranks entities and edges by degree). The
first version ranked members by weighted PageRank per community; on the MetaQA graph
its 11,292 runs took 34 s of a 206 s build under load, so degree it is. The title
names the three most central members; the summary counts members and relationships
by type and names the central members with the first sentence of their description; each finding
is one central relationship (its description when it has one, else its triplet), citing
its two ends and itself, after one finding for the most central member. The rating
(0-10) is the community's rank on a log scale against the largest rank of the build.

**LLM** (:func:`llm_report`): GraphRAG's community report prompt
(``prompts/community_report.txt``, package data, versioned) over a table of members and
one of relationships, numbered so the model cites short ids that map back to real
ones. Bottom-up: when the community's own material passes the character budget and
its children have reports, the children's reports stand in for the material (the
largest first), with the most central members added while they fit. The reply is parsed
tolerantly (the first JSON object in it; missing fields get defaults; unknown citations
are dropped). An unusable reply raises :class:`~kgsearch.errors.ProviderError`, so the
task runner retries it.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

from kgsearch.community_values import CommunityRecord, CommunityReport, Finding
from kgsearch.errors import ProviderError
from kgsearch.llm.base import LLM, Message

__all__ = [
    "EXTRACTIVE_VERSION",
    "MAX_REPORT_CHARS",
    "PROMPT_VERSION",
    "TRUNCATED",
    "Edge",
    "Material",
    "Member",
    "extractive_report",
    "llm_report",
    "parse_report",
]

EXTRACTIVE_VERSION = "extractive-1"
"""The extractive writer's version, recorded as the report's ``prompt_version``."""

_PROMPT_FILE = "community_report.txt"


def _prompt_template() -> tuple[str, str]:
    text = resources.files("kgsearch.communities").joinpath("prompts", _PROMPT_FILE).read_text()
    head, _, body = text.partition("---\n")
    version = head.split(":", 1)[1].strip()
    return f"llm-{version}", body


PROMPT_VERSION, _TEMPLATE = _prompt_template()
"""The LLM prompt's version (``llm-<n>``), recorded with each report."""

_TOP_MEMBERS = 10
_TOP_EDGES = 8
_MAX_FINDINGS = 8
_DESCRIPTION_CHARS = 300

MAX_REPORT_CHARS = {
    "title": 200,
    "summary": 4000,
    "finding": 1000,
    "explanation": 2000,
    "rating_explanation": 500,
}
"""The longest text of each part of an LLM report that is stored, in characters (a
report the prompt asks for is a few thousand characters in all; a model that does not
stop is cut, with :data:`TRUNCATED` at the end, so a report stays under 25,000)."""
TRUNCATED = " [truncated]"
"""The note that ends a report text cut to its :data:`MAX_REPORT_CHARS`."""
_MAX_REPLY_CHARS = 200_000
"""Only this much of a reply is read: a report is a few thousand characters."""


@dataclass(frozen=True)
class Member:
    """A member object as a report sees it."""

    id: str
    name: str
    type: str
    description: str = ""


@dataclass(frozen=True)
class Edge:
    """A relationship inside the community."""

    id: str
    source: str
    target: str
    type: str
    weight: float = 1.0
    description: str = ""


@dataclass(frozen=True)
class Material:
    """What one report is written from.

    Attributes:
        community: The community.
        members: Its live members (those deleted since the build are absent).
        edges: The live relationships with both ends among the members.
        children: Reports of the communities split from it (bottom-up LLM reports).
        max_rank: The largest rank of the build (scales the extractive rating).
    """

    community: CommunityRecord
    members: Sequence[Member]
    edges: Sequence[Edge]
    children: Sequence[CommunityReport] = ()
    max_rank: float = 0.0
    _centrality: dict[str, float] = field(default_factory=dict, init=False, compare=False)

    def digest(self) -> str:
        """A digest of everything a report is written from (members, their names and
        descriptions, relationships and the children's reports)."""
        h = hashlib.blake2b(digest_size=16)
        for m in sorted(self.members, key=lambda m: m.id):
            h.update(f"m\x1f{m.id}\x1f{m.name}\x1f{m.type}\x1f{m.description}\x1e".encode())
        for e in sorted(self.edges, key=lambda e: e.id):
            h.update(f"e\x1f{e.id}\x1f{e.type}\x1f{e.weight!r}\x1f{e.description}\x1e".encode())
        for c in sorted(self.children, key=lambda c: c.id):
            h.update(f"c\x1f{c.id}\x1f{c.source_digest}\x1e".encode())
        return h.hexdigest()

    def centrality(self) -> dict[str, float]:
        """Member id → weighted degree inside the community."""
        if not self._centrality:
            self._centrality.update(_strength(self.members, self.edges))
        return self._centrality

    def ranked_members(self) -> list[Member]:
        """Members by centrality, highest first (ties by name, then id)."""
        score = self.centrality()
        return sorted(self.members, key=lambda m: (-score.get(m.id, 0.0), m.name, m.id))

    def ranked_edges(self) -> list[Edge]:
        """Relationships by the combined degree of their ends times their weight."""
        score = self.centrality()
        return sorted(
            self.edges,
            key=lambda e: (-(score.get(e.source, 0) + score.get(e.target, 0)) * e.weight, e.id),
        )


def _strength(members: Sequence[Member], edges: Sequence[Edge]) -> dict[str, float]:
    """Weighted degree of each member over the community's own relationships."""
    score = dict.fromkeys((m.id for m in members), 0.0)
    for e in edges:
        if e.source != e.target and e.source in score and e.target in score:
            weight = max(e.weight, 0.0)
            score[e.source] += weight
            score[e.target] += weight
    return score


def _first_sentence(text: str, limit: int = 160) -> str:
    text = " ".join(text.split())
    match = re.search(r"(?<=[.!?])\s", text)
    sentence = text[: match.start()] if match else text
    return sentence if len(sentence) <= limit else sentence[: limit - 1].rstrip() + "…"


def _counted(counter: Counter[str], limit: int = 4) -> str:
    parts = [f"{n} {name}" for name, n in counter.most_common(limit)]
    rest = sum(counter.values()) - sum(n for _, n in counter.most_common(limit))
    if rest:
        parts.append(f"{rest} other")
    return ", ".join(parts)


def _triplet(edge: Edge, names: dict[str, str]) -> str:
    source, target = names.get(edge.source, edge.source), names.get(edge.target, edge.target)
    return f"{source} {edge.type.replace('_', ' ')} {target}"


def extractive_report(material: Material) -> CommunityReport:
    """A report without a model: central members and relationships, with citations.

    Args:
        material: The community and what it holds.

    Returns:
        The report (method ``extractive``, version :data:`EXTRACTIVE_VERSION`).
    """
    community = material.community
    members = material.ranked_members()
    names = {m.id: m.name for m in material.members}
    top = members[:_TOP_MEMBERS]
    title = ", ".join(m.name for m in top[:3]) or community.id
    if len(members) > 3:
        title += f" and {len(members) - 3} more"
    types = Counter(m.type for m in material.members)
    rel_types = Counter(e.type for e in material.edges)
    summary = [
        f"A community of {len(material.members)} objects ({_counted(types)}) joined by "
        f"{len(material.edges)} relationships"
        + (f" ({_counted(rel_types)})." if rel_types else ".")
    ]
    if top:
        central = "; ".join(
            f"{m.name} ({m.type})"
            + (f": {_first_sentence(m.description)}" if m.description else "")
            for m in top[:5]
        )
        summary.append(f"Its most central members are {central}.")
    findings: list[Finding] = []
    if top:
        lead = top[0]
        degree = sum(1 for e in material.edges if lead.id in (e.source, e.target))
        findings.append(
            Finding(
                summary=f"{lead.name} ({lead.type}) is the most central member",
                explanation=(
                    f"{lead.name} has {degree} of the community's {len(material.edges)} "
                    "relationships."
                    + (f" {_first_sentence(lead.description, 240)}" if lead.description else "")
                ),
                objects=(lead.id,),
            )
        )
    for edge in material.ranked_edges()[:_TOP_EDGES]:
        triplet = _triplet(edge, names)
        description = " ".join(edge.description.split())[:_DESCRIPTION_CHARS]
        if description.casefold() == triplet.casefold():
            description = ""  # a triple without a description says it once
        findings.append(
            Finding(
                summary=triplet,
                explanation=description,
                objects=tuple(dict.fromkeys((edge.source, edge.target))),
                relationships=(edge.id,),
            )
        )
    rating = _rating(community.rank, material.max_rank)
    return CommunityReport(
        id=community.id,
        level=community.level,
        title=title,
        summary=" ".join(summary),
        findings=tuple(findings),
        rating=rating,
        rating_explanation=(
            f"internal relationship weight {community.rank:g} against "
            f"{material.max_rank:g} for the largest community of the build, on a log scale"
        ),
        method="extractive",
        prompt_version=EXTRACTIVE_VERSION,
        model=None,
        source_digest=material.digest(),
    )


def _rating(rank: float, max_rank: float) -> float:
    if max_rank <= 0 or rank <= 0:
        return 0.0
    return round(min(10.0, 10.0 * math.log1p(rank) / math.log1p(max_rank)), 1)


# LLM reports ---------------------------------------------------------------------------


@dataclass(frozen=True)
class LLMReport:
    """A model's report and what it took."""

    report: CommunityReport
    calls: int
    cached: int


def _clip(text: str, limit: int = _DESCRIPTION_CHARS) -> str:
    text = " ".join(text.split()).replace("|", "/")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _data_section(
    material: Material, budget: int
) -> tuple[str, dict[str, str], dict[str, str], bool]:
    """The data table, the short-id maps (entities, relationships), and whether the
    children's reports stood in for the material."""
    members = material.ranked_members()
    edges = material.ranked_edges()
    entity_ids = {str(i + 1): m.id for i, m in enumerate(members)}
    short = {m.id: str(i + 1) for i, m in enumerate(members)}
    rel_ids = {str(i + 1): e.id for i, e in enumerate(edges)}
    member_lines = [
        f"{short[m.id]}|{_clip(m.name, 80)}|{m.type}|{_clip(m.description)}" for m in members
    ]
    edge_lines = [
        f"{i + 1}|{short.get(e.source, '?')}|{short.get(e.target, '?')}|{e.type}|"
        f"{_clip(e.description)}"
        for i, e in enumerate(edges)
    ]
    whole = _tables(member_lines, edge_lines, [])
    if len(whole) <= budget or not material.children:
        return _fit(member_lines, edge_lines, budget), entity_ids, rel_ids, False
    child_lines = [
        f"## {c.title}\n{_clip(c.summary, 1500)}\n"
        + "\n".join(f"- {_clip(f.summary, 200)}" for f in c.findings[:5])
        for c in sorted(material.children, key=lambda c: -c.rating)
    ]
    kept: list[str] = []
    for line in child_lines:
        if len(_tables([], [], [*kept, line])) > budget and kept:
            break
        kept.append(line)
    used = len(_tables([], [], kept))
    return (
        _fit(member_lines, [], budget - used, reports=kept),
        entity_ids,
        rel_ids,
        True,
    )


def _tables(members: Sequence[str], edges: Sequence[str], reports: Sequence[str]) -> str:
    parts = []
    if reports:
        parts.append("Reports of its sub-communities:\n\n" + "\n\n".join(reports))
    if members:
        parts.append("Entities\nid|name|type|description\n" + "\n".join(members))
    if edges:
        parts.append("Relationships\nid|source|target|type|description\n" + "\n".join(edges))
    return "\n\n".join(parts)


def _fit(
    members: Sequence[str], edges: Sequence[str], budget: int, *, reports: Sequence[str] = ()
) -> str:
    """The tables cut to the budget: members and relationships alternately, most
    central first, so neither crowds the other out."""
    kept_m: list[str] = []
    kept_e: list[str] = []
    for i in range(max(len(members), len(edges))):
        for source, kept in ((members, kept_m), (edges, kept_e)):
            if i < len(source):
                kept.append(source[i])
                if len(_tables(kept_m, kept_e, reports)) > budget and len(kept) > 1:
                    kept.pop()
                    return _tables(kept_m, kept_e, reports)
    return _tables(kept_m, kept_e, reports)


def llm_report(llm: LLM, material: Material, *, budget_chars: int = 16_000) -> LLMReport:
    """A GraphRAG-style report written by the model.

    Args:
        llm: The chat model (wrap it in the response cache).
        material: The community and what it holds (with its children's reports).
        budget_chars: The data's size limit in characters (about 4 per token).

    Raises:
        ProviderError: The model failed or its reply holds no usable report.
    """
    data, entity_ids, rel_ids, from_children = _data_section(material, budget_chars)
    prompt = _TEMPLATE.replace("{max_findings}", str(_MAX_FINDINGS)).replace("{data}", data)
    reply = llm.complete(
        [
            Message("system", "You write reports about communities of a knowledge graph."),
            Message("user", prompt),
        ],
        max_tokens=2000,
    )
    report = parse_report(reply.text, material, entity_ids, rel_ids)
    report = report.model_copy(update={"model": reply.model or llm.model_id})
    if from_children:
        report = report.model_copy(
            update={"rating_explanation": report.rating_explanation + " (from sub-communities)"}
        )
    return LLMReport(report, calls=1, cached=int(reply.cached))


def parse_report(
    text: str, material: Material, entity_ids: dict[str, str], rel_ids: dict[str, str]
) -> CommunityReport:
    """The report in a model's reply, read tolerantly.

    Raises:
        ProviderError: No JSON object with a title or a summary in the reply.
    """
    data = _first_object(text[:_MAX_REPLY_CHARS])
    if not isinstance(data, dict) and len(text) > _MAX_REPLY_CHARS:
        raise ProviderError(
            f"the community report reply is {len(text)} characters long, past the "
            f"{_MAX_REPLY_CHARS} read: a model that did not stop; no report is stored",
            details={"reply_chars": len(text)},
        )
    if not isinstance(data, dict):
        raise ProviderError(f"the community report reply holds no JSON object: {text[:120]!r}")
    fields = {re.sub(r"[\s\-]+", "_", str(k).strip().casefold()): v for k, v in data.items()}
    title = _string(fields.get("title"))
    summary = _string(fields.get("summary"))
    if not title and not summary:
        raise ProviderError(f"the community report reply has no title or summary: {text[:120]!r}")
    findings = [
        f for raw in _as_list(fields.get("findings")) if (f := _finding(raw, entity_ids, rel_ids))
    ]
    community = material.community
    return CommunityReport(
        id=community.id,
        level=community.level,
        title=_capped(title or summary[:80], "title"),
        summary=_capped(summary, "summary"),
        findings=tuple(findings[:_MAX_FINDINGS]),
        rating=_score(fields.get("rating")),
        rating_explanation=_capped(_string(fields.get("rating_explanation")), "rating_explanation"),
        method="llm",
        prompt_version=PROMPT_VERSION,
        source_digest=material.digest(),
    )


def _capped(text: str, part: str) -> str:
    """``text`` within the stored size of ``part``, ending in :data:`TRUNCATED` if cut."""
    limit = MAX_REPORT_CHARS[part]
    if len(text) <= limit:
        return text
    return text[: limit - len(TRUNCATED)].rstrip() + TRUNCATED


def _first_object(text: str) -> Any:
    decoder = json.JSONDecoder()
    for match in re.finditer(r"\{", text):
        try:
            value, _ = decoder.raw_decode(text, match.start())
        except json.JSONDecodeError:
            continue
        if isinstance(value, dict):
            return value
    return None


def _string(value: Any) -> str:
    if isinstance(value, str):
        return " ".join(value.split())
    return "" if value is None else " ".join(str(value).split())


def _as_list(value: Any) -> list[Any]:
    if isinstance(value, list):
        return value
    return [] if value is None else [value]


def _score(value: Any) -> float:
    try:
        number = float(re.findall(r"-?\d+(?:\.\d+)?", str(value))[0])
    except (IndexError, ValueError):
        return 0.0
    return max(0.0, min(10.0, number))


def _cited(value: Any, ids: dict[str, str]) -> tuple[str, ...]:
    found: list[str] = []
    for item in _as_list(value):
        for token in re.findall(r"[\w\-]+", str(item)):
            real = ids.get(token) or (token if token in ids.values() else None)
            if real is not None and real not in found:
                found.append(real)
    return tuple(found)


def _finding(raw: Any, entity_ids: dict[str, str], rel_ids: dict[str, str]) -> Finding | None:
    if isinstance(raw, str):
        return Finding(summary=_capped(_string(raw), "finding")) if raw.strip() else None
    if not isinstance(raw, dict):
        return None
    data = {re.sub(r"[\s\-]+", "_", str(k).strip().casefold()): v for k, v in raw.items()}
    summary = _string(data.get("summary") or data.get("insight"))
    if not summary:
        return None
    return Finding(
        summary=_capped(summary, "finding"),
        explanation=_capped(_string(data.get("explanation")), "explanation"),
        objects=_cited(data.get("entities", data.get("objects")), entity_ids),
        relationships=_cited(data.get("relationships"), rel_ids),
    )
