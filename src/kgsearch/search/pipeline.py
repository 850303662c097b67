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
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Protocol

from kgsearch.model import Kind
from kgsearch.search.communities import with_communities
from kgsearch.search.fusion import Fused, below_floor, relevance_floor, rrf, scaled, weighted
from kgsearch.search.hydrate import hydrate
from kgsearch.search.in_flight import searching
from kgsearch.search.keywords import QueryKeywords, skipped
from kgsearch.search.parts import (
    LegInput,
    Legs,
    SearchReads,
    default_weights,
    prefetches,
    run_legs,
    scaled_lists,
    split_key,
)
from kgsearch.search.plan import (
    DOCUMENT_WEIGHTS,
    Plan,
    Vector,
    choose_reranker,
    embed_query,
    make_plan,
)
from kgsearch.search.request import SearchRequest, SearchResponse
from kgsearch.search.rerank import Candidate, CrossEncoder, Reranker
from kgsearch.search.response import respond
from kgsearch.search.rows import Rows
from kgsearch.search.statements import Traces, log_of
from kgsearch.store.base import CommunityStore
from kgsearch.store.scope import read_scope

__all__ = ["SearchContext", "SearchStore", "run_search"]


class SearchStore(SearchReads, CommunityStore, Protocol):
    """What a search uses of a store: its reads (graph, index, transaction state) and
    the community reports of the ``communities`` scope."""


@dataclass
class SearchContext:
    """What a search needs besides the request: store, project, providers."""

    store: SearchStore
    project: str
    embed_query: Callable[[str], Vector] | None
    cross_encoder: CrossEncoder | None = None
    embed_texts: Callable[[Sequence[str]], list[Vector]] | None = None
    keywords: Callable[[str], QueryKeywords] | None = None
    documents: bool = False
    """The project is a graph built from documents (``Plan.documents``)."""
    embed_queries: Callable[[Sequence[str]], list[Vector]] | None = None
    """Embeds the question with the texts the legs will embed
    (:class:`~kgsearch.search.parts.Prefetch`) in one call, through the same cache as
    ``embed_query``; None (a remote embedder) embeds them apart, as the legs ask."""


def run_search(
    ctx: SearchContext, request: SearchRequest, traces: Traces | None = None
) -> SearchResponse:
    """Run one unified search (see module docstring).

    Args:
        ctx: The store, project and providers.
        request: The validated request.
        traces: Collects each stage's statements (explain); None traces nothing.

    Raises:
        InvalidRequest: Bad recipe, reranker settings or filters.
        DimensionMismatch: The query embedder does not match the stored vectors.
    """
    # alone in the process, a search spreads its scans (legs.py); its store's
    # freshness checks share one read (store/scope.py)
    with searching(), read_scope():
        return _search(ctx, request, traces)


def _search(ctx: SearchContext, request: SearchRequest, traces: Traces | None) -> SearchResponse:
    started, ms = time.perf_counter(), dict[str, float]()
    plan = _with_keywords(make_plan(request, documents=ctx.documents), ctx.keywords, traces)
    rows = Rows(ctx.store, ctx.project)
    given = LegInput(
        ctx.store, ctx.project, plan, rows, {}, Legs(), traces, ctx.embed_query, ctx.embed_texts
    )
    # what the legs will embed and can tell now goes with the question, in one call
    wanted = prefetches(given) if ctx.embed_queries is not None else []
    also = [t for p in wanted for t in p.texts]
    query = embed_query(plan, ctx.embed_query, ctx.embed_queries, also)
    ms["embed"] = query.ms
    given.vectors = query.by_kind
    start = 0
    for p in wanted if query.also else []:
        p.keep(query.also[start : start + len(p.texts)])
        start += len(p.texts)

    def first_round() -> list[tuple[str, float]]:
        with _timed(ms, "fusion"):  # the first round's order picks the expansion seeds
            return [(f.key, f.score) for f in _fuse(plan, given.legs)]

    run_legs(given, first_round)
    legs = given.legs
    with _timed(ms, "fusion"):
        fused = _fuse(plan, legs)
    reranker = choose_reranker(plan, query, ctx.cross_encoder)
    with _timed(ms, "hydrate"):
        pool = hydrate(
            ctx.store,
            plan,
            fused,
            rows,
            query,
            log_of(traces, "hydrate"),
            _kept(plan, reranker),
        )
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


def _fuse(plan: Plan, legs: Legs) -> list[Fused]:
    """All legs fused into one ranking, by the request's strategy (each list at its
    weight times the per-query multiplier its leg recorded, when it declares one)."""
    request = plan.request
    documents = DOCUMENT_WEIGHTS if plan.documents else {}
    weights = {**default_weights(), **documents, **(request.weights or {})}
    lists, wanted = legs.lists, scaled_lists()
    weights = scaled(weights, {k: m for k, m in legs.multipliers.items() if k in wanted})
    if request.fusion == "rrf":  # weak similarity hits are left out, ranks kept
        return rrf(lists, k=request.rrf_k, weights=weights, left_out=below_floor(lists))
    return weighted(relevance_floor(lists), weights=weights)


def _kept(plan: Plan, reranker: Reranker | None) -> int | None:
    """How many candidates can reach the response, when the fused order is the final one
    (no reranker, no ``min_score``, no passages put first): its first ``limit`` live
    hits; otherwise None (every pooled hit is a candidate)."""
    request = plan.request
    if reranker is not None or request.min_score is not None:
        return None
    if plan.documents and Kind.CHUNK in plan.pool_kinds:
        return None
    return request.limit


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
    if plan.documents and Kind.CHUNK in plan.pool_kinds:
        return passages_first(ranked, request.limit)
    return ranked[: request.limit]


def passages_first(ranked: Sequence[Candidate], limit: int) -> list[Candidate]:
    """A graph built from documents leads with its passages: the ranked chunks first (in
    their order), then the other rows (entities and facts, in theirs), ``limit`` in
    all; the other rows keep a third of the limit when there are that many, so they
    stand beside the passages rather than crowd them out or vanish."""
    passages = [c for c in ranked if split_key(c.key)[0] is Kind.CHUNK]
    others = [c for c in ranked if split_key(c.key)[0] is not Kind.CHUNK]
    kept = min(len(others), max(limit // 3, limit - len(passages)))
    return [*passages[: limit - kept], *others[:kept]]


@contextmanager
def _timed(ms: dict[str, float], stage: str) -> Iterator[None]:
    """Add the block's wall time to ``ms[stage]``."""
    started = time.perf_counter()
    try:
        yield
    finally:
        ms[stage] = ms.get(stage, 0.0) + (time.perf_counter() - started) * 1000
