"""The typed edges a relation-path walk follows, as arrays: held in memory for the
whole project, or read from the store hop by hop.

A hop of the walk (:mod:`kgsearch.search.paths`) asks for the capped edges of its
frontier: at most ``limit`` edges out of and ``limit`` edges into each object, oldest
first (:meth:`~kgsearch.store.base.GraphReads.typed_edges`' rule). Two sources answer
it, with one interface (:class:`Edges`), node by node as integers:

* :class:`TypedGraph`: the project's whole typed graph as compressed sparse rows (out
  and in, each in insertion order), read once (:meth:`GraphReads.edge_table
  <kgsearch.store.base.GraphReads.edge_table>`) and held per store and project. A hop
  is a few vector operations, no statement and no per-edge Python object. It is built
  in a background thread after the first walk on a store (reading MetaQA's 129k
  relationships takes seconds, which a one-off command should not wait for) and read
  again when this process writes to the project (the engine calls :func:`forget`),
  when the store's live counts change (another process's writes; checked every
  :data:`CHECK_SECONDS`: counting every row costs a scan) or when an edge's validity
  bound passes; a project over :data:`MAX_EDGES` relationships is not held.
* :class:`StoreEdges`: one ``typed_edges`` read a hop, for a walk before the graph is
  built, inside a write transaction (only it sees its own writes) and after a write
  until the graph is read again.
"""

from __future__ import annotations

import logging
import threading
import time
import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Protocol

import numpy as np
import numpy.typing as npt

from kgsearch.store.base import GraphReads, Trace

__all__ = [
    "BACKGROUND",
    "CHECK_SECONDS",
    "MAX_EDGES",
    "Edges",
    "Hop",
    "StoreEdges",
    "TypedGraph",
    "build_typed_graph",
    "csr",
    "edges_for",
    "forget",
]

_log = logging.getLogger(__name__)

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]

CHECK_SECONDS = 5.0
"""How long a graph is used before the store's live counts are read again."""

MAX_EDGES = 2_000_000
"""A project with more live relationships is not held (walks read the store): about
200 bytes an edge held (MetaQA's 129k: 25 MB), so a held graph stays under 400 MB."""


@dataclass(frozen=True)
class Hop:
    """The capped edges of a frontier, one entry per (frontier node, edge), as parallel
    arrays in the order the store lists them (per node: out before in, oldest first).

    Attributes:
        at: Position in the nodes asked of the node the edge leaves from.
        other: The node at the edge's other end.
        step: The step's code (``Edges.step``: relationship type and direction).
        edge: The edge's code (``Edges.edge_ids``).
        split: What a node's mass is divided by on the edge: the number of the node's
            edges of that step, twice that when they fill the cap (a hub cut at the
            cap counts as bigger).
    """

    at: IntArray
    other: IntArray
    step: IntArray
    edge: IntArray
    split: FloatArray


class Edges(Protocol):
    """Where a walk's hops read their edges (node and edge codes are its own)."""

    def nodes(self, ids: Sequence[str]) -> IntArray:
        """The codes of object ids (-1: an id with no edges here)."""
        ...

    def ids(self, nodes: IntArray) -> list[str]:
        """The object ids of node codes."""
        ...

    def order(self, nodes: IntArray) -> npt.NDArray[np.generic]:
        """A sort key per node that orders nodes as their ids sort."""
        ...

    def hop(self, nodes: IntArray, limit: int) -> Hop:
        """The capped edges of distinct ``nodes`` (at most ``limit`` each way)."""
        ...

    def step(self, code: int) -> tuple[str, bool]:
        """A step code's (relationship type, walked from source to target)."""
        ...

    def edge_ids(self, edges: IntArray) -> list[str]:
        """The relationship ids of edge codes."""
        ...

    def types(self, nodes: IntArray) -> list[str | None]:
        """Each node's object type (None: not a live object)."""
        ...


def _hop(
    at: IntArray,
    other: IntArray,
    type_code: IntArray,
    forward: npt.NDArray[np.bool_],
    edge: IntArray,
    limit: int,
    seq: IntArray | None = None,
) -> Hop:
    """A :class:`Hop` from unordered entries: ordered by node, out before in, then
    ``seq`` (default the edge code: insertion order); each entry's split from the size
    of its node's group of that step."""
    order = np.lexsort((edge if seq is None else seq, ~forward, at))
    at, other, edge = at[order], other[order], edge[order]
    step = type_code[order] * 2 + np.where(forward[order], 0, 1)
    if not len(at):
        return Hop(at, other, step, edge, np.zeros(0))
    group = at * (int(step.max()) + 1) + step
    _, inverse, counts = np.unique(group, return_inverse=True, return_counts=True)
    size = counts[inverse].astype(np.float64)
    return Hop(at, other, step, edge, size * np.where(size >= limit, 2.0, 1.0))


