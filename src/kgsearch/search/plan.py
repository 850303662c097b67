"""Search planning: a request becomes a :class:`Plan`, then the query becomes vectors.

``make_plan`` is the only place that interprets ``result_types``, recipes, per-leg
candidate counts, the graph stage and the size of the pool handed to reranking; the
later stages read the plan and never the raw request settings. ``embed_query`` embeds
the query once (twice with a type hint) and degrades to a warning when the embedder
fails, so a search still runs on its lexical and graph legs. ``choose_reranker`` builds
the plan's reranker (a part in ``rerankers.RERANKERS``) once the query vector is known.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from kgsearch.errors import DimensionMismatch
from kgsearch.model import Kind
from kgsearch.search.keywords import QueryKeywords
from kgsearch.search.request import WITHOUT_PASSAGE_WALK, SearchRequest, apply_recipe
from kgsearch.search.rerank import CrossEncoder, Reranker
from kgsearch.search.rerankers import RERANKERS, Need, RerankInput
from kgsearch.text import enrich_query

__all__ = [
    "DOCUMENT_WEIGHTS",
    "Plan",
    "QueryVectors",
    "Vector",
    "choose_reranker",
    "embed_query",
    "make_plan",
]

Vector = npt.NDArray[np.float32]

_RESULT_SCOPES: dict[str, tuple[Kind, ...]] = {
    "both": (Kind.OBJECT, Kind.RELATIONSHIP, Kind.CHUNK),
    "graph": (Kind.OBJECT, Kind.RELATIONSHIP),
    "text": (Kind.CHUNK,),
}


@dataclass(frozen=True)
class Plan:
    """What one search will do, decided before any I/O.

    Attributes:
        request: The request with its recipe applied.
        scopes: The scopes searched (after ``result_types``), in :class:`Kind` order.
        candidates: Per-leg candidate count of each searched scope.
        vector_kinds: The searched scopes that have a vector leg.
        graph: Whether graph legs (BFS or PPR) expand the first round.
        graph_objects: Whether graph legs rank objects.
        graph_relationships: Whether graph legs rank relationships.
        graph_chunks: Whether graph legs rank chunks (the query modes' expansions; the
            multi-hop passage walk only on a graph built from documents).
        anchored: Whether the entity-anchored relationship leg runs (``anchor.py``):
            relationships are searched with BM25 (the leg's name lookups are lexical).
        seed_top: How many first-round hits seed the graph legs.
        pool_size: How many fused hits are hydrated and handed to reranking.
        pool_kinds: The kinds of row the pool can hold (searched scopes and the kinds
            graph legs rank), in :class:`Kind` order; hydration reads one batch of each.
        rerank_needs: What hydration reads for the reranker (its part's ``needs``).
        keywords: The query's keywords when the request asked for them
            (``keywords="llm"``, ``search/keywords.py``), set once they are known.
        documents: Whether the project is a graph built from documents (it holds
            chunks): the chunks' own legs stay on in every query mode and the
            ``graph:evidence`` leg ranks the passages the entities and facts point to.
    """

    request: SearchRequest
    scopes: tuple[Kind, ...]
    candidates: Mapping[Kind, int]
    vector_kinds: tuple[Kind, ...]
    graph: bool
    graph_objects: bool
    graph_relationships: bool
    graph_chunks: bool
    anchored: bool
    seed_top: int
    pool_size: int
    pool_kinds: tuple[Kind, ...]
    rerank_needs: frozenset[Need] = frozenset()
    keywords: QueryKeywords | None = None
    documents: bool = False

    @property
    def reranker(self) -> str:
        """The reranker name (``"none"`` for none)."""
        return self.request.reranker

    @property
    def wants_keywords(self) -> bool:
        """Whether keywords would steer a leg: asked for, and objects or relationships
        searched (chunk legs always keep the query)."""
        steered = Kind.OBJECT in self.scopes or Kind.RELATIONSHIP in self.scopes
        return self.request.keywords == "llm" and steered

    def text(self, kind: Kind) -> str:
        """The text one scope's vector and BM25 legs search: the low-level keywords
        for objects and the high-level ones for relationships when there are any,
        else (and always for chunks) the query as it is."""
        words = self.keywords
        if words is not None and kind is Kind.OBJECT and words.low_text:
            return words.low_text
        if words is not None and kind is Kind.RELATIONSHIP and words.high_text:
            return words.high_text
        return self.request.query

    @property
    def names(self) -> tuple[str, ...]:
        """The texts the object name leg looks up: the query, then each low-level
        keyword (the entities the query names)."""
        words = self.keywords.low_level if self.keywords is not None else ()
        query = self.request.query.strip()
        return (query, *(w for w in words if w.casefold() != query.casefold()))


@dataclass
class QueryVectors:
    """The query embedded per scope, with what went wrong on the way.

    Attributes:
        by_kind: The vector for each scope's vector leg (the object scope's carries
            the type hint). Empty when nothing was embedded.
        warnings: User-facing notes (no embedder, embedder failure).
        ms: Time spent embedding.
        plain: With keywords (the object and relationship scopes embed theirs), the
            query's own vector when a chunk leg embedded it.
        also: The vectors of the legs' texts embedded with the query (``also`` of
            :func:`embed_query`), in order; empty when they were not.
    """

    by_kind: dict[Kind, Vector | None] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    ms: float = 0.0
    plain: Vector | None = None
    also: list[Vector] = field(default_factory=list)

    @property
    def first(self) -> Vector | None:
        """The vector MMR and the community scope measure relevance against: the
        query's own if a leg embedded it, else the first scope's, in scope order."""
        if self.plain is not None:
            return self.plain
        return next((v for v in self.by_kind.values() if v is not None), None)


DOCUMENT_WEIGHTS: dict[str, float] = {
    "graph:evidence": 0.5,
    "graph:local:chunks": 0.5,
    "graph:global:chunks": 0.5,
}
"""Default fusion weights on a graph built from documents (``Plan.documents``): the
passages the entities and facts point to support the chunks' own legs rather than
outrank them (a request's ``weights`` override these)."""

_CHUNK_GRAPHS = ("local", "global", "hybrid", "paths")
"""Graph legs that rank chunks: the query modes (``search/modes.py``) and, with
relation paths, the multi-hop passages (``search/passages.py``)."""


def make_plan(request: SearchRequest, *, documents: bool = False) -> Plan:
    """Apply the request's recipe and decide scopes, legs, candidate counts and pool size.

    Args:
        request: The validated request.
        documents: The project is a graph built from documents (it holds chunks).

    Returns:
        The plan every later stage follows.

    Raises:
        InvalidRequest: The recipe is unknown or yields an invalid request.
    """
    given, request = request, apply_recipe(request, documents=documents)
    scopes = tuple(k for k in _RESULT_SCOPES[request.result_types] if _methods(request, k))
    graph = request.graph != "none" and request.result_types != "text"
    graph_objects = request.objects is not None
    graph_relationships = request.relationships is not None
    graph_chunks = _graph_ranks_chunks(request, documents)
    request = _passage_weights(given, request, graph and graph_chunks)
    ranked = {
        *scopes,
        *([Kind.OBJECT] if graph and graph_objects else []),
        *([Kind.RELATIONSHIP] if graph and graph_relationships else []),
        *([Kind.CHUNK] if graph and graph_chunks else []),
    }
    reranked = request.reranker != "none"
    return Plan(
        request=request,
        scopes=scopes,
        candidates={k: _candidates(request, k) for k in scopes},
        vector_kinds=tuple(k for k in scopes if "vector" in _methods(request, k)),
        graph=graph,
        graph_objects=graph_objects,
        graph_relationships=graph_relationships,
        graph_chunks=graph_chunks,
        anchored="bm25" in _methods(request, Kind.RELATIONSHIP)
        and Kind.RELATIONSHIP in scopes
        # a recipe that weighs it 0 (multi_hop) would only pay for it
        and (request.weights or {}).get("relationships:anchored") != 0,
        seed_top=max(5, request.limit // 2),
        # rerankers get a deeper pool to choose from than plain fused order needs
        pool_size=max(request.limit * 3, 30) if reranked else request.limit * 2,
        pool_kinds=tuple(k for k in Kind if k in ranked),
        rerank_needs=RERANKERS.get(request.reranker).needs,
        documents=documents,
    )


def _graph_ranks_chunks(request: SearchRequest, documents: bool) -> bool:
    """Whether a graph leg ranks chunks. The passage walk ranks chunks only: without any
    it would walk the whole entity graph for nothing (42 ms a question on MetaQA's 129k
    relationships)."""
    return (
        request.chunks is not None
        and request.graph in _CHUNK_GRAPHS
        and (documents or request.graph != "paths")
    )


def _passage_weights(given: SearchRequest, request: SearchRequest, chunks: bool) -> SearchRequest:
    """``request`` with its recipe's weights for the chunks' own legs where the passage
    walk (the ``graph:passages`` leg: relation paths ranking chunks) does not run
    (:data:`~kgsearch.search.request.WITHOUT_PASSAGE_WALK`); the caller's own weights
    (set on ``given``) always win."""
    fallback = WITHOUT_PASSAGE_WALK.get(request.recipe or "")
    walks = chunks and request.graph == "paths"
    if not fallback or walks or "weights" in given.model_fields_set:
        return request
    return request.model_copy(update={"weights": {**(request.weights or {}), **fallback}})


def _methods(request: SearchRequest, kind: Kind) -> list[str]:
    config = request.scope(kind)
    return list(config.methods) if config is not None else []


def _candidates(request: SearchRequest, kind: Kind) -> int:
    """Per-leg candidate count: the scope's own, or 3 x limit and at least 30."""
    config = request.scope(kind)
    if config is not None and config.candidates:
        return config.candidates
    return max(30, 3 * request.limit)


def embed_query(
    plan: Plan,
    embed: Callable[[str], Vector] | None,
    embed_many: Callable[[Sequence[str]], list[Vector]] | None = None,
    also: Sequence[str] = (),
) -> QueryVectors:
    """Embed each scope's text once (:meth:`Plan.text`: the query, or the scope's
    keywords), the object scope's with the type hint; with ``embed_many``, together
    with the texts ``also`` holds, in one call.

    Args:
        plan: The search plan.
        embed: The query embedder, or None when the store has no vectors yet (its
            embedder has not answered once: rows wait, pending or failed).
        embed_many: Embeds several queries in one call (through the same cache as
            ``embed``), when the embedder can.
        also: Texts the legs will embed (:class:`~kgsearch.search.parts.Prefetch`),
            embedded with the scopes' texts when ``embed_many`` is given; their vectors
            go to :attr:`QueryVectors.also`, and their time counts as the query's.

    Returns:
        The vectors per scope; empty, with a warning, when there is no embedder or
        it failed.

    Raises:
        DimensionMismatch: The embedder does not match the stored vectors.
    """
    started = time.perf_counter()
    out = QueryVectors()
    kinds, request = plan.vector_kinds, plan.request
    if not kinds or embed is None:
        if kinds:
            out.warnings.append(
                "nothing is embedded yet: searched by keyword only "
                "(run `kgsearch embed generate` to search by meaning too)"
            )
        return out
    texts: dict[Kind, str] = {}
    for kind in kinds:  # each distinct text once (the keywords give each kind its own)
        text = plan.text(kind)
        texts[kind] = (
            enrich_query(text, request.type_hint)
            if (request.type_hint and kind is Kind.OBJECT)
            else text
        )
    made: dict[str, Vector] = {}
    try:
        if embed_many is not None and also:
            wanted = list(dict.fromkeys([*texts.values(), *also]))
            made = dict(zip(wanted, embed_many(wanted), strict=True))
            out.also = [made[t] for t in also]
        for kind, text in texts.items():
            if text not in made:
                made[text] = embed(text)
            out.by_kind[kind] = made[text]
        if plan.keywords is not None:  # MMR and reports keep to the question itself
            out.plain = made.get(request.query)
    except DimensionMismatch:
        raise
    except Exception as exc:  # an embedder outage degrades search, never fails it
        out.warnings.append(
            f"embedder failed ({type(exc).__name__}: {exc}); "
            "vector legs skipped, results are lexical/graph only"
        )
        out.by_kind, out.also = {}, []
    out.ms = (time.perf_counter() - started) * 1000
    return out


def choose_reranker(
    plan: Plan, query: QueryVectors, cross_encoder: CrossEncoder | None
) -> Reranker | None:
    """The reranker the plan names, built by its registered part, or None (``none``, or
    MMR without a query vector).

    Raises:
        InvalidRequest: The reranker is unknown, or ``cross_encoder`` was asked for but
            the engine has none.
    """
    given = RerankInput(query.first, plan.request.mmr_lambda, cross_encoder)
    return RERANKERS.get(plan.reranker).build(given)
