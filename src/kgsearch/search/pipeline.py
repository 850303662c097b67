"""The search pipeline, one way: plan → embed → retrieve → expand → fuse → hydrate →
rerank → respond.

A request with ``keywords="llm"`` gets its query keywords between plan and embed
(``search/keywords.py``, through ``SearchContext.keywords``); from then on the plan
says which text each scope's legs search.

Each stage runs once, in order, and is timed. Only retrieve, expand and hydrate touch
the store, and hydrate reads the whole pool in a fixed number of batched calls, so a
search costs the same number of store calls whatever its pool size; rerankers see
data, never the store. If embedding the query fails, the search continues on its
lexical and graph legs and says so in ``metadata.warnings``. An explained search hands
each stage a statement log (:class:`~kgsearch.search.statements.Traces`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace

from kgsearch.model import Kind
from kgsearch.search.anchor import anchored_leg
from kgsearch.search.communities import with_communities
from kgsearch.search.fusion import (
    DEFAULT_LEG_WEIGHTS,
    Fused,
    below_floor,
    relevance_floor,
    rrf,
    weighted,
)
from kgsearch.search.hydrate import hydrate
from kgsearch.search.keywords import QueryKeywords, skipped
from kgsearch.search.legs import Legs, graph_legs, scope_legs
from kgsearch.search.modes import MODES, mode_legs
from kgsearch.search.passages import passage_leg
from kgsearch.search.plan import Plan, Vector, choose_reranker, embed_query, make_plan
from kgsearch.search.request import SearchRequest, SearchResponse
from kgsearch.search.rerank import Candidate, CrossEncoder, Reranker
from kgsearch.search.response import respond
from kgsearch.search.rows import Rows
from kgsearch.search.statements import Traces, log_of
from kgsearch.store.base import Store

__all__ = ["SearchContext", "run_search"]


@dataclass
class SearchContext:
    """What a search needs besides the request: store, project, providers."""

    store: Store
    project: str
    embed_query: Callable[[str], Vector] | None
    cross_encoder: CrossEncoder | None = None
    embed_texts: Callable[[Sequence[str]], list[Vector]] | None = None
    keywords: Callable[[str], QueryKeywords] | None = None


def run_search(
    ctx: SearchContext, request: SearchRequest, traces: Traces | None = None
) -> SearchResponse:
    """Run one unified search (see module docstring).

    Args:
        ctx: Store, project and providers.
        request: The validated request.
        traces: Collects each stage's statements (explain); None traces nothing.

    Raises:
        InvalidRequest: Bad recipe, reranker settings or filters.
        DimensionMismatch: The query embedder does not match the stored vectors.
    """
    started, ms = time.perf_counter(), dict[str, float]()
    plan = _with_keywords(make_plan(request), ctx.keywords, traces)
    query = embed_query(plan, ctx.embed_query)
    ms["embed"] = query.ms
    rows = Rows(ctx.store, ctx.project)
    # the anchored leg links names and reads their edges beside the first round, started
    # once the other legs are (the vector legs, the longest, take connections first)
    anchored: list[Callable[[Legs], None]] = []

    def start_anchored() -> None:
        anchored.append(
            anchored_leg(
                ctx.store,
                plan,
                rows,
                query.by_kind.get(Kind.RELATIONSHIP),
                ctx.embed_query,
                ctx.embed_texts,
                traces,
            )
        )

    legs = scope_legs(
        ctx.store,
        ctx.project,
        plan,
        query.by_kind,
        traces,
        start_anchored if plan.anchored else None,
    )
    for finish in anchored:
        finish(legs)
    if plan.graph:
        with _timed(ms, "fusion"):  # the first round's order picks the graph seeds
            first = _fuse(plan, legs.lists)
        first_round = [(f.key, f.score) for f in first]
        if plan.request.graph in MODES:
            mode_legs(ctx.store, plan, first_round, legs, rows, traces)
        else:
            graph_legs(
                ctx.store, plan, first_round, legs, rows, traces, ctx.embed_query, ctx.embed_texts
            )
        if plan.request.graph == "paths" and plan.graph_chunks:
            passage_leg(ctx.store, plan, first_round, legs, rows, traces)
    with _timed(ms, "fusion"):
        fused = _fuse(plan, legs.lists)
    reranker = choose_reranker(plan, query, ctx.cross_encoder)
    with _timed(ms, "hydrate"):
        pool = hydrate(ctx.store, plan, fused, rows, query, log_of(traces, "hydrate"))
    with _timed(ms, "rerank"):
        ranked = _rerank(plan, pool, reranker)
    found = rows.by_key(c.key for c in ranked)
    response = respond(plan, ranked, found, legs, fused, query.warnings, ms, started)
    if plan.request.communities is not None:  # report hits, in a list of their own
        response = with_communities(
            ctx.store,
            ctx.project,
            plan.request,
            response,
            query.first,
            ctx.embed_query,
            log_of(traces, "communities"),
        )
    return response


def _with_keywords(
    plan: Plan, extract: Callable[[str], QueryKeywords] | None, traces: Traces | None
) -> Plan:
    """The plan with the query's keywords, when the request asks for them (an
    explained search notes them under the ``keywords`` stage)."""
    if plan.request.keywords != "llm":
        return plan
    if not plan.wants_keywords:
        words = skipped("the request searches no objects or relationships")
    elif extract is None:
        words = QueryKeywords(source="fallback", reason="no chat model is configured")
    else:
        words = extract(plan.request.query)
    log = log_of(traces, "keywords")
    if log is not None:
        log.note(words.describe())
    return replace(plan, keywords=words)


def _fuse(plan: Plan, lists: Mapping[str, Sequence[tuple[str, float]]]) -> list[Fused]:
    """All legs fused into one ranking, by the request's strategy."""
    request = plan.request
    weights = {**DEFAULT_LEG_WEIGHTS, **(request.weights or {})}
    if request.fusion == "rrf":  # weak similarity hits are left out, ranks kept
        return rrf(lists, k=request.rrf_k, weights=weights, left_out=below_floor(lists))
    return weighted(relevance_floor(lists), weights=weights)


def _rerank(plan: Plan, pool: Sequence[Candidate], reranker: Reranker | None) -> list[Candidate]:
    """The reranker's order (or the fused one), above ``min_score``, cut to the limit."""
    request = plan.request
    ranked = (
        list(pool)
        if reranker is None
        else reranker.rerank(request.query, pool, limit=request.limit)
    )
    if request.min_score is not None:
        ranked = [c for c in ranked if c.score >= request.min_score]
    return ranked[: request.limit]


@contextmanager
def _timed(ms: dict[str, float], stage: str) -> Iterator[None]:
    """Add the block's wall time to ``ms[stage]``."""
    started = time.perf_counter()
    try:
        yield
    finally:
        ms[stage] = ms.get(stage, 0.0) + (time.perf_counter() - started) * 1000
