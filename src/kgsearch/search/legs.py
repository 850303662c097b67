"""Search legs: each turns (store, request) into ranked ``(key, score)`` lists.

Keys are ``kind:id`` strings so one fusion can mix objects, relationships and chunks.
Vector and BM25 legs call the store's primitives with the request's filters, so the
filters act inside each leg. Graph legs (BFS, personalized PageRank) start from
given origins or from the other legs' top hits ("land and expand").
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial

import numpy as np
import numpy.typing as npt

from kgsearch.model import Filters, Kind
from kgsearch.search.ppr import personalized_pagerank
from kgsearch.search.request import SearchRequest
from kgsearch.store.base import Store
from kgsearch.text.fields import normalize_tag

__all__ = ["Legs", "graph_legs", "key", "scope_legs", "split_key"]

Vector = npt.NDArray[np.float32]
_PPR_MAX_EDGES = 50_000


def key(kind: Kind, id: str) -> str:
    """The fusion key of a row."""
    return f"{kind.value}:{id}"


def split_key(value: str) -> tuple[Kind, str]:
    """Inverse of :func:`key`."""
    kind, _, id = value.partition(":")
    return Kind(kind), id


@dataclass
class Legs:
    """Ranked lists per leg name, with timings and counts for metadata/debug."""

    lists: dict[str, list[tuple[str, float]]] = field(default_factory=dict)
    ms: dict[str, float] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

    def add(self, name: str, ranked: list[tuple[str, float]], started: float) -> None:
        """Record one leg's ranked list and how long it took."""
        self.lists[name] = ranked
        self.ms[name] = (time.perf_counter() - started) * 1000


def scopes(request: SearchRequest) -> list[Kind]:
    """The scopes a request searches, after ``result_types`` (seed 000 semantics)."""
    wanted = {
        "both": (Kind.OBJECT, Kind.RELATIONSHIP, Kind.CHUNK),
        "graph": (Kind.OBJECT, Kind.RELATIONSHIP),
        "text": (Kind.CHUNK,),
    }[request.result_types]
    return [k for k in wanted if (config := request.scope(k)) is not None and config.methods]


def candidates(request: SearchRequest, kind: Kind) -> int:
    """Per-leg candidate count."""
    config = request.scope(kind)
    if config is not None and config.candidates:
        return config.candidates
    return max(30, 3 * request.limit)


Job = tuple[str, Kind, Callable[[], list[tuple[str, float]]]]

# Whether BM25 legs run in a worker thread beside the vector legs (see scope_legs).
_PARALLEL_LEGS = True
_LEG_POOL: ThreadPoolExecutor | None = None
_LEG_POOL_LOCK = threading.Lock()


def _leg_pool() -> ThreadPoolExecutor:
    global _LEG_POOL
    with _LEG_POOL_LOCK:
        if _LEG_POOL is None:
            _LEG_POOL = ThreadPoolExecutor(8, thread_name_prefix="kgsearch-legs")
        return _LEG_POOL


def _run(jobs: Sequence[Job]) -> list[tuple[str, list[tuple[str, float]], float]]:
    out = []
    for name, kind, job in jobs:
        started = time.perf_counter()
        ranked = [(key(kind, i), s) for i, s in job()]
        out.append((name, ranked, (time.perf_counter() - started) * 1000))
    return out


