"""Community reports in search and lookups: the ``communities`` scope, report context
packing for broad questions, and the reads behind ``communities status|list|show``.

The scope runs a vector leg and a BM25 leg over the embedded reports (kind
``community``), fuses them with RRF and returns :class:`CommunityResult` hits of their
own, never fused with object, relationship or chunk hits: a report's score and a
fact's are not on one scale, and a broad question wants both lists (GraphRAG's global
search reads reports; LightRAG's global mode reads relationships). Two store calls
for the legs and two for the hits' reports and communities, whatever the limit.
"""

from __future__ import annotations

import math
import weakref
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Protocol

import numpy as np
import numpy.typing as npt

from kgsearch.community_values import (
    CommunityDetail,
    CommunityMembership,
    CommunityPage,
    CommunityRecord,
    CommunityReport,
    CommunityStatus,
)
from kgsearch.errors import InvalidRequest, NotFound
from kgsearch.model import Kind
from kgsearch.search.fusion import rrf
from kgsearch.search.request import CommunityResult, ScopeConfig, SearchRequest, SearchResponse
from kgsearch.store.base import CommunityStore, GraphReads, SearchIndex, Trace

__all__ = [
    "CommunityIndex",
    "CommunityReads",
    "community_detail",
    "community_page",
    "community_results",
    "community_status",
    "format_reports",
    "object_communities",
    "with_communities",
]


class CommunityIndex(CommunityStore, SearchIndex, Protocol):
    """What the communities scope reads: community rows and the report search index."""


class CommunityReads(CommunityStore, GraphReads, Protocol):
    """What a community page reads: community rows and their member objects."""


Vector = npt.NDArray[np.float32]


BROAD_LEVELS = (0, 1)
"""Levels whose highest-ranked communities always compete for a broad question."""

BROAD_POOL = 20
"""Communities of each broad level that compete (at least twice the limit)."""

MASS_WEIGHT = 0.5
"""Exponent of a community's mass (:func:`_mass`) in its score: 0 ranks by relevance
alone, 1 weighs a pair of members as little as its share of the graph."""

RELEVANCE_FLOOR = 0.01
"""The relevance of a community no leg found (and of every one when no leg scores)."""


def community_results(
    store: CommunityIndex,
    project: str,
    query: str,
    vector: Vector | None,
    scope: ScopeConfig,
    *,
    limit: int,
    trace: Trace | None = None,
) -> list[CommunityResult]:
    """The community reports that best answer a query, broad or narrow.

    Candidates are the reports the vector and BM25 legs find (any level) and the
    highest-ranked communities of the coarse levels (:data:`BROAD_LEVELS`), which a
    broad question ("What are the main themes?") matches no better than a pair of
    members does, but which hold most of the graph. Each is scored by its relevance
    (the report's cosine similarity to the query, or its BM25 score without a vector)
    times its mass (size and rank against the largest candidate) to the power
    :data:`MASS_WEIGHT`; a community nested in (or holding) a better-scored pick is
    dropped unless its report is closer to the query than the pick's, so the reports
    cover different parts of the graph while a narrow question still reaches the small
    community that answers it.

    Args:
        store: The store.
        project: The project.
        query: The query text (BM25 leg).
        vector: The query vector (vector leg; None skips it).
        scope: Which legs run and how many candidates each returns.
        limit: How many reports to return.
        trace: Hears the statements of the legs.
    """
    candidates = scope.candidates or max(30, 3 * limit)
    use_vector = "vector" in scope.methods and vector is not None
    lists = _legs(store, project, query, vector if use_vector else None, scope, candidates, trace)
    fused = rrf(lists)[:candidates]
    found = {f.key: f for f in fused}
    records = {c.id: c for c in store.communities(project, ids=list(found))} if found else {}
    records.update((c.id, c) for c in _broad_pool(store, project, max(BROAD_POOL, 2 * limit)))
    if not records:
        return []
    relevance = _relevance(store, project, vector if use_vector else None, lists, records)
    chosen = _picked(_scored(records, relevance), records, relevance, limit)
    reports = {r.id: r for r in store.community_reports(project, [i for _, i in chosen])}
    return [
        CommunityResult(
            id=i,
            score=score,
            found_by=list(found[i].found_by) if i in found else [],
            level=report.level,
            title=report.title,
            summary=report.summary,
            rating=report.rating,
            size=records[i].size,
            rank=records[i].rank,
            findings=[x.summary for x in report.findings],
        )
        for score, i in chosen
        if (report := reports.get(i)) is not None
    ]


