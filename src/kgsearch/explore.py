"""Reads for exploring a graph by eye (the web UI): a bounded subgraph around some
objects, one object with everything around it, and rows whose embedding failed.

Each read is bounded by its arguments, never by the size of the graph: a hub's
relationships are counted in full but listed up to a cap, a neighbourhood stops at
``limit`` nodes and says it was cut.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict

from kgsearch.communities.associations import ASSOCIATION, co_mentions
from kgsearch.errors import InvalidRequest, NotFound
from kgsearch.model import Chunk, EmbeddingStatus, GraphObject, Kind, Relationship
from kgsearch.reads import stats
from kgsearch.store.base import (
    CommunityStore,
    EmbeddingQueue,
    GraphReads,
    Lifecycle,
    SearchIndex,
)

__all__ = [
    "EmbeddingFailure",
    "NodeRef",
    "ObjectView",
    "Overview",
    "RelationshipView",
    "Subgraph",
    "SubgraphNode",
    "embedding_failures",
    "object_view",
    "overview",
    "subgraph",
]

MAX_SUBGRAPH_NODES = 10_000
FRONTIER_SLICE = 200
"""Objects whose neighbours one read fetches while growing a subgraph."""
MAX_EDGES_PER_NODE = 200
"""A node's edges read for a subgraph (out and in each): a hub costs no more."""
MAX_CHUNKS_PER_NODE = 50
"""Passages read per object for its associations: a name found everywhere costs no more."""


