"""The ``graph:evidence`` leg: on a graph built from documents, the passages the first
round's entities and facts point to.

A document graph's objects and relationships are read out of its passages, so a
question's entities and facts are worth most as pointers to the passages that state
them (HippoRAG's phrase–passage links, LazyGraphRAG's noun-phrase graph used to rank
passages). Each of the first round's best :data:`SEED_ROWS` objects and relationships
gives its fused score to every chunk that mentions it (the mention links extraction
writes for both); a chunk scores the sum. The chunks' own vector and BM25 legs
still rank them: this leg is the graph's support beside them.

It runs on document graphs only (``Plan.documents``: the project holds chunks), when
the search ranks chunks and objects or relationships and no graph leg of the request
ranks chunks already (the query modes' and the passage walk's expansions do this work
their own way). One store call: the seeds' mentions.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Sequence

from kgsearch.model import Kind
from kgsearch.search.parts import LEGS, Leg, LegInput, Legs, key, split_key
from kgsearch.search.plan import Plan
from kgsearch.search.rows import Rows
from kgsearch.search.statements import Traces, log_of
from kgsearch.store.base import GraphReads

__all__ = ["LEG", "MAX_RANKED", "SEED_ROWS", "evidence_leg"]

LEG = "graph:evidence"

SEED_ROWS = 10
"""First-round objects, and as many relationships, whose passages are ranked."""

MAX_RANKED = 200
"""Chunks the leg keeps."""


def evidence_leg(
    store: GraphReads,
    first_round: Sequence[tuple[str, float]],
    legs: Legs,
    rows: Rows,
    traces: Traces | None = None,
) -> None:
    """Rank the chunks that mention the first round's best objects and relationships
    (see the module docstring) as the ``graph:evidence`` leg."""
    started = time.perf_counter()
    trace = log_of(traces, LEG)
    seeds: dict[Kind, dict[str, float]] = {Kind.OBJECT: {}, Kind.RELATIONSHIP: {}}
    for value, score in first_round:
        kind, id = split_key(value)
        if kind in seeds and len(seeds[kind]) < SEED_ROWS:
            seeds[kind][id] = score
    objects, facts = seeds[Kind.OBJECT], seeds[Kind.RELATIONSHIP]
    pointed: dict[tuple[Kind, str], set[str]] = defaultdict(set)
    if objects or facts:
        found = store.mentions(
            rows.project, object_ids=list(objects), relationship_ids=list(facts), trace=trace
        )
        for m in found:
            if m.chunk_id and m.object_id in objects:
                pointed[(Kind.OBJECT, m.object_id)].add(m.chunk_id)
            if m.chunk_id and m.relationship_id in facts:
                pointed[(Kind.RELATIONSHIP, m.relationship_id)].add(m.chunk_id)
    scores: dict[str, float] = defaultdict(float)
    for (kind, id), chunks in pointed.items():
        for chunk in chunks:
            scores[chunk] += seeds[kind][id]
    ranked = sorted(scores.items(), key=lambda x: (-x[1], x[0]))[:MAX_RANKED]
    legs.add(LEG, [(key(Kind.CHUNK, c), s) for c, s in ranked], started)


def _selected(plan: Plan) -> bool:
    """A document graph whose search ranks chunks from objects or relationships, with
    no other graph leg ranking chunks."""
    graph_ranks_chunks = plan.graph and plan.graph_chunks
    seeded = Kind.OBJECT in plan.scopes or Kind.RELATIONSHIP in plan.scopes
    return plan.documents and Kind.CHUNK in plan.scopes and seeded and not graph_ranks_chunks


def _run(given: LegInput) -> None:
    evidence_leg(given.store, given.first_round, given.legs, given.rows, given.traces)


LEGS.register(
    LEG,
    Leg(
        LEG,
        "expand",
        (Kind.CHUNK,),
        selected=_selected,
        run=_run,
        needs=frozenset({"first_round", "graph"}),
    ),
)
