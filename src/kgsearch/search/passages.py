"""Multi-hop passage retrieval over a text graph: passages bridged by shared entities.

A question such as "In what county is the city where Harris Fawell was born?" needs a
passage that shares few words with it: the one about the city (West Chicago, in DuPage
County), reached through Fawell's passage, which names the city. The
``graph:passages`` leg ranks chunks by their own match to the question plus the best
match of a passage they share an entity with:

1. **Own score.** Each candidate chunk's cosine similarity to the question plus
   :data:`LEXICAL_WEIGHT` times its BM25 score over the best BM25 score (the chunks'
   own vector and BM25 legs; a linked chunk neither leg found has its vector read).
2. **First hop.** The :data:`HOPS` chunks with the best own score.
3. **Bridges.** Every chunk that shares a specific entity (one mentioned by at most
   :data:`BRIDGE_CHUNKS` passages; :mod:`kgsearch.search.passage_graph`) with a
   first-hop chunk gains :data:`BRIDGE_WEIGHT` times that chunk's own score (the best
   one, when several link to it); the first-hop chunks gain as much of their own, so
   a bridged passage ranks beside the passage it was reached from, not above it.

Chosen by measurement on MuSiQue and HotpotQA (spaCy graphs, docs/benchmarks.md
"passages"): HippoRAG 2's personalised PageRank from the first round's entities and
facts, over the same graph, gained 2 points of recall@5 over dense on MuSiQue; the
bridges gain 8. The PageRank's score added to the bridges' gained nothing.

One store read per question at most (the vectors of linked chunks the vector leg did
not return), no model call.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence

import numpy as np

from kgsearch.embed.base import Vector
from kgsearch.model import Kind
from kgsearch.search.parts import LEGS, Leg, LegInput, Legs, SearchReads, key, split_key
from kgsearch.search.passage_graph import bridges, graph_for
from kgsearch.search.statements import Traces, log_of

__all__ = ["BRIDGE_CHUNKS", "BRIDGE_WEIGHT", "HOPS", "LEXICAL_WEIGHT", "passage_leg"]

HOPS = 3
"""Chunks, best own score first, that bridges start from."""

BRIDGE_CHUNKS = 20
"""An entity named by more passages links none of them (a hub: a country, a year)."""

BRIDGE_WEIGHT = 0.5
"""Share of a first-hop chunk's own score a chunk linked to it gains."""

LEXICAL_WEIGHT = 0.3
"""Weight of the BM25 score (over the best one) beside the cosine in a chunk's own
score (0.2–0.4 measured alike; without it MuSiQue and HotpotQA lose 1–4 points)."""

MAX_RANKED = 500


def own_scores(
    vector: Sequence[tuple[str, float]], lexical: Sequence[tuple[str, float]]
) -> tuple[dict[str, float], dict[str, float]]:
    """Chunk id → cosine (from the vector leg) and → scaled BM25 (over the best)."""
    cosine = {split_key(k)[1]: s for k, s in vector}
    best = max((s for _, s in lexical[:1]), default=0.0)
    words = {split_key(k)[1]: s / best for k, s in lexical} if best > 0 else {}
    return cosine, words


def passage_leg(
    store: SearchReads,
    project: str,
    query: Vector | None,
    legs: Legs,
    traces: Traces | None = None,
) -> None:
    """Rank chunks by their own score and the passages they bridge to (see the module
    docstring) as the ``graph:passages`` leg."""
    started = time.perf_counter()
    cosine, words = own_scores(
        legs.lists.get("chunks:vector", []), legs.lists.get("chunks:bm25", [])
    )
    own = {c: cosine.get(c, 0.0) + LEXICAL_WEIGHT * words.get(c, 0.0) for c in {*cosine, *words}}
    first = dict(sorted(own.items(), key=lambda x: (-x[1], x[0]))[:HOPS])
    graph = graph_for(store, project, hub_chunks=BRIDGE_CHUNKS)
    linked = bridges(graph, first)
    unseen = [c for c in linked if c not in cosine]
    if unseen and query is not None:
        cosine.update(_cosines(store, project, query, unseen, traces))
    scores = {c: cosine.get(c, 0.0) + LEXICAL_WEIGHT * words.get(c, 0.0) for c in {*own, *linked}}
    for c, weight in linked.items():
        scores[c] += BRIDGE_WEIGHT * weight
    for c, weight in first.items():
        scores[c] = max(scores[c], (1.0 + BRIDGE_WEIGHT) * weight)
    ranked = sorted(scores.items(), key=lambda x: (-x[1], x[0]))[:MAX_RANKED]
    legs.add("graph:passages", [(key(Kind.CHUNK, c), s) for c, s in ranked], started)


def _cosines(
    store: SearchReads, project: str, query: Vector, ids: Sequence[str], traces: Traces | None
) -> Mapping[str, float]:
    """Cosine of each chunk's stored vector to the query (chunks not embedded: none)."""
    found = store.vectors(project, Kind.CHUNK, ids, trace=log_of(traces, "graph:passages"))
    if not found:
        return {}
    q = np.asarray(query, dtype=np.float32)
    q = q / (float(np.linalg.norm(q)) or 1.0)
    out = {}
    for chunk, v in found.items():
        norm = float(np.linalg.norm(v))
        out[chunk] = float(v @ q) / norm if norm else 0.0
    return out


def _run(given: LegInput) -> None:
    passage_leg(
        given.store,
        given.project,
        given.vectors.get(Kind.CHUNK),
        given.legs,
        given.traces,
    )


LEGS.register(
    "graph:passages",
    Leg(
        "graph:passages",
        "expand",
        (Kind.CHUNK,),
        selected=lambda plan: plan.graph and plan.request.graph == "paths" and plan.graph_chunks,
        run=_run,
        needs=frozenset({"query_vector", "graph", "index"}),
    ),
)
