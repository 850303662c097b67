"""LightRAG's query modes as graph legs of the unified search.

LightRAG answers with five modes; here each is a recipe (``search/request.py``) over
the same pipeline, and the two that expand the first round are graph legs:

- ``local``: the query's entities first. Object hits seed the expansion: their
  relationships (``graph:local:relationships``, each scored by the seeds it touches)
  and the chunks that mention them (``graph:local:chunks``, scored by the seeds they
  mention).
- ``global``: the query's themes first. Relationship hits (their text holds the
  description and keywords) seed the expansion: their endpoints
  (``graph:global:objects``) and the chunks they came from (``graph:global:chunks``:
  source chunks and mentions).
- ``hybrid`` does both; ``mix`` is hybrid plus the chunks' own vector and BM25 legs;
  ``naive`` searches chunks only (no graph).

A seed's weight is its first-round fused score, so a strong hit pulls harder than a
weak one. Work is bounded: at most :data:`EDGES_PER_OBJECT` relationships each way
per seed object (hubs cost no more than anything else) and :data:`MAX_RANKED` rows
per leg.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Sequence

from kgsearch.model import Kind
from kgsearch.search.legs import allowed_objects
from kgsearch.search.parts import LEGS, Leg, LegInput, Legs, key, split_key
from kgsearch.search.plan import Plan
from kgsearch.search.rows import Rows
from kgsearch.search.statements import Traces, log_of
from kgsearch.store.base import GraphReads, Trace

__all__ = ["EDGES_PER_OBJECT", "MAX_RANKED", "MODES", "mode_legs"]

MODES = ("local", "global", "hybrid")
"""The ``graph`` values this module serves."""

EDGES_PER_OBJECT = 50
"""Relationships read out of and into each seed object (the oldest first)."""

MAX_RANKED = 500
"""Rows kept per expansion leg."""


def _ranked(scores: dict[str, float], kind: Kind) -> list[tuple[str, float]]:
    best = sorted(scores.items(), key=lambda x: (-x[1], x[0]))[:MAX_RANKED]
    return [(key(kind, i), s) for i, s in best]


def _seeds(plan: Plan, first_round: Sequence[tuple[str, float]]) -> dict[Kind, dict[str, float]]:
    seeds: dict[Kind, dict[str, float]] = {Kind.OBJECT: {}, Kind.RELATIONSHIP: {}}
    taken = dict.fromkeys(seeds, 0)
    for value, score in first_round:
        kind, id = split_key(value)
        if kind in seeds and taken[kind] < plan.seed_top:
            seeds[kind][id] = score
            taken[kind] += 1
    return seeds


def mode_legs(
    store: GraphReads,
    plan: Plan,
    first_round: Sequence[tuple[str, float]],
    legs: Legs,
    rows: Rows,
    traces: Traces | None = None,
) -> None:
    """The expansion legs of the request's mode (``local``, ``global`` or ``hybrid``).

    Args:
        store: The store searched.
        plan: The search plan.
        first_round: The scope legs' hits, fused, best first.
        legs: Where the legs are recorded.
        rows: The search's rows (relationships read here are kept for hydration).
        traces: Where the statements go when the search is explained.
    """
    mode = plan.request.graph
    seeds = _seeds(plan, first_round)
    trace = log_of(traces, "graph:" + mode)
    if mode in ("local", "hybrid"):
        _local(store, plan, seeds[Kind.OBJECT], legs, rows, trace)
    if mode in ("global", "hybrid"):
        _global(store, plan, seeds[Kind.RELATIONSHIP], legs, rows, trace)


def _local(
    store: GraphReads,
    plan: Plan,
    seeds: dict[str, float],
    legs: Legs,
    rows: Rows,
    trace: Trace | None,
) -> None:
    started = time.perf_counter()
    request = plan.request
    wanted = request.filters.relationship_types
    rel_scores: dict[str, float] = defaultdict(float)
    chunk_scores: dict[str, float] = defaultdict(float)
    if seeds and plan.graph_relationships:
        edges = store.typed_edges(
            rows.project,
            list(seeds),
            limit=EDGES_PER_OBJECT,
            as_of=request.filters.as_of,
            trace=trace,
        )
        for rid, source, target, type_ in edges:
            if wanted is None or type_ in wanted:
                rel_scores[rid] += seeds.get(source, 0.0) + seeds.get(target, 0.0)
        legs.add("graph:local:relationships", _ranked(rel_scores, Kind.RELATIONSHIP), started)
    if seeds and plan.graph_chunks:
        for m in store.mentions(rows.project, object_ids=list(seeds), trace=trace):
            if m.chunk_id and m.object_id in seeds:
                chunk_scores[m.chunk_id] += seeds[m.object_id]
        legs.add("graph:local:chunks", _ranked(chunk_scores, Kind.CHUNK), started)


def _global(
    store: GraphReads,
    plan: Plan,
    seeds: dict[str, float],
    legs: Legs,
    rows: Rows,
    trace: Trace | None,
) -> None:
    started = time.perf_counter()
    request = plan.request
    found = rows.relationships(list(seeds), trace) if seeds else {}
    if plan.graph_objects:
        ends: dict[str, float] = defaultdict(float)
        for rid, rel in found.items():
            for end in (rel.source_id, rel.target_id):
                ends[end] += seeds[rid]
        allowed = allowed_objects(rows, request, list(ends), trace)
        kept = {i: s for i, s in ends.items() if i in allowed}
        legs.add("graph:global:objects", _ranked(kept, Kind.OBJECT), started)
    if plan.graph_chunks:
        chunks: dict[str, float] = defaultdict(float)
        cited: dict[str, set[str]] = defaultdict(set)
        for rid, rel in found.items():
            cited[rid].update(rel.source_chunks)
        if found:
            for m in store.mentions(rows.project, relationship_ids=list(found), trace=trace):
                if m.chunk_id and m.relationship_id in found:
                    cited[m.relationship_id].add(m.chunk_id)
        for rid, chunk_ids in cited.items():
            for chunk in chunk_ids:
                chunks[chunk] += seeds[rid]
        legs.add("graph:global:chunks", _ranked(chunks, Kind.CHUNK), started)


def _run(given: LegInput) -> None:
    mode_legs(given.store, given.plan, given.first_round, given.legs, given.rows, given.traces)


LEGS.register(
    "graph:modes",
    Leg(
        "graph:modes",
        "expand",
        (Kind.OBJECT, Kind.RELATIONSHIP, Kind.CHUNK),
        selected=lambda plan: plan.graph and plan.request.graph in MODES,
        run=_run,
        needs=frozenset({"first_round", "graph"}),
    ),
)
