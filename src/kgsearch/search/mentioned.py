"""The ``graph:mentioned`` leg: the objects the first round's best chunks mention.

A question answered by a passage ("which engine computed Bernoulli numbers?") often
names the object only through the chunk that found it: the object's own text may share
no word with the question. The ``local`` query mode walks objects → chunks; this leg
walks the other way, chunks → objects: each object mentioned by one of the first
round's best :data:`SEED_CHUNKS` chunks scores the sum of those chunks' fused scores,
after the request's object filters. One store call (the chunks' mentions), plus the
objects' rows when the request filters objects.

It runs only when the request weighs it by name (``weights={"graph:mentioned": 1.0}``),
so it changes nothing otherwise, and only when the search ranks chunks and objects.
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
from kgsearch.store.base import GraphReads

__all__ = ["LEG", "MAX_RANKED", "SEED_CHUNKS", "mentioned_leg"]

LEG = "graph:mentioned"

SEED_CHUNKS = 10
"""First-round chunks whose mentioned objects are ranked."""

MAX_RANKED = 100
"""Objects the leg keeps."""


def mentioned_leg(
    store: GraphReads,
    plan: Plan,
    first_round: Sequence[tuple[str, float]],
    legs: Legs,
    rows: Rows,
    traces: Traces | None = None,
) -> None:
    """Rank the objects the first round's best chunks mention (see the module
    docstring) as the ``graph:mentioned`` leg."""
    started = time.perf_counter()
    trace = log_of(traces, LEG)
    chunks: dict[str, float] = {}
    for value, score in first_round:
        kind, id = split_key(value)
        if kind is Kind.CHUNK and len(chunks) < SEED_CHUNKS:
            chunks[id] = score
    scores: dict[str, float] = defaultdict(float)
    if chunks:
        for m in store.mentions(rows.project, chunk_ids=list(chunks), trace=trace):
            if m.object_id and m.chunk_id in chunks:
                scores[m.object_id] += chunks[m.chunk_id]
    allowed = allowed_objects(rows, plan.request, list(scores), trace)
    ranked = sorted(
        ((i, s) for i, s in scores.items() if i in allowed), key=lambda x: (-x[1], x[0])
    )[:MAX_RANKED]
    legs.add(LEG, [(key(Kind.OBJECT, i), s) for i, s in ranked], started)


def _selected(plan: Plan) -> bool:
    """Weighed by name, and both chunks and objects in the search."""
    weighed = (plan.request.weights or {}).get(LEG, 0.0) > 0
    return weighed and Kind.CHUNK in plan.scopes and Kind.OBJECT in plan.pool_kinds


def _run(given: LegInput) -> None:
    mentioned_leg(given.store, given.plan, given.first_round, given.legs, given.rows, given.traces)


LEGS.register(
    LEG,
    Leg(
        LEG,
        "expand",
        (Kind.OBJECT,),
        selected=_selected,
        run=_run,
        needs=frozenset({"first_round", "graph"}),
    ),
)