def scope_legs(
    store: Store,
    project: str,
    request: SearchRequest,
    vectors: dict[Kind, Vector | None],
    legs: Legs,
) -> None:
    """Run the vector and BM25 legs of every requested scope."""
    vector_jobs: list[Job] = []
    lexical_jobs: list[Job] = []
    lookup_jobs: list[Job] = []  # index lookups, microseconds each: run inline
    filters = request.filters
    for kind in scopes(request):
        config = request.scope(kind)
        assert config is not None
        n = candidates(request, kind)
        vec = vectors.get(kind)
        if "vector" in config.methods and vec is not None:
            vector_jobs.append(
                (
                    f"{kind.value}s:vector",
                    kind,
                    partial(store.vector_search, project, kind, vec, limit=n, filters=filters),
                )
            )
        if "bm25" in config.methods:
            query = request.query
            if kind is Kind.OBJECT and request.type_hint:
                # Stored object text carries "[Type: #person]": the hint word scores too.
                query = f"{query} {request.type_hint}"
            lexical_jobs.append(
                (
                    f"{kind.value}s:bm25",
                    kind,
                    partial(store.text_search, project, kind, query, limit=n, filters=filters),
                )
            )
        name = request.query.strip()
        if kind is Kind.OBJECT and "bm25" in config.methods and _nameable(name):
            # an object whose key is the whole query ("Benji", "1984") is what a name
            # lookup wants, even when longer names or richer texts score higher
            lookup_jobs.append(
                (
                    "objects:name",
                    kind,
                    partial(store.objects_named, project, name, limit=n, filters=filters),
                )
            )
        if kind is Kind.OBJECT and request.type_hint:
            hinted = _hinted_filters(store, project, request)
            if hinted is not None and "vector" in config.methods and vec is not None:
                vector_jobs.append(
                    (
                        "objects:vector:hinted",
                        kind,
                        partial(store.vector_search, project, kind, vec, limit=n, filters=hinted),
                    )
                )
            if hinted is not None and "bm25" in config.methods:
                lexical_jobs.append(
                    (
                        "objects:bm25:hinted",
                        kind,
                        partial(
                            store.text_search, project, kind, request.query, limit=n, filters=hinted
                        ),
                    )
                )
            if hinted is not None and "bm25" in config.methods and _nameable(name):
                lookup_jobs.append(
                    (
                        "objects:name:hinted",
                        kind,
                        partial(store.objects_named, project, name, limit=n, filters=hinted),
                    )
                )
    # Each BM25 leg runs in a worker thread of its own beside the vector legs: SQLite
    # (through a connection per thread) and the int8 scan both release the GIL, so on 2
    # cores scans overlap BM25 queries (the scan itself is single-threaded below
    # 2 × 250k rows, see ann.py). Vector legs run side by side too where the store
    # says they are server queries (PostgreSQL); in-process scans run one after the
    # other in the calling thread. Name lookups are index probes and run inline. Inside
    # the caller's own write transaction every leg runs in the calling thread: only it
    # sees the transaction's writes (and an in-memory SQLite store has one connection,
    # which the transaction holds).
    if vector_jobs and lexical_jobs and _PARALLEL_LEGS and not store.in_transaction:
        pool = _leg_pool()
        inline = lookup_jobs if store.parallel_vector_legs else lookup_jobs + vector_jobs
        pooled = lexical_jobs + (vector_jobs if store.parallel_vector_legs else [])
        futures = [pool.submit(_run, [job]) for job in pooled]
        results = _run(inline) + [r for f in futures for r in f.result()]
    else:
        results = _run(lookup_jobs + vector_jobs) + _run(lexical_jobs)
    # Legs keep the order they always had (per scope: vector, hinted, bm25), so
    # fusion's found_by lists do not depend on which thread finished first.
    order = {
        job[0]: (list(Kind).index(job[1]), _LEG_ORDER.index(job[0].split(":", 1)[1]))
        for job in lookup_jobs + vector_jobs + lexical_jobs
    }
    for name, ranked, ms in sorted(results, key=lambda r: order[r[0]]):
        legs.lists[name] = ranked
        legs.ms[name] = ms


_LEG_ORDER = ["vector", "vector:hinted", "bm25:hinted", "bm25", "name:hinted", "name"]
# Longest query that is tried as an object name.
_MAX_NAME_CHARS = 200


def _nameable(name: str) -> bool:
    """Whether a query can be looked up as a key: short, no NUL, valid Unicode."""
    if not 0 < len(name) <= _MAX_NAME_CHARS or "\x00" in name:
        return False
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _hinted_filters(store: Store, project: str, request: SearchRequest) -> Filters | None:
    """Filters restricted to the hinted type(s): with a type hint, the objects of that
    type are ranked once more, so RRF lifts them above same-name objects of other types
    (the hint stays a boost, not a filter). None when no type matches the hint."""
    wanted = normalize_tag(request.type_hint or "")
    types = [t for t in store.object_types(project) if normalize_tag(t) == wanted]
    if request.filters.object_types is not None:
        types = [t for t in types if t in request.filters.object_types]
    if not types:
        return None
    return request.filters.model_copy(update={"object_types": types})


def seed_objects(
    store: Store, project: str, ranked: Sequence[tuple[str, float]], top: int
) -> dict[str, float]:
    """Object ids touched by the top hits (an object itself, a relationship's endpoints),
    each weighted by the best hit score that reached it."""
    seeds: dict[str, float] = {}
    rel_ids: list[tuple[str, float]] = []
    for value, score in ranked[:top]:
        kind, id = split_key(value)
        if kind is Kind.OBJECT:
            seeds[id] = max(seeds.get(id, 0.0), score)
        elif kind is Kind.RELATIONSHIP:
            rel_ids.append((id, score))
    if rel_ids:
        rels = {r.id: r for r in store.get_relationships(project, [i for i, _ in rel_ids])}
        for id, score in rel_ids:
            rel = rels.get(id)
            if rel is not None:
                for end in (rel.source_id, rel.target_id):
                    seeds[end] = max(seeds.get(end, 0.0), score)
    return seeds


