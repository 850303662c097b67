"""The whole entity–passage graph of a project as arrays, read once per store state.

HippoRAG 2 walks one graph: entity (phrase) nodes, passage nodes, an edge between an
entity and each passage that mentions it, and the relationships between entities.
:class:`PassageGraph` holds that graph as a compressed sparse row (CSR) adjacency in
numpy arrays, so a personalised PageRank over it is a few vector operations per step,
with no store read and no per-node Python object in the loop (:func:`walk`).

The graph is read from the store on first use and kept per (store, project) while the
store's live counts (objects, relationships, chunks, sources, mentions) stay the same:
any write that adds or removes a row changes them, and the graph is read again
(:func:`graph_for`; the counts are checked every :data:`CHECK_SECONDS`). An entity
mentioned by more than ``hub_chunks`` passages (a hub) keeps its passages but passes
no mass between them: the walk would otherwise leak through it to everything.
"""

from __future__ import annotations

import threading
import time
import weakref
from collections.abc import Mapping
from dataclasses import dataclass
from itertools import pairwise

import numpy as np
import numpy.typing as npt

from kgsearch.store.base import GraphReads

__all__ = ["PassageGraph", "build_graph", "graph_for", "walk"]

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True)
class PassageGraph:
    """Entities ``0..E-1`` and chunks ``E..E+C-1`` of one project, as a symmetric CSR.

    Attributes:
        entities: Entity (object) ids by node index.
        chunks: Chunk ids by node index minus ``len(entities)``.
        entity_index: Object id → node index.
        chunk_index: Chunk id → node index.
        rows: The source node of each arc (CSR expanded, for ``np.bincount``).
        cols: The target node of each arc.
        weights: Each arc's weight.
        strength: Each node's summed arc weight (0: no arc).
        chunk_count: Passages that mention each entity (its specificity's divisor).
    """

    entities: list[str]
    chunks: list[str]
    entity_index: dict[str, int]
    chunk_index: dict[str, int]
    rows: IntArray
    cols: IntArray
    weights: FloatArray
    strength: FloatArray
    chunk_count: FloatArray

    @property
    def size(self) -> int:
        """Number of nodes."""
        return len(self.entities) + len(self.chunks)


def build_graph(
    store: GraphReads,
    project: str,
    *,
    hub_chunks: int,
    skip_types: frozenset[str] = frozenset(),
    same_key: bool = False,
) -> PassageGraph:
    """Read a project's entity–chunk mentions and relationships into a graph.

    Args:
        store: The store to read.
        project: The project.
        hub_chunks: Entities mentioned by more passages keep no mention arcs.
        skip_types: Relationship types left out (``co_occurs`` repeats the passages).
        same_key: Link objects whose keys are the same once case, punctuation and a
            leading "the" are set aside (one name the extractor typed twice: a place and
            a location; "The Beatles" and "Beatles").
    """
    live_chunks = {c.id for c in store.iter_rows(project, "chunk")}
    pairs: set[tuple[str, str]] = set()
    for m in store.iter_rows(project, "mention"):
        if m.object_id and m.chunk_id in live_chunks:
            pairs.add((str(m.object_id), str(m.chunk_id)))
    relations: list[tuple[str, str]] = []
    for r in store.iter_rows(project, "relationship"):
        if r.source_id != r.target_id and r.type not in skip_types:
            relations.append((r.source_id, r.target_id))
    if same_key:
        named: dict[str, list[str]] = {}
        for o in store.iter_rows(project, "object"):
            named.setdefault(_plain(o.key), []).append(o.id)
        for group in named.values():
            relations.extend(pairwise(group))
    entity_index: dict[str, int] = {}
    for o, _ in sorted(pairs):
        entity_index.setdefault(o, len(entity_index))
    for s, t in relations:  # an entity named only in relationships still bridges
        entity_index.setdefault(s, len(entity_index))
        entity_index.setdefault(t, len(entity_index))
    chunks = sorted({c for _, c in pairs})
    offset = len(entity_index)
    chunk_index = {c: offset + i for i, c in enumerate(chunks)}
    ent = np.fromiter((entity_index[o] for o, _ in pairs), np.int64, len(pairs))
    chk = np.fromiter((chunk_index[c] for _, c in pairs), np.int64, len(pairs))
    chunk_count = np.bincount(ent, minlength=offset).astype(np.float64)
    keep = chunk_count[ent] <= hub_chunks
    src = np.fromiter((entity_index[s] for s, _ in relations), np.int64, len(relations))
    dst = np.fromiter((entity_index[t] for _, t in relations), np.int64, len(relations))
    a = np.concatenate([ent[keep], src])
    b = np.concatenate([chk[keep], dst])
    n = offset + len(chunks)
    rows = np.concatenate([a, b])
    cols = np.concatenate([b, a])
    weights = np.ones(len(rows))
    return PassageGraph(
        entities=list(entity_index),
        chunks=chunks,
        entity_index=entity_index,
        chunk_index=chunk_index,
        rows=rows,
        cols=cols,
        weights=weights,
        strength=np.bincount(rows, weights=weights, minlength=n).astype(np.float64),
        chunk_count=chunk_count,
    )


