"""Responses: ranked candidates become seed 000's search response, or an explanation.

``respond`` builds type-discriminated results from the rows hydration already read,
``metadata`` with per-type counts, the fusion strategy, per-leg and per-stage timings
and warnings, and (on request) ``debug`` with score distributions and pre-fusion
counts. ``explain`` reshapes a debug response into each leg's ranked hits and the
fused order, with the statements each stage ran.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Mapping, Sequence
from typing import Any

from kgsearch.model import Chunk, GraphObject, Relationship
from kgsearch.search.fusion import Fused
from kgsearch.search.legs import Legs
from kgsearch.search.plan import Plan
from kgsearch.search.request import (
    Explain,
    FusedHit,
    GraphResult,
    LegRank,
    RelationshipResult,
    SearchRequest,
    SearchResponse,
    TextResult,
)
from kgsearch.search.rerank import Candidate
from kgsearch.search.rows import Row
from kgsearch.search.statements import Traces

__all__ = ["explain", "respond", "results"]

_TIMING_NAMES = {
    "object": "graphSearchMs",
    "relationship": "relationshipSearchMs",
    "chunk": "textSearchMs",
}
_TYPE_NAMES = {"object": "graph", "relationship": "relationship", "chunk": "text"}


def respond(
    plan: Plan,
    ranked: Sequence[Candidate],
    rows: Mapping[str, Row],
    legs: Legs,
    fused: Sequence[Fused],
    warnings: Sequence[str],
    timings: Mapping[str, float],
    started: float,
) -> SearchResponse:
    """The response for the final ranking.

    Args:
        plan: The search plan.
        ranked: The reranked (or fused) candidates, best first, at most the limit.
        rows: The rows read for the candidates, by key.
        legs: Every leg's ranked list and timing.
        fused: The fused list (for debug).
        warnings: User-facing notes (embedder trouble).
        timings: Milliseconds per stage: ``embed``, ``fusion``, ``hydrate``, ``rerank``.
        started: When the search started (``time.perf_counter()``), for ``totalMs``.

    Returns:
        The search response.
    """
    found = results(ranked, rows)
    debug = _debug(legs, fused) if plan.request.include_debug else None
    return SearchResponse(
        results=found,
        metadata=_metadata(plan, found, legs, warnings, timings, started),
        debug=debug,
    )


def results(
    ranked: Sequence[Candidate], rows: Mapping[str, Row]
) -> list[GraphResult | RelationshipResult | TextResult]:
    """Results for the ranked candidates, from the rows already read for them.

    Args:
        ranked: Candidates, best first.
        rows: Rows by candidate key; a candidate without a row is left out.

    Returns:
        One result per candidate with a row, in order.
    """
    out: list[GraphResult | RelationshipResult | TextResult] = []
    for c in ranked:
        row = rows.get(c.key)
        found_by = list(c.found_by)
        if isinstance(row, GraphObject):
            # hidden properties (provenance: ``_chunks``…) stay on the row, out of hits
            fields = {
                k: v for k, v in row.properties.items() if k != "name" and not k.startswith("_")
            }
            out.append(
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
            out.append(
                RelationshipResult(
                    id=row.id,
                    score=c.score,
                    found_by=found_by,
                    relationship_type=row.type,
                    triplet_text=row.embedding.embedded_text or row.embedding.text or "",
                    source_id=row.source_id,
                    target_id=row.target_id,
                    label=row.label,
                    properties={k: v for k, v in row.properties.items() if not k.startswith("_")},
                )
            )
        elif isinstance(row, Chunk):
            out.append(
                TextResult(
                    id=row.id,
                    score=c.score,
                    found_by=found_by,
                    snippet=row.text[:500],
                    source_id=row.source_id,
                    section=_section(row),
                )
            )
    return out


def _section(chunk: Chunk) -> str | None:
    """The section path a chunk records (written by document ingest), if any."""
    found = chunk.metadata.get("section")
    return found if isinstance(found, str) and found else None


def explain(request: SearchRequest, response: SearchResponse, traces: Traces) -> Explain:
    """A search's work: each leg's ranked hits and scores, the fused order, and the SQL
    each stage ran.

    Args:
        request: The request as run (with ``include_debug`` set).
        response: Its response.
        traces: The statements and notes each stage reported.

    Returns:
        The explanation (see :class:`~kgsearch.search.request.Explain`).
    """
    details: dict[str, Any] = (response.debug or {}).get("fusion_details", {})
    legs: dict[str, list[dict[str, Any]]] = details.get("legs", {})
    logs = traces.ordered(["type_hint", *legs])
    return Explain(
        request=request,
        legs={name: [LegRank(**hit) for hit in hits] for name, hits in legs.items()},
        leg_ms=details.get("leg_ms", {}),
        fused=[
            FusedHit(type=r.type, id=r.id, score=r.score, found_by=r.found_by)
            for r in response.results
        ],
        metadata=response.metadata,
        statements={name: log.statements for name, log in logs},
        notes={name: log.notes for name, log in logs if log.notes},
    )


def _metadata(
    plan: Plan,
    found: Sequence[GraphResult | RelationshipResult | TextResult],
    legs: Legs,
    warnings: Sequence[str],
    stages: Mapping[str, float],
    started: float,
) -> dict[str, Any]:
    request, words = plan.request, plan.keywords
    timings: dict[str, float] = {"embedQueryMs": round(stages.get("embed", 0.0), 3)}
    if words is not None:
        timings["keywordsMs"] = round(words.ms, 3)
    for leg, ms in legs.ms.items():
        scope = leg.split(":")[0].rstrip("s")
        name = _TIMING_NAMES.get(scope, "graphTraversalMs")
        timings[name] = round(timings.get(name, 0.0) + ms, 3)
    timings["fusionMs"] = round(stages.get("fusion", 0.0), 3)
    # hydration is the reranker's data, read in one batch: it counts as reranking
    timings["rerankMs"] = round(stages.get("hydrate", 0.0) + stages.get("rerank", 0.0), 3)
    timings["totalMs"] = round((time.perf_counter() - started) * 1000, 3)
    counts = {"graph": 0, "relationship": 0, "text": 0}
    for r in found:
        counts[r.type] += 1
    note = words.warning() if words is not None else None
    notes = [note] if note else []
    found_meta: dict[str, Any] = {
        "totalResults": len(found),
        "graphResultCount": counts["graph"],
        "relationshipResultCount": counts["relationship"],
        "textResultCount": counts["text"],
        "fusionStrategy": request.fusion,
        "reranker": request.reranker,
        "legs": sorted(legs.lists),
        "executionTime": timings,
        "warnings": [*notes, *warnings],
    }
    if words is not None:
        found_meta["keywords"] = words.metadata()
    return found_meta


def _distribution(scores: Sequence[float]) -> dict[str, float]:
    if not scores:
        return {"min": 0.0, "max": 0.0, "mean": 0.0}
    return {"min": min(scores), "max": max(scores), "mean": statistics.fmean(scores)}


def _debug(legs: Legs, fused: Sequence[Fused]) -> dict[str, Any]:
    per_type: dict[str, list[float]] = {"graph": [], "relationship": [], "text": []}
    for f in fused:
        per_type[_TYPE_NAMES[f.key.split(":", 1)[0]]].append(f.score)
    pre: dict[str, int] = {}
    for ranked in legs.lists.values():
        for value, _ in ranked:
            t = _TYPE_NAMES[value.split(":", 1)[0]]
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
            "leg_ms": {leg: round(legs.ms.get(leg, 0.0), 3) for leg in legs.lists},
        },
    }