class _View(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class SubgraphNode(_View):
    """A node of a subgraph: the object's id, type, display name and hops from a seed."""

    id: str
    type: str
    name: str
    depth: int


class Subgraph(_View):
    """Objects around some seeds and the edges among them.

    Edges are compact (a view of thousands of nodes has tens of thousands of edges):
    ``[source, target, type]`` where source and target index ``nodes`` and type
    indexes ``edge_types``.

    Attributes:
        seeds: The seed ids found (unknown ids are left out).
        nodes: Seeds first, then by hop count, at most the limit asked.
        edges: Edges whose two ends are both nodes, as index triples.
        edge_types: The relationship types the edges index; ``co_mentioned`` for
            associations (objects the same passages name), when they were asked for.
        truncated: True when more objects were within reach than the limit.
        communities: When the project has communities: the coarsest communities the
            nodes belong to (ids); empty otherwise.
        node_communities: Parallel to ``nodes``: each node's coarsest community, as an
            index into ``communities`` (-1 for a node in none); empty when the project
            has no communities.
    """

    seeds: list[str]
    nodes: list[SubgraphNode]
    edges: list[tuple[int, int, int]]
    edge_types: list[str]
    truncated: bool
    communities: list[str] = []
    node_communities: list[int] = []


class NodeRef(_View):
    """The other end of a relationship, as a link: id, type and name."""

    id: str
    type: str
    name: str


class RelationshipView(_View):
    """One relationship of an object, seen from that object."""

    direction: Literal["out", "in"]
    relationship: Relationship
    other: NodeRef | None


class ObjectView(_View):
    """One object with what surrounds it.

    Attributes:
        object: The object (its ``embedding`` holds the status and embedded text).
        relationships: Up to ``limit`` of its relationships, each with its other end.
        relationships_total: How many it has in all.
        chunks: The chunks that mention it or that its extraction came from (``_chunks``),
            with their text, up to ``limit``.
        chunks_total: How many such chunks there are.
    """

    object: GraphObject
    relationships: list[RelationshipView]
    relationships_total: int
    chunks: list[Chunk]
    chunks_total: int


class EmbeddingFailure(_View):
    """A row whose embedding failed, with the error it left."""

    kind: Kind
    id: str
    status: EmbeddingStatus
    attempts: int
    last_error: str | None


class _Subgraphs(GraphReads, CommunityStore, Protocol):
    """Graph walks and community membership (a subgraph with its communities)."""


class _Failures(GraphReads, EmbeddingQueue, Protocol):
    """Row pages and embedding counts (the rows whose embedding failed)."""


class _Overview(GraphReads, Lifecycle, SearchIndex, Protocol):
    """Counts, the store's metadata and the object types."""


def _name(o: GraphObject) -> str:
    return o.name


def _ref(o: GraphObject) -> NodeRef:
    return NodeRef(id=o.id, type=o.type, name=_name(o))


def _take(
    store: GraphReads,
    project: str,
    reached: list[str],
    wanted: set[str],
    hop: int,
    limit: int,
    nodes: list[SubgraphNode],
    frontier: list[str],
) -> bool:
    """Add the reached objects (of the wanted types) as nodes until ``limit``; True
    when some were left out."""
    for part in range(0, len(reached), 1000):
        batch = reached[part : part + 1000]
        rows = store.endpoints(project, batch)
        for i in batch:
            e = rows.get(i)
            if e is None or (wanted and e.type not in wanted):
                continue
            if len(nodes) >= limit:
                return True
            nodes.append(SubgraphNode(id=e.id, type=e.type, name=e.name, depth=hop))
            frontier.append(e.id)
    return False


def subgraph(
    store: _Subgraphs,
    project: str,
    ids: Sequence[str],
    *,
    depth: int = 1,
    limit: int = 500,
    types: Sequence[str] | None = None,
    associations: bool = False,
) -> Subgraph:
    """The objects within ``depth`` hops of ``ids`` (at most ``limit``) and their edges.

    Args:
        store: The store.
        project: The project.
        ids: Seed object ids (unknown ones are skipped).
        depth: Hops from the seeds, 0 to 3.
        limit: Most nodes returned, 1 to 10,000.
        types: Keep only objects of these types (seeds are always kept).
        associations: Also step to and draw the objects that the same passages name
            (edges of type ``co_mentioned``, after the relationships'; a graph built
            from documents holds most of its links this way).

    Raises:
        InvalidRequest: ``depth`` or ``limit`` out of range.
        NotFound: None of ``ids`` is a live object of the project.
    """
    if not 0 <= depth <= 3:
        raise InvalidRequest("depth must be between 0 and 3", details={"depth": depth})
    if not 1 <= limit <= MAX_SUBGRAPH_NODES:
        raise InvalidRequest(
            f"limit must be between 1 and {MAX_SUBGRAPH_NODES}", details={"limit": limit}
        )
    found = store.endpoints(project, list(dict.fromkeys(ids)))
    known = [found[i] for i in dict.fromkeys(ids) if i in found]
    seeds = known[:limit]
    if not seeds:
        raise NotFound(f"none of the {len(ids)} object id(s) is in project {project!r}")
    nodes = [SubgraphNode(id=e.id, type=e.type, name=e.name, depth=0) for e in seeds]
    truncated = len(known) > limit or _walk(
        store, project, nodes, depth, limit, set(types or ()), associations
    )
    edges, edge_types = _edges(store, project, nodes, associations)
    communities, node_communities = _communities(store, project, nodes)
    return Subgraph(
        seeds=[e.id for e in seeds],
        nodes=nodes,
        edges=edges,
        edge_types=edge_types,
        truncated=truncated,
        communities=communities,
        node_communities=node_communities,
    )


def _walk(
    store: _Subgraphs,
    project: str,
    nodes: list[SubgraphNode],
    depth: int,
    limit: int,
    wanted: set[str],
    associations: bool,
) -> bool:
    """Add to ``nodes`` (the seeds) what lies within ``depth`` hops, until ``limit``;
    True when some were left out. One hop at a time, and a hop's frontier a slice at a
    time, so the reads stop as soon as the limit is reached (a hub's far neighbourhood
    is never read)."""
    seen = {n.id for n in nodes}
    frontier = [n.id for n in nodes]
    for hop in range(1, depth + 1):
        if not frontier:
            return False
        current, frontier = frontier, []
        for start in range(0, len(current), FRONTIER_SLICE):
            part = current[start : start + FRONTIER_SLICE]
            reached = [n.id for n in store.neighbors(project, part, depth=1) if n.id not in seen]
            if associations:
                reached += [i for i in _associated(store, project, part) if i not in seen]
            reached = list(dict.fromkeys(reached))
            seen.update(reached)
            if _take(store, project, reached, wanted, hop, limit, nodes, frontier):
                return True
    return False


def _edges(
    store: _Subgraphs, project: str, nodes: Sequence[SubgraphNode], associations: bool
) -> tuple[list[tuple[int, int, int]], list[str]]:
    """The edges among ``nodes`` as (node index, node index, type index), relationships
    first, then associations where asked; and the edge types in index order."""
    index = {n.id: i for i, n in enumerate(nodes)}
    types_seen: dict[str, int] = {}
    edges: list[tuple[int, int, int]] = []
    for _, s, t, kind in store.typed_edges(
        project, list(index), limit=MAX_EDGES_PER_NODE, among=True
    ):
        a, b = index.get(s), index.get(t)
        if a is not None and b is not None:
            edges.append((a, b, types_seen.setdefault(kind, len(types_seen))))
    if associations:
        pairs = co_mentions(_mentions(store, project, list(index)))
        for x, y in sorted(pairs):
            edges.append((index[x], index[y], types_seen.setdefault(ASSOCIATION, len(types_seen))))
    return edges, list(types_seen)


def _mentions(store: GraphReads, project: str, ids: Sequence[str]) -> list[tuple[str, str]]:
    """(chunk, object) mentions of the objects, at most :data:`MAX_CHUNKS_PER_NODE`
    passages each."""
    found: list[tuple[str, str]] = []
    for part in range(0, len(ids), 1000):
        per_object: dict[str, int] = {}
        for m in store.mentions(project, object_ids=ids[part : part + 1000]):
            if m.chunk_id and m.object_id:
                per_object[m.object_id] = per_object.get(m.object_id, 0) + 1
                if per_object[m.object_id] <= MAX_CHUNKS_PER_NODE:
                    found.append((m.chunk_id, m.object_id))
    return found


def _associated(store: GraphReads, project: str, ids: Sequence[str]) -> list[str]:
    """Objects the passages naming ``ids`` also name, most associated first."""
    chunks = list(dict.fromkeys(c for c, _ in _mentions(store, project, ids)))
    if not chunks:
        return []
    named = [(m.chunk_id, m.object_id) for m in store.mentions(project, chunk_ids=chunks)]
    weights: dict[str, float] = {}
    starts = set(ids)
    for (a, b), w in co_mentions((c, o) for c, o in named if c and o).items():
        if (a in starts) != (b in starts):
            other = b if a in starts else a
            weights[other] = weights.get(other, 0.0) + w
    return sorted(weights, key=lambda i: (-weights[i], i))


def _communities(
    store: CommunityStore, project: str, nodes: Sequence[SubgraphNode]
) -> tuple[list[str], list[int]]:
    """The nodes' coarsest communities (one bulk membership read), as distinct ids and
    one index per node (-1: none); two empty lists when the project has no build."""
    if store.community_build(project) is None:
        return [], []
    member = store.communities_of(project, [n.id for n in nodes])
    slots: dict[str, int] = {}
    per_node = []
    for n in nodes:
        held = member.get(n.id)
        per_node.append(slots.setdefault(held[0], len(slots)) if held else -1)
    return list(slots), per_node


def _chunk_ids(obj: GraphObject, mentioned: Sequence[str]) -> list[str]:
    provenance = obj.properties.get("_chunks")
    from_props = [str(c) for c in provenance] if isinstance(provenance, dict) else []
    return list(dict.fromkeys([*from_props, *mentioned]))


def object_view(store: GraphReads, project: str, id: str, *, limit: int = 100) -> ObjectView:
    """One object with up to ``limit`` relationships (and their other ends) and up to
    ``limit`` chunks that mention it or that it was extracted from.

    Raises:
        NotFound: The project has no live object ``id``.
        InvalidRequest: ``limit`` is not between 1 and 1000.
    """
    if not 1 <= limit <= 1000:
        raise InvalidRequest("limit must be between 1 and 1000", details={"limit": limit})
    found = store.get_objects(project, [id])
    if not found:
        raise NotFound(f"object {id!r} not found in project {project!r}")
    obj = found[0]
    touching = store.relationships_touching(project, [id])
    shown = touching[:limit]
    others = {r.target_id if r.source_id == id else r.source_id for r in shown}
    ends = {o.id: o for o in store.get_objects(project, sorted(others))}
    views: list[RelationshipView] = []
    for r in shown:
        direction: Literal["out", "in"] = "out" if r.source_id == id else "in"
        other = ends.get(r.target_id if direction == "out" else r.source_id)
        views.append(
            RelationshipView(
                direction=direction, relationship=r, other=_ref(other) if other else None
            )
        )
    mentions = store.mentions(project, object_ids=[id])
    chunk_ids = _chunk_ids(obj, [m.chunk_id for m in mentions if m.chunk_id])
    chunks = store.get_chunks(project, chunk_ids[:limit])
    return ObjectView(
        object=obj,
        relationships=views,
        relationships_total=len(touching),
        chunks=chunks,
        chunks_total=len(chunk_ids),
    )


_ROW_KINDS: tuple[tuple[Kind, Literal["object", "relationship", "chunk"]], ...] = (
    (Kind.OBJECT, "object"),
    (Kind.RELATIONSHIP, "relationship"),
    (Kind.CHUNK, "chunk"),
)


def embedding_failures(
    store: _Failures, project: str, *, limit: int = 20
) -> list[EmbeddingFailure]:
    """Up to ``limit`` rows whose embedding is failed or dead, with their last error.

    Kinds with no such row (by the store's counts) are not read, and reading a kind
    stops at its last failure.
    """
    counts: dict[Kind, int] = {}
    for c in store.embedding_counts(project):
        bad_rows = c.by_status.get("failed", 0) + c.by_status.get("dead", 0)
        counts[c.kind] = counts.get(c.kind, 0) + bad_rows
    bad = {EmbeddingStatus.FAILED, EmbeddingStatus.DEAD}
    found: list[EmbeddingFailure] = []
    for kind, name in _ROW_KINDS:  # community reports are not rows iter_rows streams
        left = counts.get(kind, 0)
        if left <= 0:
            continue
        rows: Any = store.iter_rows(project, name)
        for row in rows:
            state = row.embedding
            if state.status in bad:
                found.append(
                    EmbeddingFailure(
                        kind=kind,
                        id=row.id,
                        status=state.status,
                        attempts=state.attempts,
                        last_error=state.last_error,
                    )
                )
                left -= 1
                if len(found) >= limit:
                    return found
                if left <= 0:
                    break
    return found


class Overview(_View):
    """What a project holds, for a first look: row counts, the embedding model and
    the object types (for type filters)."""

    project: str
    counts: dict[str, int]
    embedding_model: str | None
    dims: int | None
    object_types: list[str]


def overview(store: _Overview, project: str) -> Overview:
    """The project's row counts, embedding model and object types."""
    found = stats(store, project)
    return Overview(
        project=project,
        counts=found.counts,
        embedding_model=found.embedding_model,
        dims=found.dims,
        object_types=sorted(store.object_types(project)),
    )