def graph_legs(
    store: Store,
    project: str,
    request: SearchRequest,
    first_round: Sequence[tuple[str, float]],
    legs: Legs,
    include_relationships: bool,
    include_objects: bool = True,
) -> None:
    """BFS expansion or personalized PageRank from origins or the first round's hits."""
    if request.graph == "none":
        return
    started = time.perf_counter()
    if request.bfs_origins:
        live = store.endpoints(project, request.bfs_origins)
        seeds = {i: 1.0 for i in request.bfs_origins if i in live}
    else:
        seeds = seed_objects(store, project, first_round, top=max(5, request.limit // 2))
    if not seeds:
        legs.add("graph:" + request.graph, [], started)
        return
    scope = (include_objects, include_relationships)
    if request.graph == "bfs":
        _bfs(store, project, request, seeds, legs, started, scope)
    else:
        _ppr(store, project, request, seeds, legs, started, scope)


def _bfs(
    store: Store,
    project: str,
    request: SearchRequest,
    seeds: dict[str, float],
    legs: Legs,
    started: float,
    scope: tuple[bool, bool],
) -> None:
    found = store.neighbors(
        project,
        list(seeds),
        depth=request.graph_depth,
        relationship_types=request.filters.relationship_types,
        as_of=request.filters.as_of,
    )
    allowed = _allowed_objects(store, project, request, [n.id for n in found])
    if scope[0]:
        objects = [(key(Kind.OBJECT, n.id), 1.0 / n.depth) for n in found if n.id in allowed]
        legs.add("graph:bfs", objects, started)
    if scope[1]:
        keep = _allowed_relationships(store, project, request, [n.via for n in found])
        rels = [(key(Kind.RELATIONSHIP, n.via), 1.0 / n.depth) for n in found if n.via in keep]
        legs.add("graph:bfs:relationships", list(dict.fromkeys(rels)), started)


def _allowed_objects(
    store: Store, project: str, request: SearchRequest, ids: Sequence[str]
) -> set[str]:
    f = request.filters
    if not (f.object_types or f.labels or f.properties):
        return set(ids)
    return {
        o.id
        for o in store.get_objects(project, ids)
        if (not f.object_types or o.type in f.object_types)
        and (not f.labels or set(f.labels) & set(o.labels))
        and (not f.properties or all(o.properties.get(k) == v for k, v in f.properties.items()))
    }


def _allowed_relationships(
    store: Store, project: str, request: SearchRequest, ids: Sequence[str]
) -> set[str]:
    """Relationship ids passing the property filter (types and validity are applied by
    the traversal itself)."""
    wanted = request.filters.properties
    if not wanted:
        return set(ids)
    return {
        r.id
        for r in store.get_relationships(project, ids)
        if all(r.properties.get(k) == v for k, v in wanted.items())
    }


def _ppr(
    store: Store,
    project: str,
    request: SearchRequest,
    seeds: dict[str, float],
    legs: Legs,
    started: float,
    scope: tuple[bool, bool],
) -> None:
    """HippoRAG-style propagation over the seeds' neighbourhood (bounded subgraph)."""
    frontier = set(seeds)
    edges: dict[str, tuple[str, str, float]] = {}
    for _ in range(request.graph_depth):
        batch = store.edges_among(
            project,
            sorted(frontier),
            relationship_types=request.filters.relationship_types,
            as_of=request.filters.as_of,
        )
        new: set[str] = set()
        for rid, src, tgt, weight in batch:
            if rid not in edges:
                edges[rid] = (src, tgt, weight)
                new.update((src, tgt))
        frontier = new - frontier
        if len(edges) > _PPR_MAX_EDGES or not frontier:
            break
    scores = personalized_pagerank(edges.values(), seeds)
    allowed = _allowed_objects(store, project, request, list(scores))
    ranked = sorted(
        ((i, s) for i, s in scores.items() if i in allowed), key=lambda x: (-x[1], x[0])
    )[:500]
    if scope[0]:
        legs.add("graph:ppr", [(key(Kind.OBJECT, i), s) for i, s in ranked], started)
    if scope[1]:
        rel_scores = sorted(
            ((rid, scores.get(s, 0.0) + scores.get(t, 0.0)) for rid, (s, t, _) in edges.items()),
            key=lambda x: (-x[1], x[0]),
        )[:500]
        keep = _allowed_relationships(store, project, request, [r for r, _ in rel_scores])
        legs.add(
            "graph:ppr:relationships",
            [(key(Kind.RELATIONSHIP, r), s) for r, s in rel_scores if s > 0 and r in keep],
            started,
        )
