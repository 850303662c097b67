"""Multi-hop passage retrieval over a text graph, in the manner of HippoRAG 2.

A question such as "Who founded the company that published X?" needs a passage that
shares no words with it: the one about the company, reached through X's passage. The
``graph:passages`` leg finds it by personalised PageRank over the bipartite graph of
entities and the chunks that mention them (plus the relationships between entities):

1. **Seeds.** The endpoints of the first round's best few relationships (facts),
   each weighted by its fused score and divided by the number of chunks that mention it
   (node specificity: a name found everywhere says little).
   The first round's chunks are seeds too, with a small weight
   (:data:`PASSAGE_SEED_WEIGHT` of the entity mass, as HippoRAG 2 weights passages).
2. **Subgraph.** Bounded, from the seeds outwards: the chunks that mention the seed
   entities, the entities those chunks mention, the chunks that mention those (bridge)
   entities, and the relationships among all these entities. Entities mentioned by
   more than :data:`MAX_CHUNKS_PER_ENTITY` chunks are not expanded through (hubs), and
   every step is capped, so the work per question is bounded whatever the graph.
3. **Walk.** PageRank with restart to the seeds (damping :data:`DAMPING`, HippoRAG's
   0.5); chunks are ranked by the mass they end with.

Four batched store reads per question (mentions by object, by chunk, by object, typed
edges), no model call.
"""

from __future__ import annotations

import time
from collections import Counter, defaultdict
from collections.abc import Sequence

from kgsearch.model import Kind, Mention
from kgsearch.search.parts import LEGS, Leg, LegInput, Legs, key, split_key
from kgsearch.search.plan import Plan
from kgsearch.search.ppr import personalized_pagerank
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

MAX_BRIDGES = 300
"""Entities reached through the seeds' chunks that are expanded (best first)."""

EDGES_PER_ENTITY = 20
"""Relationships read out of and into each entity of the subgraph."""

MAX_RANKED = 500

OBJECT_SEEDS = False
"""Whether object hits seed the walk too (a name match alone seeds worse than a fact:
on MuSiQue with them the leg's recall@5 fell from 0.76 to 0.69)."""

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
    walk = _subgraph(store, rows.project, entity_seeds, trace) if entity_seeds else None
    if walk is None:  # no seed, or a structured graph (no chunk mentions one): nothing
        legs.add("graph:passages", [], started)
        return
    seeds, edges = walk
    _seed_chunks(seeds, dense)
    scores = personalized_pagerank(edges, seeds, alpha=DAMPING)
    ranked = sorted(
        ((node[2:], s) for node, s in scores.items() if node.startswith("c:")),
        key=lambda x: (-x[1], x[0]),
    )[:MAX_RANKED]
    legs.add("graph:passages", [(key(Kind.CHUNK, c), s) for c, s in ranked], started)


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


def _links(
    store: GraphReads,
    project: str,
    trace: Trace | None,
    *,
    object_ids: Sequence[str] = (),
    chunk_ids: Sequence[str] = (),
) -> list[Mention]:
    """Entity–chunk mentions of the given objects or chunks (no call for none)."""
    if not (object_ids or chunk_ids):
        return []
    found = store.mentions(
        project, object_ids=list(object_ids), chunk_ids=list(chunk_ids), trace=trace
    )
    return [m for m in found if m.object_id and m.chunk_id]


def _subgraph(
    store: GraphReads, project: str, entity_seeds: dict[str, float], trace: Trace | None
) -> tuple[dict[str, float], list[tuple[str, str, float]]] | None:
    """The walk's seeds (entities, by specificity) and edges: seeds → their chunks →
    the bridge entities those chunks mention → their chunks, and the relationships
    among those entities; None when no seed entity is mentioned by any chunk."""
    seed_links = _links(store, project, trace, object_ids=list(entity_seeds))
    if not seed_links:
        return None
    chunks_of: dict[str, set[str]] = defaultdict(set)
    for m in seed_links:
        chunks_of[str(m.object_id)].add(str(m.chunk_id))
    seeds = {f"o:{i}": w / max(len(chunks_of.get(i, ())), 1) for i, w in entity_seeds.items()}
    first_chunks = {
        c for i, cs in chunks_of.items() if len(cs) <= MAX_CHUNKS_PER_ENTITY for c in cs
    }
    bridge_links = _links(store, project, trace, chunk_ids=sorted(first_chunks))
    reach: Counter[str] = Counter(
        str(m.object_id) for m in bridge_links if m.object_id not in entity_seeds
    )
    bridges = [i for i, _ in reach.most_common(MAX_BRIDGES)]
    far_links = _links(store, project, trace, object_ids=bridges)
    for m in far_links:
        chunks_of[str(m.object_id)].add(str(m.chunk_id))
    entities = set(entity_seeds) | set(bridges)
    edges = [
        (f"o:{m.object_id}", f"c:{m.chunk_id}", 1.0)
        for m in [*seed_links, *bridge_links, *far_links]
        if str(m.object_id) in entities
        and len(chunks_of.get(str(m.object_id), ())) <= MAX_CHUNKS_PER_ENTITY
    ]
    for _rid, source, target, _type in store.typed_edges(
        project, sorted(entities), limit=EDGES_PER_ENTITY, trace=trace
    ):
        if source in entities and target in entities:
            edges.append((f"o:{source}", f"o:{target}", 1.0))
    return seeds, edges


def _seed_chunks(seeds: dict[str, float], dense: dict[str, float]) -> None:
    """Add the first round's chunks to ``seeds``: :data:`PASSAGE_SEED_WEIGHT` of the
    entity mass, shared by their fused scores."""
    if not dense:
        return
    mass = sum(seeds.values())
    total = sum(dense.values())
    for id, score in dense.items():
        seeds[f"c:{id}"] = seeds.get(f"c:{id}", 0.0) + PASSAGE_SEED_WEIGHT * mass * score / total


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