def _legs(
    store: CommunityIndex,
    project: str,
    query: str,
    vector: Vector | None,
    scope: ScopeConfig,
    candidates: int,
    trace: Trace | None,
) -> dict[str, list[tuple[str, float]]]:
    """The ranked lists of the scope's legs (the vector leg only with a vector)."""
    lists: dict[str, list[tuple[str, float]]] = {}
    if "vector" in scope.methods and vector is not None:
        lists["community:vector"] = store.vector_search(
            project, Kind.COMMUNITY, vector, limit=candidates, trace=trace
        )
    if "bm25" in scope.methods:
        lists["community:bm25"] = store.text_search(
            project, Kind.COMMUNITY, query, limit=candidates, trace=trace
        )
    return lists


def _scored(
    records: dict[str, CommunityRecord], relevance: dict[str, float]
) -> list[tuple[float, str]]:
    """Each candidate's relevance times its mass to the power :data:`MASS_WEIGHT`, best
    first (ties by id)."""
    largest = max(c.size for c in records.values())
    heaviest = max(c.rank for c in records.values())
    return sorted(
        (
            (
                relevance.get(i, RELEVANCE_FLOOR)
                * _mass(c.size, c.rank, largest, heaviest) ** MASS_WEIGHT,
                i,
            )
            for i, c in records.items()
        ),
        key=lambda x: (-x[0], x[1]),
    )


def _picked(
    scored: list[tuple[float, str]],
    records: dict[str, CommunityRecord],
    relevance: dict[str, float],
    limit: int,
) -> list[tuple[float, str]]:
    """The best ``limit``, leaving out one nested in (or holding) a pick unless its report
    is closer to the question: it says the same less broadly."""
    chosen: list[tuple[float, str]] = []
    for score, i in scored:
        if len(chosen) == limit:
            break
        members = set(records[i].members)
        rel = relevance.get(i, RELEVANCE_FLOOR)
        if any(
            _nested(members, records[j].members) and rel <= relevance.get(j, RELEVANCE_FLOOR)
            for _, j in chosen
        ):
            continue
        chosen.append((score, i))
    return chosen


_POOLS: weakref.WeakKeyDictionary[object, dict[tuple[str, str, int], list[CommunityRecord]]]
_POOLS = weakref.WeakKeyDictionary()


def _broad_pool(store: CommunityStore, project: str, size: int) -> list[CommunityRecord]:
    """The ``size`` highest-ranked communities of more than two members of each broad
    level, read once per build (the levels' whole lists take a few hundred milliseconds
    to read on MetaQA; a rebuild has a new build id)."""
    build = store.community_build(project)
    if build is None:
        return []
    key = (project, build.id, size)
    try:
        cache = _POOLS.setdefault(store, {})
    except TypeError:  # a store that cannot be weakly referenced: no cache
        cache = {}
    found = cache.get(key)
    if found is None:
        found = []
        for level in BROAD_LEVELS:
            found += [c for c in store.communities(project, level=level) if c.size > 2][:size]
        if len(cache) >= 16:
            cache.clear()
        cache[key] = found
    return found


