"""The whole entity–passage graph of a project as arrays, read once per store state.

A passage that answers the second hop of a question ("the county of the city where X
was born") rarely shares words with the question: it is reached through an entity it
shares with a passage that does (the city, named in X's passage). :class:`PassageGraph`
holds which entities each chunk mentions and which chunks mention each entity, as two
compressed sparse row (CSR) tables in numpy arrays, so :func:`bridges` finds the
passages one shared entity away from a few others with no store read.

The graph is read from the store on first use and kept per (store, project) while the
store's live counts (objects, relationships, chunks, sources, mentions) stay the same:
any write that adds or removes a row changes them, and the graph is read again
(:func:`graph_for`; the counts are checked every :data:`CHECK_SECONDS`, in a background
thread while the held graph answers: counting costs a scan). An entity
mentioned by more than ``hub_chunks`` passages (a hub: a country, a language) keeps no
links: two passages that both name it are not thereby about one thing.
"""

from __future__ import annotations

import logging
import threading
import time
import weakref
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from kgsearch.search.path_graph import csr
from kgsearch.store.base import GraphReads

__all__ = [
    "BACKGROUND",
    "CHECK_SECONDS",
    "PassageGraph",
    "bridges",
    "build_graph",
    "forget",
    "graph_for",
]

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True)
class PassageGraph:
    """Entities ``0..E-1`` and chunks ``0..C-1`` of one project, linked by mentions.

    Attributes:
        entities: Entity (object) ids by index.
        chunks: Chunk ids by index.
        chunk_index: Chunk id → index.
        chunk_count: Passages that mention each entity, hubs included.
        entity_ptr: Offsets into ``entity_of``: chunk ``c``'s entities (hubs left out)
            are ``entity_of[entity_ptr[c]:entity_ptr[c + 1]]``.
        entity_of: Entity indices, grouped by chunk.
        chunk_ptr: Offsets into ``chunk_of``, by entity.
        chunk_of: Chunk indices, grouped by entity (a hub's group is empty).
    """

    entities: list[str]
    chunks: list[str]
    chunk_index: dict[str, int]
    chunk_count: FloatArray
    entity_ptr: IntArray
    entity_of: IntArray
    chunk_ptr: IntArray
    chunk_of: IntArray

    def entities_of(self, chunk: int) -> IntArray:
        """The non-hub entities a chunk mentions."""
        return self.entity_of[self.entity_ptr[chunk] : self.entity_ptr[chunk + 1]]

    def chunks_of(self, entity: int) -> IntArray:
        """The chunks that mention an entity (none for a hub)."""
        return self.chunk_of[self.chunk_ptr[entity] : self.chunk_ptr[entity + 1]]


def build_graph(store: GraphReads, project: str, *, hub_chunks: int) -> PassageGraph:
    """Read a project's entity–chunk mentions into a graph.

    Args:
        store: The store to read.
        project: The project.
        hub_chunks: Entities mentioned by more passages keep no links.
    """
    links = store.mention_pairs(project)
    objects = [o for o, _ in links]
    chunk_ids = [c for _, c in links]
    # entities and chunks by sorted id; each (entity, chunk) pair once, in that order
    entity_ids, ent = np.unique(np.asarray(objects, dtype=str), return_inverse=True)
    chunk_names, chk = np.unique(np.asarray(chunk_ids, dtype=str), return_inverse=True)
    pairs = np.unique(ent.astype(np.int64) * max(len(chunk_names), 1) + chk)
    ent, chk = np.divmod(pairs, max(len(chunk_names), 1))
    chunks = chunk_names.tolist()
    chunk_index = {c: i for i, c in enumerate(chunks)}
    chunk_count = np.bincount(ent, minlength=len(entity_ids)).astype(np.float64)
    keep = chunk_count[ent] <= hub_chunks
    entity_ptr, entity_of = csr(chk[keep], ent[keep], len(chunks))
    chunk_ptr, chunk_of = csr(ent[keep], chk[keep], len(entity_ids))
    return PassageGraph(
        entities=entity_ids.tolist(),
        chunks=chunks,
        chunk_index=chunk_index,
        chunk_count=chunk_count,
        entity_ptr=entity_ptr,
        entity_of=entity_of,
        chunk_ptr=chunk_ptr,
        chunk_of=chunk_of,
    )