CHECK_SECONDS = 5.0
"""How long a graph is used before the store's counts are read again (counting every
live row costs a scan: 100 ms on a store of 170,000 rows, too much per search)."""


def _plain(name: str) -> str:
    """A name without case, punctuation, spacing or a leading "the"."""
    words = "".join(c if c.isalnum() else " " for c in name.casefold()).split()
    if len(words) > 1 and words[0] == "the":
        words = words[1:]
    return " ".join(words)


_lock = threading.Lock()
_Held = tuple[tuple[object, ...], float, PassageGraph]
_cache: weakref.WeakKeyDictionary[object, dict[str, _Held]] = weakref.WeakKeyDictionary()


def graph_for(
    store: GraphReads,
    project: str,
    *,
    hub_chunks: int,
    skip_types: frozenset[str] = frozenset(),
    same_key: bool = False,
    check_seconds: float = CHECK_SECONDS,
) -> PassageGraph:
    """The project's graph (arguments as :func:`build_graph`), held per store and
    project: after ``check_seconds`` the store's live counts are read again, and the
    graph with them when they changed (so a write shows in the walk within
    ``check_seconds``; the search's other legs see it at once)."""
    options = (hub_chunks, tuple(sorted(skip_types)), same_key)
    now = time.monotonic()
    with _lock:
        held = _cache.get(store, {}).get(project)
    if held is not None and held[0][:3] == options and now - held[1] < check_seconds:
        return held[2]
    stamp = (*options, *sorted(store.counts(project).items()))
    if held is not None and held[0] == stamp:
        graph = held[2]
    else:
        graph = build_graph(
            store, project, hub_chunks=hub_chunks, skip_types=skip_types, same_key=same_key
        )
    with _lock:
        _cache.setdefault(store, {})[project] = (stamp, now, graph)
    return graph


def walk(
    graph: PassageGraph,
    seeds: Mapping[int, float],
    *,
    damping: float,
    steps: int,
) -> FloatArray:
    """Personalised PageRank over the graph by ``steps`` power iterations.

    The walker follows an arc with probability ``damping`` (in proportion to its
    weight) or restarts at a seed; a node with no arc sends its mass to the seeds.
    With HippoRAG's damping of 0.5 the mass still moving after ``steps`` steps is
    ``0.5**steps`` of the whole, so a dozen steps match the converged ranking.

    Args:
        graph: The graph.
        seeds: Node index → restart weight (non-negative, not all zero).
        damping: Probability of following an arc, in [0, 1).
        steps: Power iterations.

    Returns:
        Each node's score (summing to 1), by node index.
    """
    n = graph.size
    restart = np.zeros(n)
    for node, weight in seeds.items():
        restart[node] += weight
    restart /= restart.sum()
    has_arcs = graph.strength > 0
    inverse = np.divide(1.0, graph.strength, out=np.zeros(n), where=has_arcs)
    arc = graph.weights
    x = restart.copy()
    for _ in range(steps):
        spread = x * inverse
        flow = np.bincount(graph.cols, weights=arc * spread[graph.rows], minlength=n)
        lost = x[~has_arcs].sum()
        x = damping * (flow + lost * restart) + (1.0 - damping) * restart
    return x