def _relevance(
    store: CommunityIndex,
    project: str,
    vector: Vector | None,
    lists: dict[str, list[tuple[str, float]]],
    records: dict[str, CommunityRecord],
) -> dict[str, float]:
    """Each candidate's relevance: its report's cosine similarity to the query (one
    vector read over the candidates), else its BM25 score over the best one's; at
    least :data:`RELEVANCE_FLOOR`."""
    if vector is not None:
        scores = store.vector_search(
            project, Kind.COMMUNITY, vector, limit=len(records), ids=list(records)
        )
    else:
        found = lists.get("community:bm25", [])
        best = max((s for _, s in found), default=0.0)
        scores = [(i, s / best) for i, s in found] if best > 0 else []
    return {i: max(s, RELEVANCE_FLOOR) for i, s in scores}


def _mass(size: int, rank: float, largest: int, heaviest: float) -> float:
    """How much of the graph a community holds, from 0 to 1: the geometric mean of its
    size and its rank (summed weight of its relationships) against the largest
    candidate's, each on a log scale. A broad question is better served by a community
    of many members than by a pair that happens to share its words (GraphRAG's global
    search ranks reports by community rank too)."""
    size_share = math.log1p(size) / math.log1p(largest) if largest > 0 else 1.0
    rank_share = math.log1p(max(rank, 0.0)) / math.log1p(heaviest) if heaviest > 0 else 1.0
    return math.sqrt(size_share * rank_share)


def _nested(members: set[str], other: Sequence[str]) -> bool:
    """Whether two communities overlap: levels nest, so they are one within the other."""
    return any(m in members for m in other)


def with_communities(
    store: CommunityIndex,
    project: str,
    request: SearchRequest,
    response: SearchResponse,
    vector: Vector | None,
    embed_query: Callable[[str], Vector] | None,
    trace: Trace | None = None,
) -> SearchResponse:
    """The response with the ``communities`` scope's hits and their count in metadata.
    The query vector of the other scopes is reused; when none ran, the query is
    embedded here (an embedder failure leaves the BM25 leg alone, with a warning)."""
    scope = request.communities
    if scope is None:
        return response
    metadata = dict(response.metadata)
    if vector is None and embed_query is not None and "vector" in scope.methods:
        try:
            vector = embed_query(request.query)
        except Exception as exc:  # an embedder outage degrades search, never fails it
            warnings = list(metadata.get("warnings") or [])
            warnings.append(f"embedder failed ({type(exc).__name__}); community reports by BM25")
            metadata["warnings"] = warnings
    hits = community_results(
        store, project, request.query, vector, scope, limit=request.limit, trace=trace
    )
    if not hits and store.community_build(project) is None:
        warnings = list(metadata.get("warnings") or [])
        warnings.append("no community reports: run `kgsearch communities build` first")
        metadata["warnings"] = warnings
    metadata["communityResultCount"] = len(hits)
    return response.model_copy(update={"communities": hits, "metadata": metadata})


def _report_line(hit: CommunityResult, cite: str | None, findings: int) -> str:
    head = f"[{cite}] " if cite else "- "
    text = f"{head}**{hit.title}** (community, rating {hit.rating:g}): {hit.summary}"
    extra = [f"  - {f}" for f in hit.findings[:findings]]
    return "\n".join([text, *extra])


_MIN_CUT = 40
"""Characters of the best report worth keeping when it must be cut."""


def format_reports(
    hits: Sequence[CommunityResult],
    *,
    max_tokens: int,
    count_tokens: Callable[[str], int],
    cited: bool = False,
) -> tuple[str, dict[str, str]]:
    """Pack reports, best first, into ``max_tokens``: each with its title, summary and
    as many of its findings as fit (at most five); a report that does not fit even
    without findings is skipped (a shorter one after it may fit).

    Returns:
        The text ('' when nothing fits) and, when ``cited``, the citations
        (``C1``… → community id).
    """
    blocks: list[str] = []
    citations: dict[str, str] = {}

    def fits(block: str) -> bool:
        text = "\n".join([*blocks, block])
        return count_tokens("## Communities\n" + text if cited else text) <= max_tokens

    for hit in hits:
        cite = f"C{len(blocks) + 1}" if cited else None
        chosen = next((b for n in (5, 3, 1, 0) if fits(b := _report_line(hit, cite, n))), None)
        if chosen is None and not blocks:  # the best report, cut to the budget
            whole = _report_line(hit, cite, 0)
            lo, hi = 0, len(whole)
            while lo < hi:  # the longest prefix that fits (never splits a character)
                mid = (lo + hi + 1) // 2
                lo, hi = (mid, hi) if fits(whole[:mid] + "…") else (lo, mid - 1)
            chosen = whole[:lo] + "…" if lo >= _MIN_CUT else None
        if chosen is not None:
            blocks.append(chosen)
            if cite:
                citations[cite] = hit.id
    if not blocks:
        return "", {}
    body = "\n".join(blocks)
    return ("## Communities\n" + body if cited else body), citations