def bridges(graph: PassageGraph, hops: Mapping[str, float]) -> dict[str, float]:
    """The chunks one shared (non-hub) entity away from the given ones.

    Args:
        graph: The graph.
        hops: Chunk id → weight: the passages to bridge from.

    Returns:
        Chunk id → the largest weight of a given chunk it shares an entity with (a
        given chunk counts only through the others).
    """
    linked: dict[int, float] = {}
    for chunk, weight in hops.items():
        start = graph.chunk_index.get(chunk)
        if start is None:
            continue
        ents = graph.entities_of(start)
        if not len(ents):
            continue
        near = np.unique(np.concatenate([graph.chunks_of(int(e)) for e in ents]))
        for other in near.tolist():
            if other != start and weight > linked.get(other, float("-inf")):
                linked[other] = weight
    return {graph.chunks[c]: w for c, w in linked.items()}


CHECK_SECONDS = 5.0
"""How long a graph is used before the store's counts are read again (counting every
live row costs a scan: 75-100 ms on 2Wiki's store of 130,000 rows, too much per
search)."""

BACKGROUND = True
"""Whether a due check runs in a background thread by default (the held graph answers
meanwhile), rather than in the search that finds it due."""

_log = logging.getLogger(__name__)


@dataclass
class _Held:
    """One project's graph as held: its hub cap, the counts it was read at, when they
    were last compared with the store's, and whether a check is under way."""

    hub_chunks: int
    stamp: tuple[tuple[str, int], ...]
    checked: float
    graph: PassageGraph
    checking: bool = False


_lock = threading.Lock()
_cache: weakref.WeakKeyDictionary[object, dict[str, _Held]] = weakref.WeakKeyDictionary()
_versions: weakref.WeakKeyDictionary[object, dict[str, int]] = weakref.WeakKeyDictionary()


def graph_for(
    store: GraphReads,
    project: str,
    *,
    hub_chunks: int,
    check_seconds: float = CHECK_SECONDS,
    background: bool | None = None,
) -> PassageGraph:
    """The project's graph (arguments as :func:`build_graph`), held per store and
    project. Once ``check_seconds`` have passed the store's live counts are read again,
    and the graph with them when they changed (so another process's write shows in the
    bridges within ``check_seconds`` and a check's time; this process's writes at once,
    :func:`forget`): in a background thread while the held graph answers, or here and
    now without ``background`` (default :data:`BACKGROUND`) or inside a write
    transaction. With no graph held (the first search, or after a write of this
    process) it is read here and now."""
    now = time.monotonic()
    with _lock:
        held = _cache.get(store, {}).get(project)
        version = _versions.get(store, {}).get(project, 0)
        if held is not None and held.hub_chunks != hub_chunks:
            held = None
        if held is not None:
            if held.checking or now - held.checked < check_seconds:
                return held.graph
            # inside a write transaction the check runs here, on its connection (an
            # in-memory store has only that one)
            wanted = BACKGROUND if background is None else background
            if wanted and not getattr(store, "in_transaction", False):
                held.checking = True
                threading.Thread(
                    target=_check,
                    args=(store, project, hub_chunks, held, version),
                    name="kgsearch-passage-graph",
                    daemon=True,
                ).start()
                return held.graph
    return _check(store, project, hub_chunks, held, version)


def _check(
    store: GraphReads,
    project: str,
    hub_chunks: int,
    held: _Held | None,
    version: int,
) -> PassageGraph:
    """The graph for the store's counts now: the held one when they are the same, else
    read again; held unless a write of this process committed meanwhile."""
    try:
        stamp = tuple(sorted(store.counts(project).items()))
        if held is not None and held.stamp == stamp:
            graph = held.graph
        else:
            graph = build_graph(store, project, hub_chunks=hub_chunks)
    except Exception as exc:
        if held is None:
            raise  # the search's own read: its caller hears of it
        # a background check has no caller to raise to (a store closed under it
        # included): the held graph answers until the next check
        _log.warning("passage graph not checked against the store: %s", exc)
        with _lock:
            held.checking, held.checked = False, time.monotonic()
        return held.graph
    with _lock:
        if _versions.get(store, {}).get(project, 0) == version:
            _cache.setdefault(store, {})[project] = _Held(
                hub_chunks, stamp, time.monotonic(), graph
            )
        elif held is not None:
            held.checking = False
    return graph


def forget(store: object, project: str) -> None:
    """This process wrote to ``project``: the next search reads its graph again, so a
    write shows in the bridges at once (another process's within ``check_seconds``)."""
    with _lock:
        _cache.get(store, {}).pop(project, None)
        versions = _versions.setdefault(store, {})
        versions[project] = versions.get(project, 0) + 1
