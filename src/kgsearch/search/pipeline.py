"""The unified search pipeline: run methods → fuse → graph legs → rerank → hydrate.

``run_search`` fills seed 000's response: type-discriminated results, metadata with
per-type counts, the fusion strategy and per-leg timings, and (on request) debug
score distributions and pre-fusion counts. If embedding the query fails, the search
continues on its lexical and graph legs and says so in ``metadata.warnings``.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kgsearch.errors import DimensionMismatch, InvalidRequest
from kgsearch.model import Chunk, GraphObject, Kind, Mention, Relationship
from kgsearch.search.fusion import Fused, rrf, weighted
from kgsearch.search.legs import Legs, Vector, graph_legs, scope_legs, scopes, split_key
from kgsearch.search.request import (
    GraphResult,
    RelationshipResult,
    SearchRequest,
    SearchResponse,
    TextResult,
    apply_recipe,
)
from kgsearch.search.rerank import (
    Candidate,
    CrossEncoder,
    CrossEncoderReranker,
    MentionCountReranker,
    MMRReranker,
    NodeDistanceReranker,
    Reranker,
)
from kgsearch.store.base import Store
from kgsearch.text import enrich_query

__all__ = ["SearchContext", "run_search"]

_TIMING_NAMES = {
    "object": "graphSearchMs",
    "relationship": "relationshipSearchMs",
    "chunk": "textSearchMs",
}


@dataclass
class SearchContext:
    """What a search needs besides the request: store, project, providers."""

    store: Store
    project: str
    embed_query: Callable[[str], Vector] | None
    cross_encoder: CrossEncoder | None = None


def _query_vectors(
    ctx: SearchContext, request: SearchRequest, legs: Legs
) -> tuple[dict[Kind, Vector | None], float]:
    """Embed the query once (and once more with the type hint for the object leg)."""
    started = time.perf_counter()
    kinds = [
        k
        for k in scopes(request)
        if (config := request.scope(k)) is not None and "vector" in config.methods
    ]
    vectors: dict[Kind, Vector | None] = {}
    if not kinds or ctx.embed_query is None:
        if kinds:
            legs.warnings.append("no embedder configured: vector legs skipped")
        return vectors, 0.0
    try:
        plain = ctx.embed_query(request.query)
        for kind in kinds:
            vectors[kind] = plain
        if request.type_hint and Kind.OBJECT in kinds:
            vectors[Kind.OBJECT] = ctx.embed_query(enrich_query(request.query, request.type_hint))
    except DimensionMismatch:
        raise
    except Exception as exc:  # an embedder outage degrades search, never fails it
        legs.warnings.append(
            f"embedder failed ({type(exc).__name__}: {exc}); "
            "vector legs skipped, results are lexical/graph only"
        )
        vectors = {}
    return vectors, (time.perf_counter() - started) * 1000


def _fuse(request: SearchRequest, lists: Mapping[str, Sequence[tuple[str, float]]]) -> list[Fused]:
    if request.fusion == "rrf":
        return rrf(lists, k=request.rrf_k, weights=request.weights)
    return weighted(lists, weights=request.weights)


def _reranker(
    ctx: SearchContext, request: SearchRequest, vectors: dict[Kind, Vector | None]
) -> Reranker | None:
    store, project = ctx.store, ctx.project
    if request.reranker == "mmr":
        query = next((v for v in vectors.values() if v is not None), None)
        if query is None:
            return None
        return MMRReranker(query, lambda_=request.mmr_lambda)
    if request.reranker == "node_distance":
        assert request.center_id is not None
        center = request.center_id
        if not store.endpoints(project, [center]):
            raise InvalidRequest(f"center_id {center!r} is not an object of this project")

        def distance(ids: Sequence[str]) -> Mapping[str, int]:
            hops = {n.id: n.depth for n in store.neighbors(project, [center], depth=3)}
            hops[center] = 0
            return {i: hops[i] for i in ids if i in hops}

        return NodeDistanceReranker(center, distance)
    if request.reranker == "mentions":
        return MentionCountReranker(lambda keys: _source_counts(store, project, keys))
    if request.reranker == "cross_encoder":
        if ctx.cross_encoder is None:
            raise InvalidRequest(
                "reranker cross_encoder needs a cross-encoder: pass "
                "Engine(cross_encoder=OnnxCrossEncoder(path))"
            )
        return CrossEncoderReranker(ctx.cross_encoder)
    return None


def _source_counts(store: Store, project: str, keys: Sequence[str]) -> dict[str, int]:
    """How many distinct live sources mention each hit (a chunk counts as its source)."""
    found: dict[str, int] = {}
    for value in keys:
        kind, id = split_key(value)
        if kind is Kind.OBJECT:
            mentions = store.mentions(project, object_ids=[id])
        elif kind is Kind.RELATIONSHIP:
            mentions = store.mentions(project, relationship_ids=[id])
        else:
            mentions = []
        found[value] = len(_live_sources(store, project, mentions))
    return found


def _live_sources(store: Store, project: str, mentions: Sequence[Mention]) -> set[str]:
    """Distinct live sources behind mentions; a chunk without a source counts as one."""
    chunks = {
        c.id: c for c in store.get_chunks(project, [m.chunk_id for m in mentions if m.chunk_id])
    }
    named: set[str] = set()
    orphans: set[str] = set()
    for m in mentions:
        if m.chunk_id:
            if m.chunk_id not in chunks:
                continue  # deleted chunk
            chunk = chunks[m.chunk_id]
            if chunk.source_id:
                named.add(chunk.source_id)
            else:
                orphans.add(chunk.id)
        elif m.source_id:
            named.add(m.source_id)
    live = {s.id for s in store.get_sources(project, sorted(named))}
    return live | {f"chunk:{c}" for c in orphans}


def _candidates(
    ctx: SearchContext, fused: Sequence[Fused], request: SearchRequest
) -> tuple[list[Candidate], dict[str, GraphObject | Relationship | Chunk]]:
    """Candidates with what rerankers need: text, touched objects, vectors for MMR; and
    the rows read for them by key (hydration reuses them)."""
    by_kind: dict[Kind, list[str]] = {}
    for f in fused:
        kind, id = split_key(f.key)
        by_kind.setdefault(kind, []).append(id)
    store, project = ctx.store, ctx.project
    texts: dict[str, str] = {}
    touches: dict[str, tuple[str, ...]] = {}
    rows: dict[str, GraphObject | Relationship | Chunk] = {}
    for o in store.get_objects(project, by_kind.get(Kind.OBJECT, [])):
        rows[f"object:{o.id}"] = o
        texts[f"object:{o.id}"] = o.embedding.text or o.key
        touches[f"object:{o.id}"] = (o.id,)
    for r in store.get_relationships(project, by_kind.get(Kind.RELATIONSHIP, [])):
        rows[f"relationship:{r.id}"] = r
        texts[f"relationship:{r.id}"] = r.embedding.text or ""
        touches[f"relationship:{r.id}"] = (r.source_id, r.target_id)
    for c in store.get_chunks(project, by_kind.get(Kind.CHUNK, [])):
        rows[f"chunk:{c.id}"] = c
        texts[f"chunk:{c.id}"] = c.text
        touches[f"chunk:{c.id}"] = tuple(
            m.object_id for m in store.mentions(project, chunk_ids=[c.id]) if m.object_id
        )
    vectors: dict[str, Any] = {}
    if request.reranker == "mmr":
        for kind, ids in by_kind.items():
            for id, vec in store.vectors(project, kind, ids).items():
                vectors[f"{kind.value}:{id}"] = vec
    candidates = [
        Candidate(
            key=f.key,
            score=f.score,
            vector=vectors.get(f.key),
            text=texts.get(f.key),
            object_ids=touches.get(f.key, ()),
            found_by=f.found_by,
        )
        for f in fused
        if f.key in texts
    ]
    return candidates, rows


def _hydrate(
    ranked: Sequence[Candidate], rows: Mapping[str, GraphObject | Relationship | Chunk]
) -> list[GraphResult | RelationshipResult | TextResult]:
    """Results for the ranked candidates, from the rows already read for them."""
    results: list[GraphResult | RelationshipResult | TextResult] = []
    for c in ranked:
        row = rows.get(c.key)
        found_by = list(c.found_by)
        if isinstance(row, GraphObject):
            fields = {k: v for k, v in row.properties.items() if k != "name"}
            results.append(
                GraphResult(
                    id=row.id,
                    score=c.score,
                    found_by=found_by,
                    object_type=row.type,
                    key=row.key,
                    name=row.name,
                    fields=fields,
                    labels=row.labels,
                    text=row.embedding.embedded_text or row.embedding.text,
                )
            )
        elif isinstance(row, Relationship):
            results.append(
                RelationshipResult(
                    id=row.id,
                    score=c.score,
                    found_by=found_by,
                    relationship_type=row.type,
                    triplet_text=row.embedding.embedded_text or row.embedding.text or "",
                    source_id=row.source_id,
                    target_id=row.target_id,
                    label=row.label,
                    properties=row.properties,
                )
            )
        elif isinstance(row, Chunk):
            results.append(
                TextResult(
                    id=row.id,
                    score=c.score,
                    found_by=found_by,
                    snippet=row.text[:500],
                    source_id=row.source_id,
                )
            )
    return results


def _distribution(scores: Sequence[float]) -> dict[str, float]:
    if not scores:
        return {"min": 0.0, "max": 0.0, "mean": 0.0}
    return {"min": min(scores), "max": max(scores), "mean": statistics.fmean(scores)}


def run_search(ctx: SearchContext, request: SearchRequest) -> SearchResponse:
    """Run one unified search (see module docstring).

    Raises:
        InvalidRequest: Bad recipe, reranker settings or filters.
        DimensionMismatch: The query embedder does not match the stored vectors.
    """
    total_started = time.perf_counter()
    request = apply_recipe(request)
    legs = Legs()
    vectors, embed_ms = _query_vectors(ctx, request, legs)
    scope_legs(ctx.store, ctx.project, request, vectors, legs)
    started = time.perf_counter()
    fused = _fuse(request, legs.lists)
    fusion_ms = (time.perf_counter() - started) * 1000
    if request.graph != "none" and request.result_types != "text":
        graph_legs(
            ctx.store,
            ctx.project,
            request,
            [(f.key, f.score) for f in fused],
            legs,
            include_relationships=request.relationships is not None,
            include_objects=request.objects is not None,
        )
        started = time.perf_counter()
        fused = _fuse(request, legs.lists)
        fusion_ms += (time.perf_counter() - started) * 1000
    pool = (
        fused[: max(request.limit * 3, 30)]
        if request.reranker != "none"
        else fused[: request.limit * 2]
    )
    started = time.perf_counter()
    candidates, rows = _candidates(ctx, pool, request)
    reranker = _reranker(ctx, request, vectors)
    if reranker is not None:
        candidates = reranker.rerank(request.query, candidates, limit=request.limit)
    if request.min_score is not None:
        candidates = [c for c in candidates if c.score >= request.min_score]
    rerank_ms = (time.perf_counter() - started) * 1000
    results = _hydrate(candidates[: request.limit], rows)
    metadata = _metadata(request, results, legs, embed_ms, fusion_ms, rerank_ms, total_started)
    debug = _debug(legs, fused) if request.include_debug else None
    return SearchResponse(results=results, metadata=metadata, debug=debug)


def _metadata(
    request: SearchRequest,
    results: Sequence[Any],
    legs: Legs,
    embed_ms: float,
    fusion_ms: float,
    rerank_ms: float,
    total_started: float,
) -> dict[str, Any]:
    timings: dict[str, float] = {"embedQueryMs": round(embed_ms, 3)}
    for leg, ms in legs.ms.items():
        scope = leg.split(":")[0].rstrip("s")
        name = _TIMING_NAMES.get(scope, "graphTraversalMs")
        timings[name] = round(timings.get(name, 0.0) + ms, 3)
    timings["fusionMs"] = round(fusion_ms, 3)
    timings["rerankMs"] = round(rerank_ms, 3)
    timings["totalMs"] = round((time.perf_counter() - total_started) * 1000, 3)
    counts = {"graph": 0, "relationship": 0, "text": 0}
    for r in results:
        counts[r.type] += 1
    return {
        "totalResults": len(results),
        "graphResultCount": counts["graph"],
        "relationshipResultCount": counts["relationship"],
        "textResultCount": counts["text"],
        "fusionStrategy": request.fusion,
        "reranker": request.reranker,
        "legs": sorted(legs.lists),
        "executionTime": timings,
        "warnings": legs.warnings,
    }


def _debug(legs: Legs, fused: Sequence[Fused]) -> dict[str, Any]:
    per_type: dict[str, list[float]] = {"graph": [], "relationship": [], "text": []}
    names = {"object": "graph", "relationship": "relationship", "chunk": "text"}
    for f in fused:
        per_type[names[f.key.split(":", 1)[0]]].append(f.score)
    pre: dict[str, int] = {}
    for ranked in legs.lists.values():
        for value, _ in ranked:
            t = names[value.split(":", 1)[0]]
            pre[t] = pre.get(t, 0) + 1
    return {
        "score_distribution": {t: _distribution(s) for t, s in per_type.items()},
        "fusion_details": {
            "pre_fusion_counts": pre,
            "post_fusion_count": len(fused),
            "legs": {
                leg: [{"key": k, "rank": i + 1, "score": s} for i, (k, s) in enumerate(ranked[:20])]
                for leg, ranked in legs.lists.items()
            },
        },
    }