# lookups ------------------------------------------------------------------------------


def community_status(store: CommunityStore, project: str) -> CommunityStatus:
    """The project's build, communities per level, reports and whether it is stale."""
    build = store.community_build(project)
    communities = store.communities(project)
    by_level = dict(sorted(Counter(c.level for c in communities).items()))
    reports = store.community_reports(project, [c.id for c in communities])
    return CommunityStatus(
        build=build,
        by_level=by_level,
        reports=len(reports),
        reports_by_status=dict(Counter(r.status for r in reports)),
        missing_reports=len(communities) - len(reports),
        stale=build is not None and build.graph_digest != store.graph_digest(project),
    )


def community_page(
    store: CommunityStore,
    project: str,
    *,
    level: int | None = None,
    limit: int = 50,
    offset: int = 0,
) -> CommunityPage:
    """Communities (of one level) by level, then rank, with their report's title.

    Raises:
        InvalidRequest: ``limit`` or ``offset`` out of range.
    """
    if not 1 <= limit <= 1000 or offset < 0:
        raise InvalidRequest("limit must be 1 to 1000 and offset at least 0")
    communities = store.communities(project, level=level)
    page = communities[offset : offset + limit]
    reports = {r.id: r for r in store.community_reports(project, [c.id for c in page])}
    items = []
    for c in page:
        report = reports.get(c.id)
        items.append(
            {
                "id": c.id,
                "level": c.level,
                "parent": c.parent,
                "size": c.size,
                "rank": c.rank,
                "title": report.title if report else None,
                "rating": report.rating if report else None,
            }
        )
    return CommunityPage(items=tuple(items), total=len(communities))


def community_detail(
    store: CommunityReads, project: str, community_id: str, *, members: int = 100
) -> CommunityDetail:
    """One community with its report, children and (up to ``members``) members.

    Raises:
        NotFound: No such community in the project's current build.
    """
    found = store.communities(project, ids=[community_id])
    if not found:
        raise NotFound(f"no community {community_id!r} in project {project!r}")
    community = found[0]
    reports: list[CommunityReport] = store.community_reports(project, [community_id])
    children = [
        c.id
        for c in store.communities(project, level=community.level + 1)
        if c.parent == community_id
    ]
    objects = store.get_objects(project, list(community.members[: max(members, 0)]))
    return CommunityDetail(
        community=community,
        report=reports[0] if reports else None,
        children=tuple(children),
        members=tuple({"id": o.id, "type": o.type, "key": o.key, "name": o.name} for o in objects),
    )


def object_communities(store: CommunityReads, project: str, object_id: str) -> CommunityMembership:
    """The communities an object belongs to, coarsest first, with report titles.

    Raises:
        NotFound: The object is not a live object of the project.
    """
    if not store.get_objects(project, [object_id]):
        raise NotFound(f"no object {object_id!r} in project {project!r}")
    ids = store.communities_of(project, [object_id]).get(object_id, [])
    records = {c.id: c for c in store.communities(project, ids=ids)}
    reports = {r.id: r for r in store.community_reports(project, ids)}
    return CommunityMembership(
        object_id=object_id,
        communities=tuple(
            {
                "id": i,
                "level": records[i].level,
                "size": records[i].size,
                "title": reports[i].title if i in reports else None,
            }
            for i in ids
            if i in records
        ),
    )