@dataclass(frozen=True)
class TypedGraph:
    """A project's typed graph as CSR arrays (module docstring).

    Attributes:
        node_ids: Object id by node code (every live object, then ends of edges to
            objects no longer live).
        index: Object id → node code.
        rank: Each node's position in the ids' sorted order.
        node_types: Object type code per node (-1: not a live object).
        type_names: Object type names by code.
        rel_ids: Relationship id by edge code (insertion order).
        steps: Relationship type names by type code (step code // 2).
        out_start: Where each node's out-edges start in ``out_edge`` (length nodes + 1).
        out_edge: Edge codes, grouped by source node, oldest first.
        in_start: Where each node's in-edges start in ``in_edge``.
        in_edge: Edge codes, grouped by target node, oldest first.
        source: Source node per edge code.
        target: Target node per edge code.
        edge_type: Relationship type code per edge code.
        until: When an edge's validity bound passes (the graph must be read again).
    """

    node_ids: list[str]
    index: dict[str, int]
    rank: IntArray
    node_types: IntArray
    type_names: list[str]
    rel_ids: list[str]
    steps: list[str]
    out_start: IntArray
    out_edge: IntArray
    in_start: IntArray
    in_edge: IntArray
    source: IntArray
    target: IntArray
    edge_type: IntArray
    until: float = float("inf")

    def nodes(self, ids: Sequence[str]) -> IntArray:
        # an id the graph does not hold (an object added since) has no edges in it
        return np.asarray([self.index.get(i, -1) for i in ids], dtype=np.int64)

    def ids(self, nodes: IntArray) -> list[str]:
        names = self.node_ids
        return [names[n] for n in nodes.tolist()]

    def order(self, nodes: IntArray) -> IntArray:
        return self.rank[nodes]

    def hop(self, nodes: IntArray, limit: int) -> Hop:
        _, out_edges = _slices(self.out_start, self.out_edge, nodes, limit)
        _, in_edges = _slices(self.in_start, self.in_edge, nodes, limit)
        # the capped edges of the whole frontier, each once, in insertion order; each
        # serves every frontier node it touches (``typed_edges``' rows, as the store
        # reads walk them)
        edges = np.unique(np.concatenate([out_edges, in_edges]))
        where = np.full(len(self.node_ids), -1, dtype=np.int64)
        where[nodes] = np.arange(len(nodes), dtype=np.int64)
        source, target = self.source[edges], self.target[edges]
        out_at, in_at = where[source], where[target]
        out, back = out_at >= 0, (in_at >= 0) & (source != target)
        return _hop(
            np.concatenate([out_at[out], in_at[back]]),
            np.concatenate([target[out], source[back]]),
            np.concatenate([self.edge_type[edges[out]], self.edge_type[edges[back]]]),
            np.concatenate([np.ones(int(out.sum()), bool), np.zeros(int(back.sum()), bool)]),
            np.concatenate([edges[out], edges[back]]),
            limit,
        )

    def step(self, code: int) -> tuple[str, bool]:
        return self.steps[code // 2], code % 2 == 0

    def edge_ids(self, edges: IntArray) -> list[str]:
        names = self.rel_ids
        return [names[e] for e in edges.tolist()]

    def types(self, nodes: IntArray) -> list[str | None]:
        names = self.type_names
        return [names[t] if t >= 0 else None for t in self.node_types[nodes].tolist()]


def _slices(
    start: IntArray, members: IntArray, nodes: IntArray, limit: int
) -> tuple[IntArray, IntArray]:
    """The first ``limit`` members of each node's CSR row: (position of the node in
    ``nodes``, member), row after row."""
    first = start[nodes]
    counts = np.minimum(start[nodes + 1] - first, limit)
    total = int(counts.sum())
    at = np.repeat(np.arange(len(nodes), dtype=np.int64), counts)
    offsets = np.arange(total, dtype=np.int64) - np.repeat(np.cumsum(counts) - counts, counts)
    return at, members[np.repeat(first, counts) + offsets]


def build_typed_graph(store: GraphReads, project: str, now: datetime | None = None) -> TypedGraph:
    """Read a project's typed graph (edges valid at ``now``, default the present)."""
    table = store.edge_table(project)
    moment = now or datetime.now(UTC)
    until = float("inf")
    edges = []
    for e in table.edges:
        bounds = [b for b in (e.valid_from, e.valid_to) if b is not None]
        for bound in bounds:
            if bound > moment:
                until = min(until, bound.timestamp())
        if (e.valid_from is None or e.valid_from <= moment) and (
            e.valid_to is None or e.valid_to > moment
        ):
            edges.append(e)
    index: dict[str, int] = {}
    type_codes: dict[str, int] = {}
    object_type: list[int] = []
    for id, type_ in table.object_types.items():
        index[id] = len(index)
        object_type.append(type_codes.setdefault(type_, len(type_codes)))
    steps: dict[str, int] = {}
    for e in edges:  # ends no longer live keep their edges (``typed_edges`` does)
        for end in (e.source_id, e.target_id):
            if end not in index:
                index[end] = len(index)
                object_type.append(-1)
    count = len(edges)
    source = np.fromiter((index[e.source_id] for e in edges), np.int64, count)
    target = np.fromiter((index[e.target_id] for e in edges), np.int64, count)
    edge_type = np.fromiter((steps.setdefault(e.type, len(steps)) for e in edges), np.int64, count)
    n = len(index)
    out_start, out_edge = _csr(source, n)
    in_start, in_edge = _csr(target, n)
    ids = list(index)
    rank = np.empty(n, dtype=np.int64)
    rank[np.argsort(np.asarray(ids, dtype=object), kind="stable")] = np.arange(n)
    return TypedGraph(
        node_ids=ids,
        index=index,
        rank=rank,
        node_types=np.asarray(object_type, dtype=np.int64),
        type_names=list(type_codes),
        rel_ids=[e.id for e in edges],
        steps=list(steps),
        out_start=out_start,
        out_edge=out_edge,
        in_start=in_start,
        in_edge=in_edge,
        source=source,
        target=target,
        edge_type=edge_type,
        until=until,
    )


def csr(keys: IntArray, values: IntArray, size: int) -> tuple[IntArray, IntArray]:
    """Compressed sparse rows: the offsets of each key ``0..size-1`` and the values
    grouped by key, each group in ascending order (shared with
    :mod:`~kgsearch.search.passage_graph`)."""
    order = np.lexsort((values, keys))
    start = np.zeros(size + 1, dtype=np.int64)
    np.cumsum(np.bincount(keys, minlength=size), out=start[1:])
    return start, values[order].astype(np.int64)


def _csr(node: IntArray, n: int) -> tuple[IntArray, IntArray]:
    """Row starts and members of the edges grouped by ``node``, each group in edge order."""
    return csr(node, np.arange(len(node), dtype=np.int64), n)


@dataclass
class StoreEdges:
    """:class:`Edges` read from the store, one ``typed_edges`` statement a hop (node
    and edge codes are given out as ids are met)."""

    store: GraphReads
    project: str
    trace: Trace | None = None
    _index: dict[str, int] = field(default_factory=dict)
    _ids: list[str] = field(default_factory=list)
    _steps: dict[tuple[str, bool], int] = field(default_factory=dict)
    _step_list: list[tuple[str, bool]] = field(default_factory=list)
    _edges: dict[str, int] = field(default_factory=dict)
    _edge_list: list[str] = field(default_factory=list)

    def _code(self, id: str) -> int:
        code = self._index.get(id)
        if code is None:
            code = self._index[id] = len(self._ids)
            self._ids.append(id)
        return code

    def nodes(self, ids: Sequence[str]) -> IntArray:
        return np.asarray([self._code(i) for i in ids], dtype=np.int64)

    def ids(self, nodes: IntArray) -> list[str]:
        return [self._ids[n] for n in nodes.tolist()]

    def order(self, nodes: IntArray) -> npt.NDArray[np.generic]:
        return np.asarray(self.ids(nodes), dtype=object)

    def hop(self, nodes: IntArray, limit: int) -> Hop:
        ids = self.ids(nodes)
        where = {id: k for k, id in enumerate(ids)}
        rows = self.store.typed_edges(self.project, sorted(ids), limit=limit, trace=self.trace)
        at: list[int] = []
        other: list[int] = []
        type_code: list[int] = []
        forward: list[bool] = []
        edge: list[int] = []
        seq: list[int] = []
        for row, (rid, source, target, type_) in enumerate(rows):
            code = self._edges.setdefault(rid, len(self._edge_list))
            if code == len(self._edge_list):
                self._edge_list.append(rid)
            for start, end, fwd in ((source, target, True), (target, source, False)):
                k = where.get(start)
                if k is None or (not fwd and source == target):
                    continue
                at.append(k)
                other.append(self._code(end))
                type_code.append(self._type(type_))
                forward.append(fwd)
                edge.append(code)
                seq.append(row)
        return _hop(
            np.asarray(at, dtype=np.int64),
            np.asarray(other, dtype=np.int64),
            np.asarray(type_code, dtype=np.int64),
            np.asarray(forward, dtype=bool),
            np.asarray(edge, dtype=np.int64),
            limit,
            np.asarray(seq, dtype=np.int64),  # the store's order
        )

    def _type(self, name: str) -> int:
        code = self._steps.get((name, True))
        if code is None:
            code = self._steps[(name, True)] = len(self._step_list)
            self._step_list.append((name, True))
        return code

    def step(self, code: int) -> tuple[str, bool]:
        return self._step_list[code // 2][0], code % 2 == 0

    def edge_ids(self, edges: IntArray) -> list[str]:
        return [self._edge_list[e] for e in edges.tolist()]

    def types(self, nodes: IntArray) -> list[str | None]:
        ids = self.ids(nodes)
        found = self.store.endpoints(self.project, ids)
        return [found[i].type if i in found else None for i in ids]


@dataclass
class _Held:
    """One project's graph as held: its stamp, when checked, and any build under way."""

    graph: TypedGraph | None = None
    stamp: tuple[tuple[str, int], ...] = ()
    checked: float = float("-inf")
    building: bool = False
    failed_at: float = float("-inf")
    version: int = 0
    """Writes this process made since the cache began (:func:`forget`): a graph read
    while one committed is not held."""


_lock = threading.Lock()
_cache: weakref.WeakKeyDictionary[object, dict[str, _Held]] = weakref.WeakKeyDictionary()


def edges_for(
    store: GraphReads,
    project: str,
    trace: Trace | None = None,
    *,
    background: bool | None = None,
    check_seconds: float = CHECK_SECONDS,
) -> Edges:
    """The edges a walk reads: the held graph while it is current, else the store's
    reads. Every ``check_seconds`` the store's counts are compared with the graph's
    (and the graph read again when they differ) in a background thread, or here and
    now without ``background`` (default :data:`BACKGROUND`); the held graph answers
    meanwhile. Inside a write transaction always the store's reads."""
    if getattr(store, "in_transaction", False):
        return StoreEdges(store, project, trace)
    now = time.monotonic()
    with _lock:
        held = _cache.setdefault(store, {}).setdefault(project, _Held())
        due = (
            not held.building
            and now - held.checked >= check_seconds
            and now - held.failed_at >= check_seconds
        )
        held.building = held.building or due
    if due and (BACKGROUND if background is None else background):
        threading.Thread(
            target=_refresh, args=(store, project, held), name="kgsearch-path-graph", daemon=True
        ).start()
    elif due:
        _refresh(store, project, held)
    graph = held.graph
    if graph is None or time.time() >= graph.until:
        return StoreEdges(store, project, trace)
    return graph


BACKGROUND = True
"""Whether :func:`edges_for` reads the graph in a background thread by default."""


def forget(store: object, project: str) -> None:
    """This process wrote to ``project``'s graph: walks read the store until the graph
    is read again (on the next walk), so a write shows at once, even one that changes
    no count (another process's writes show within :data:`CHECK_SECONDS`)."""
    with _lock:
        held = _cache.get(store, {}).get(project)
        if held is not None:
            held.graph, held.checked, held.version = None, float("-inf"), held.version + 1


def _refresh(store: GraphReads, project: str, held: _Held) -> None:
    """Check the held graph against the store's counts; read it again when they differ
    or a validity bound passed (meanwhile walks read the store)."""
    version = held.version
    try:
        stamp = tuple(sorted(store.counts(project).items()))
        graph = held.graph
        if dict(stamp).get("relationships", 0) > MAX_EDGES:
            graph = None  # too big to hold: the store's reads
        elif graph is None or stamp != held.stamp or time.time() >= graph.until:
            held.graph = None
            graph = build_typed_graph(store, project)
    # a background thread has no caller to raise to: any failure (a store closed under
    # it included) leaves the walks on the store's reads for a while, and is logged
    except Exception as exc:
        _log.warning("relation paths read from the store: the graph could not be held: %s", exc)
        with _lock:
            held.graph, held.building, held.failed_at = None, False, time.monotonic()
        return
    with _lock:
        held.building = False
        if held.version == version:  # else a write committed while it was read: not held
            held.graph, held.stamp, held.checked = graph, stamp, time.monotonic()
