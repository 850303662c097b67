"""Hydration: one batched read for the whole fused pool, before any reranking.

For the top of the fused list (the plan's pool) this reads the rows by kind (one call
per kind the pool can hold, for the rows the graph legs did not read already), the
mention links the plan's reranker needs (one call, for all chunks, objects and
relationships at once), the chunks and sources behind those mentions, the stored
vectors for MMR (one call per kind) and the hop distances from the node-distance
centre (one traversal). Which calls are made follows from the plan alone, so a search
costs the same number of store calls whatever the size or make-up of its pool. Every
:class:`Candidate` leaves carrying its data, and reranking never goes back to the store.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from functools import partial
from typing import Any, TypeVar

from kgsearch.errors import InvalidRequest
from kgsearch.model import Chunk, GraphObject, Kind, Mention, Relationship
from kgsearch.search.fusion import Fused
from kgsearch.search.legs import beside
from kgsearch.search.parts import SearchReads, key, split_key
from kgsearch.search.plan import Plan, QueryVectors
from kgsearch.search.rerank import Candidate
from kgsearch.search.rows import Rows
from kgsearch.store.base import GraphReads, SearchIndex, Trace

__all__ = ["hydrate"]

# How far node_distance looks from its centre; farther objects count as unreachable.
_MAX_HOPS = 3
_T = TypeVar("_T")


def _done(value: _T) -> Callable[[], _T]:
    """What :func:`~kgsearch.search.legs.beside` returns, for work already done."""
    return lambda: value


def hydrate(
    store: SearchReads,
    plan: Plan,
    fused: Sequence[Fused],
    rows: Rows,
    query: QueryVectors,
    trace: Trace | None = None,
    keep: int | None = None,
) -> list[Candidate]:
    """Candidates for the top of ``fused``, each with what reranking needs.

    Args:
        store: The store searched.
        plan: The search plan (pool size and kinds, reranker, centre).
        fused: The fused hits, best first.
        rows: The search's rows (those the graph legs read are reused).
        query: The query vectors (MMR needs one to read candidate vectors).
        trace: Hears the statements of every read (an explained search).
        keep: At most this many candidates are made (None: one per live pooled hit).
            The rows of the whole pool are read all the same, so a search's store calls
            do not depend on which of its hits are live.

    Returns:
        One candidate per pooled hit whose row is still live, in fused order.

    Raises:
        InvalidRequest: The node-distance centre is not an object of this project.
    """
    pool = fused[: plan.pool_size]
    ids = _ids_by_kind(pool)
    center = plan.request.center_id if "hops" in plan.rerank_needs else None
    # a server store's relationships are read beside the mentions and objects (it
    # answers both at once; Rows keeps each kind's rows apart); an in-process store
    # reads them in turn: a hand-off to a worker costs more than it saves there (on
    # MetaQA 0.3 ms of CPU a search)
    relationships: Callable[[], object] | None = None
    if Kind.RELATIONSHIP in plan.pool_kinds:
        read = partial(rows.relationships, ids[Kind.RELATIONSHIP], trace)
        relationships = beside(store, read) if store.parallel_vector_legs else _done(read())
    mentions = _mentions(store, rows.project, plan, ids, trace)
    if Kind.OBJECT in plan.pool_kinds or center is not None:
        objects = rows.objects([*ids[Kind.OBJECT], *([center] if center else [])], trace)
        if center is not None and center not in objects:
            raise InvalidRequest(f"center_id {center!r} is not an object of this project")
    if relationships is not None:
        relationships()
    chunks: dict[str, Chunk] = {}
    if Kind.CHUNK in plan.pool_kinds or "sources" in plan.rerank_needs:
        # one read for the pool's chunks and the chunks behind the counted mentions
        wanted = [*ids[Kind.CHUNK], *(m.chunk_id for m in mentions if m.chunk_id)]
        chunks = rows.chunks(wanted, trace)
    found = rows.by_key(f.key for f in pool)
    vectors = _vectors(store, rows.project, plan, query, ids, trace)
    touches = _chunk_objects(mentions, ids[Kind.CHUNK])
    candidates: list[Candidate] = []
    for f in pool:
        if (row := found.get(f.key)) is None:
            continue
        if keep is not None and len(candidates) >= keep:
            break
        candidates.append(
            Candidate(
                key=f.key,
                score=f.score,
                vector=vectors.get(f.key),
                text=_text(row),
                object_ids=_object_ids(row, touches),
                found_by=f.found_by,
            )
        )
    if center is not None:
        candidates = _with_hops(store, rows.project, center, candidates, trace)
    if "sources" in plan.rerank_needs:
        candidates = _with_sources(store, rows.project, mentions, chunks, candidates, trace)
    return candidates


def _ids_by_kind(pool: Sequence[Fused]) -> dict[Kind, list[str]]:
    """Pooled ids per kind, in fused order (every kind present, maybe empty)."""
    by_kind: dict[Kind, list[str]] = {k: [] for k in Kind}
    for f in pool:
        kind, id = split_key(f.key)
        by_kind[kind].append(id)
    return by_kind


def _mentions(
    store: GraphReads,
    project: str,
    plan: Plan,
    ids: Mapping[Kind, Sequence[str]],
    trace: Trace | None,
) -> list[Mention]:
    """The one mention read: the pooled chunks' links when node_distance needs the
    objects a chunk touches, and the pooled objects' and relationships' links for the
    mentions reranker. No call when the reranker needs neither."""
    touches = "hops" in plan.rerank_needs and Kind.CHUNK in plan.pool_kinds
    counted = "sources" in plan.rerank_needs
    if not (touches or counted):
        return []
    return store.mentions(
        project,
        chunk_ids=ids[Kind.CHUNK] if touches else [],
        object_ids=ids[Kind.OBJECT] if counted else [],
        relationship_ids=ids[Kind.RELATIONSHIP] if counted else [],
        trace=trace,
    )


def _chunk_objects(mentions: Sequence[Mention], chunk_ids: Sequence[str]) -> dict[str, list[str]]:
    """The objects each pooled chunk mentions, in mention order."""
    wanted = set(chunk_ids)
    touches: dict[str, list[str]] = {}
    for m in mentions:
        if m.chunk_id in wanted and m.object_id:
            touches.setdefault(m.chunk_id, []).append(m.object_id)
    return touches


def _text(row: GraphObject | Relationship | Chunk) -> str:
    """The text a cross-encoder scores: what was embedded."""
    if isinstance(row, GraphObject):
        return row.embedding.text or row.key
    if isinstance(row, Relationship):
        return row.embedding.text or ""
    return row.text


def _object_ids(
    row: GraphObject | Relationship | Chunk, touches: Mapping[str, list[str]]
) -> tuple[str, ...]:
    """The objects a hit touches: itself, its endpoints, or what the chunk mentions."""
    if isinstance(row, GraphObject):
        return (row.id,)
    if isinstance(row, Relationship):
        return (row.source_id, row.target_id)
    return tuple(touches.get(row.id, ()))


def _vectors(
    store: SearchIndex,
    project: str,
    plan: Plan,
    query: QueryVectors,
    ids: Mapping[Kind, Sequence[str]],
    trace: Trace | None,
) -> dict[str, Any]:
    """Stored vectors by key for MMR, one call per pool kind; none without a query
    vector (MMR is then skipped)."""
    if "vectors" not in plan.rerank_needs or query.first is None:
        return {}
    vectors: dict[str, Any] = {}
    for kind in plan.pool_kinds:
        for id, vector in store.vectors(project, kind, ids[kind], trace=trace).items():
            vectors[key(kind, id)] = vector
    return vectors


def _with_hops(
    store: GraphReads,
    project: str,
    center: str,
    candidates: Sequence[Candidate],
    trace: Trace | None,
) -> list[Candidate]:
    """Candidates with their hop count from ``center``: one traversal for all of them."""
    found = store.neighbors(project, [center], depth=_MAX_HOPS, trace=trace)
    hops = {n.id: n.depth for n in found}
    hops[center] = 0
    out = []
    for c in candidates:
        known = [hops[i] for i in c.object_ids if i in hops]
        out.append(replace(c, hops=min(known) if known else None))
    return out


def _with_sources(
    store: GraphReads,
    project: str,
    mentions: Sequence[Mention],
    chunks: Mapping[str, Chunk],
    candidates: Sequence[Candidate],
    trace: Trace | None,
) -> list[Candidate]:
    """Candidates with how many distinct live sources mention them (one read of the
    sources); a chunk without a source counts as a source of its own."""
    by_key: dict[str, list[Mention]] = {}
    for m in mentions:
        # one mention can name both an object and a relationship: it counts for each
        if m.object_id:
            by_key.setdefault(key(Kind.OBJECT, m.object_id), []).append(m)
        if m.relationship_id:
            by_key.setdefault(key(Kind.RELATIONSHIP, m.relationship_id), []).append(m)
    named: dict[str, set[str]] = {}
    orphans: dict[str, set[str]] = {}
    for c in candidates:  # chunk hits have no mentions here: they count 0
        named[c.key], orphans[c.key] = _sources_of(by_key.get(c.key, []), chunks)
    every = sorted({s for found in named.values() for s in found})
    live = {s.id for s in store.get_sources(project, every, trace=trace)}
    return [replace(c, sources=len(named[c.key] & live) + len(orphans[c.key])) for c in candidates]


def _sources_of(
    mentions: Sequence[Mention], chunks: Mapping[str, Chunk]
) -> tuple[set[str], set[str]]:
    """(source ids, ids of chunks without a source) behind some mentions; mentions
    through deleted chunks do not count."""
    named: set[str] = set()
    orphans: set[str] = set()
    for m in mentions:
        if m.chunk_id:
            chunk = chunks.get(m.chunk_id)
            if chunk is None:
                continue  # deleted chunk
            if chunk.source_id:
                named.add(chunk.source_id)
            else:
                orphans.add(chunk.id)
        elif m.source_id:
            named.add(m.source_id)
    return named, orphans
