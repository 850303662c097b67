"""Multi-hop passage retrieval over a text graph, in the manner of HippoRAG 2.

A question such as "Who founded the company that published X?" needs a passage that
shares no words with it: the one about the company, reached through X's passage. The
``graph:passages`` leg finds it by personalised PageRank over the bipartite graph of
entities and the chunks that mention them (plus the relationships between entities):

1. **Seeds.** The endpoints of the first round's best few relationships (facts) and
   its best few objects, each weighted by its fused score and divided by the number of
   chunks that mention it (node specificity: a name found everywhere says little).
   The first round's chunks are seeds too, with a small weight
   (:data:`PASSAGE_SEED_WEIGHT` of the entity mass, as HippoRAG 2 weights passages).
2. **Graph.** The whole project's graph, as HippoRAG 2 walks it: entities, chunks, an
   edge between each entity and each chunk that mentions it, and the relationships
   between entities (:mod:`kgsearch.search.passage_graph`: numpy arrays, read from the
   store once and again only after writes). Entities mentioned by more than
   :data:`MAX_CHUNKS_PER_ENTITY` chunks (hubs) pass no mass between their chunks.
3. **Walk.** PageRank with restart to the seeds (damping :data:`DAMPING`, HippoRAG's
   0.5), :data:`STEPS` vector steps over the arrays; chunks are ranked by the mass they
   end with.

One store read per question (the seed facts' endpoints, usually already read), no
model call; the work per question is a few vector operations over the graph's arcs.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Sequence

import numpy as np

from kgsearch.model import Kind
from kgsearch.search.parts import LEGS, Leg, LegInput, Legs, key, split_key
from kgsearch.search.passage_graph import PassageGraph, graph_for, walk
from kgsearch.search.plan import Plan
from kgsearch.search.rows import Rows
from kgsearch.search.statements import Traces, log_of
from kgsearch.store.base import GraphReads, Trace

__all__ = ["DAMPING", "MAX_CHUNKS_PER_ENTITY", "PASSAGE_SEED_WEIGHT", "passage_leg"]

DAMPING = 0.5
"""Probability of following an edge rather than restarting at a seed."""

PASSAGE_SEED_WEIGHT = 0.1
"""Seed mass given to the first round's chunks, relative to the entity seeds."""

MAX_CHUNKS_PER_ENTITY = 200
"""An entity mentioned by more chunks is a hub: it seeds but is not expanded through."""

SEED_FACTS = 3
"""First-round relationships (facts) whose endpoints seed the walk: a few strong facts
seed better than many weak ones (HippoRAG 2 keeps the top facts only)."""

MAX_RANKED = 500

OBJECT_SEEDS = True
"""Whether the first round's best objects seed the walk beside the facts' endpoints
(HippoRAG 2 links query to graph through facts only; over the whole graph the objects
the question names help: multi_hop recall@5 0.634 → 0.650 on MuSiQue and 0.810 → 0.825
on HotpotQA, spaCy graphs. Over the old bounded subgraph they had cost MuSiQue)."""

SKIP_TYPES: frozenset[str] = frozenset()
"""Relationship types the walk does not follow."""

SAME_KEY = False
"""Whether objects of different types with one key are linked."""

STEPS = 12
"""Power iterations of the walk (mass still moving after them: ``DAMPING ** STEPS``)."""

SEED_CHUNKS = 20
"""First-round chunks seeded with :data:`PASSAGE_SEED_WEIGHT`."""


def _first_round(
    first_round: Sequence[tuple[str, float]],
) -> tuple[dict[str, float], dict[str, float], dict[str, float]]:
    objects: dict[str, float] = {}
    relationships: dict[str, float] = {}
    chunks: dict[str, float] = {}
    for value, score in first_round:
        kind, id = split_key(value)
        if kind is Kind.OBJECT and len(objects) < SEED_FACTS:
            objects[id] = score
        elif kind is Kind.RELATIONSHIP and len(relationships) < SEED_FACTS:
            relationships[id] = score
        elif kind is Kind.CHUNK and len(chunks) < SEED_CHUNKS:
            chunks[id] = score
    return objects, relationships, chunks


def passage_leg(
    store: GraphReads,
    plan: Plan,
    first_round: Sequence[tuple[str, float]],
    legs: Legs,
    rows: Rows,
    traces: Traces | None = None,
) -> None:
    """Rank chunks by personalised PageRank from the first round's entities and facts
    (see the module docstring) as the ``graph:passages`` leg."""
    started = time.perf_counter()
    trace = log_of(traces, "graph:passages")
    objects, facts, dense = _first_round(first_round)
    entity_seeds = _entity_seeds(rows, objects, facts, trace)
    graph = graph_for(
        store,
        rows.project,
        hub_chunks=MAX_CHUNKS_PER_ENTITY,
        skip_types=SKIP_TYPES,
        same_key=SAME_KEY,
    )
    seeds = _seeds(graph, entity_seeds, dense)
    if not seeds:  # no seed in the graph (a structured graph: no chunk mentions one)
        legs.add("graph:passages", [], started)
        return
    scores = walk(graph, seeds, damping=DAMPING, steps=STEPS)
    offset = len(graph.entities)
    chunk_scores = scores[offset:]
    top = np.argsort(-chunk_scores, kind="stable")[:MAX_RANKED]
    ranked = [
        (key(Kind.CHUNK, graph.chunks[i]), float(chunk_scores[i]))
        for i in top
        if chunk_scores[i] > 0
    ]
    legs.add("graph:passages", ranked, started)


def _seeds(
    graph: PassageGraph, entity_seeds: dict[str, float], dense: dict[str, float]
) -> dict[int, float]:
    """Restart weights by node: each seed entity at its score divided by the passages
    that mention it (node specificity), and the first round's chunks at
    :data:`PASSAGE_SEED_WEIGHT` of that mass, shared by their fused scores."""
    seeds: dict[int, float] = {}
    for id, weight in entity_seeds.items():
        node = graph.entity_index.get(id)
        if node is not None and graph.strength[node] > 0:
            seeds[node] = weight / max(float(graph.chunk_count[node]), 1.0)
    if not seeds:
        return {}
    mass = sum(seeds.values())
    total = sum(dense.values())
    for id, score in dense.items():
        node = graph.chunk_index.get(id)
        if node is not None and total > 0 and graph.strength[node] > 0:
            seeds[node] = seeds.get(node, 0.0) + PASSAGE_SEED_WEIGHT * mass * score / total
    return seeds


def _entity_seeds(
    rows: Rows, objects: dict[str, float], facts: dict[str, float], trace: Trace | None
) -> dict[str, float]:
    """Seed entities: the top facts' endpoints (and object hits, with
    :data:`OBJECT_SEEDS`), each at the summed score of what reached it."""
    entity_seeds: dict[str, float] = defaultdict(float)
    for id, score in objects.items() if OBJECT_SEEDS else ():
        entity_seeds[id] += score
    for id, rel in rows.relationships(list(facts), trace).items():
        for end in (rel.source_id, rel.target_id):
            entity_seeds[end] += facts[id]
    return entity_seeds


def _run(given: LegInput) -> None:
    passage_leg(given.store, given.plan, given.first_round, given.legs, given.rows, given.traces)


LEGS.register(
    "graph:passages",
    Leg(
        "graph:passages",
        "expand",
        (Kind.CHUNK,),
        selected=lambda plan: plan.graph and plan.request.graph == "paths" and plan.graph_chunks,
        run=_run,
        needs=frozenset({"first_round", "graph"}),
    ),
)
