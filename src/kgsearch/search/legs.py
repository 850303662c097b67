"""Search legs: each turns (store, plan) into ranked ``(key, score)`` lists.

Keys are ``kind:id`` strings so one fusion can mix objects, relationships and chunks.
Vector, BM25 and name legs call the store's primitives with the request's filters, so
the filters act inside each leg. Graph legs (BFS, personalized PageRank) start from
given origins or from the other legs' top hits ("land and expand"); the rows they read
go into the search's :class:`~kgsearch.search.rows.Rows`, where the filters and later
hydration find them without reading again. When the search is explained, each leg's
store calls report their statements to the leg's log (see ``statements.py``); the
graph stage's go to ``graph:bfs`` or ``graph:ppr`` and the type-hint lookup's to
``type_hint``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from functools import partial
from typing import TypeVar

from kgsearch.model import Filters, Kind
from kgsearch.search.in_flight import searches_in_flight, searching
from kgsearch.search.names import leg_names, look_up_names, looked_up, named, shared_names
from kgsearch.search.parts import LEGS, Leg, LegInput, Legs, SearchReads, key, split_key
from kgsearch.search.paths import walk_paths
from kgsearch.search.plan import Plan, Vector
from kgsearch.search.ppr import personalized_pagerank
from kgsearch.search.request import SearchRequest
from kgsearch.search.rows import Rows
from kgsearch.search.statements import Traces, log_of
from kgsearch.store.base import GraphReads, SearchIndex, Trace
from kgsearch.store.scope import carried
from kgsearch.text.fields import normalize_tag

__all__ = [
    "Legs",
    "allowed_objects",
    "beside",
    "graph_legs",
    "key",
    "scope_legs",
    "searches_in_flight",
    "searching",
    "split_key",
]

_PPR_MAX_EDGES = 50_000
_T = TypeVar("_T")


Job = tuple[str, Kind, Callable[[], list[tuple[str, float]]]]

# Whether BM25 legs run in a worker thread beside the vector legs (see _run_jobs).
_PARALLEL_LEGS = True
_LEG_POOL: ThreadPoolExecutor | None = None
_LEG_POOL_LOCK = threading.Lock()
# The order legs are recorded in (per scope), whichever thread finished first.
_LEG_ORDER = ["vector", "vector:hinted", "bm25:hinted", "bm25", "name:hinted", "name"]
_LEG_RANK = {name: i for i, name in enumerate(_LEG_ORDER)}
_KIND_RANK = {kind: i for i, kind in enumerate(Kind)}


@dataclass
class _Jobs:
    """Legs to run, grouped by how they run (see :func:`_run_jobs`)."""

    vector: list[Job] = field(default_factory=list)
    lexical: list[Job] = field(default_factory=list)
    lookup: list[Job] = field(default_factory=list)  # index probes, microseconds each

    def extend(self, other: _Jobs) -> None:
        """Add another group's jobs."""
        self.vector += other.vector
        self.lexical += other.lexical
        self.lookup += other.lookup


def scope_legs(
    store: SearchReads,
    project: str,
    plan: Plan,
    vectors: Mapping[Kind, Vector | None],
    traces: Traces | None = None,
    started: Callable[[], None] | None = None,
    rows: Rows | None = None,
) -> Legs:
    """Run the vector, BM25 and name legs of every searched scope.

    Args:
        store: The store searched.
        project: The project searched.
        plan: The search plan (scopes, methods, candidate counts).
        vectors: The query vector per scope; a scope without one skips its vector leg.
        traces: Where each leg's statements go when the search is explained.
        started: Called once the legs are under way (work started beside them then
            queues behind them for connections and workers).
        rows: The search's rows: when given, the name leg looks its names up through
            them, with the anchored leg's, in one store call made here (see
            :func:`~kgsearch.search.names.look_up_names`).

    Returns:
        The ranked list and timing of each leg.
    """
    filters = plan.request.filters
    jobs = _Jobs()
    for kind in plan.scopes:
        jobs.extend(
            _scope_jobs(store, project, plan, kind, vectors.get(kind), filters, traces, rows=rows)
        )
    hinted = _hinted_filters(store, project, plan, traces)
    if hinted is not None:
        # The objects of the hinted type are ranked once more, so RRF lifts them above
        # same-name objects of other types (the hint stays a boost, not a filter).
        vector = vectors.get(Kind.OBJECT)
        jobs.extend(_scope_jobs(store, project, plan, Kind.OBJECT, vector, hinted, traces, True))
    if rows is not None:
        look_up_names(plan, rows, traces)
    return _record(jobs, _run_jobs(store, jobs, started))


def _scope_jobs(
    store: SearchIndex,
    project: str,
    plan: Plan,
    kind: Kind,
    vector: Vector | None,
    filters: Filters,
    traces: Traces | None,
    hinted: bool = False,
    *,
    rows: Rows | None = None,
) -> _Jobs:
    """The legs of one scope under one set of filters (the hinted legs use the type's);
    with ``rows``, an unfiltered name leg reads the search's one name look-up."""
    config = plan.request.scope(kind)
    assert config is not None  # plan.scopes holds only scopes that are switched on
    n, suffix, prefix = plan.candidates[kind], ":hinted" if hinted else "", f"{kind.value}s:"
    jobs = _Jobs()
    if "vector" in config.methods and vector is not None:
        leg = f"{prefix}vector{suffix}"
        search = partial(
            store.vector_search,
            project,
            kind,
            vector,
            limit=n,
            filters=filters,
            trace=log_of(traces, leg),
        )
        jobs.vector.append((leg, kind, search))
    if "bm25" not in config.methods:
        return jobs
    query, leg = _bm25_query(plan, kind, hinted), f"{prefix}bm25{suffix}"
    search = partial(
        store.text_search, project, kind, query, limit=n, filters=filters, trace=log_of(traces, leg)
    )
    jobs.lexical.append((leg, kind, search))
    names, leg = leg_names(plan), f"objects:name{suffix}"
    if kind is Kind.OBJECT and names:
        # an object whose key is the whole query ("Benji", "1984"), or one of the
        # entities its keywords name, is what a name lookup wants, even when longer
        # names or richer texts score higher
        if rows is not None and shared_names(filters):
            search = partial(looked_up, rows, names, n, log_of(traces, leg))
        else:
            search = partial(named, store, project, names, n, filters, log_of(traces, leg))
        jobs.lookup.append((leg, kind, search))
    return jobs


def _bm25_query(plan: Plan, kind: Kind, hinted: bool) -> str:
    """The BM25 query (the scope's text, :meth:`Plan.text`): stored object text carries
    "[Type: #person]", so outside the hinted legs (which filter by type already) the
    hint word scores too."""
    request = plan.request
    if kind is Kind.OBJECT and request.type_hint and not hinted:
        return f"{plan.text(kind)} {request.type_hint}"
    return plan.text(kind)


def beside(store: SearchReads, work: Callable[[], _T]) -> Callable[[], _T]:
    """Start ``work`` in a leg worker, beside the first round's legs, and return what
    waits for its result; or run it now, in the calling thread (:func:`_inline`)."""
    if _inline(store):
        done = work()
        return lambda: done
    return _leg_pool().submit(_carried, carried(), work).result


def _inline(store: SearchReads) -> bool:
    """Whether a search runs all its work in the calling thread: with parallel legs
    off; inside the caller's own write transaction (only it sees its writes; an
    in-memory SQLite store has one connection); beside another search of this process
    on a store that scans in process.

    Beside another search the cores are busy with it, and a hand-off only adds CPU (a
    woken worker starts on cold caches). Two threads searching side by side in one
    process (``scripts/bench_concurrent.py --change inline --threads 2``, load ~1), CPU
    a search and searches/s with the hand-offs against without: the REST sample graph
    6.21 -> 5.30 ms, 195 -> 228/s; MetaQA 10.26 -> 9.36 ms, 141 -> 169/s."""
    return (
        not _PARALLEL_LEGS
        or store.in_transaction
        or (searches_in_flight() > 1 and not store.parallel_vector_legs)
    )


def _leg_pool() -> ThreadPoolExecutor:
    global _LEG_POOL
    with _LEG_POOL_LOCK:
        if _LEG_POOL is None:
            _LEG_POOL = ThreadPoolExecutor(8, thread_name_prefix="kgsearch-legs")
        return _LEG_POOL


def _run(
    jobs: Sequence[Job], scope: AbstractContextManager[None] | None = None
) -> list[tuple[str, list[tuple[str, float]], float]]:
    """Run ``jobs`` one after the other (in a worker: within the search's read scope)."""
    out = []
    with scope or nullcontext():
        for name, kind, job in jobs:
            started = time.perf_counter()
            prefix = key(kind, "")
            ranked = [(prefix + i, s) for i, s in job()]
            out.append((name, ranked, (time.perf_counter() - started) * 1000))
    return out


def _carried(scope: AbstractContextManager[None], work: Callable[[], _T]) -> _T:
    with scope:
        return work()


def _run_jobs(
    store: SearchReads, jobs: _Jobs, started: Callable[[], None] | None = None
) -> list[tuple[str, list[tuple[str, float]], float]]:
    """Run the legs, side by side where that helps (else inline, :func:`_inline`).

    Each BM25 leg runs in a worker thread beside the vector legs: SQLite (a connection
    per thread) and the scans release the GIL, so on 2 cores scans overlap BM25 queries.
    Vector legs run side by side too where they are server queries (PostgreSQL); in
    process, :func:`_split_scans`. Name lookups are index probes and run inline."""
    if not (jobs.vector and jobs.lexical) or _inline(store):
        if started is not None:
            started()
        return _run(jobs.lookup + jobs.vector) + _run(jobs.lexical)
    if store.parallel_vector_legs:
        inline, pooled_vectors = jobs.lookup, jobs.vector
    else:
        kept, pooled_vectors = _split_scans(jobs.vector)
        inline = jobs.lookup + kept
    # the vector legs handed over are the longest: started first, they end first
    batches = _batches(pooled_vectors, jobs.lexical)
    futures = [_leg_pool().submit(_run, batch, carried()) for batch in batches]
    if started is not None:
        started()
    return _run(inline) + [r for f in futures for r in f.result()]


def _batches(vector: list[Job], lexical: list[Job]) -> list[list[Job]]:
    """The leg workers' jobs: alone in the process, one leg each; beside another search
    (a store whose legs are server queries: others run inline then, :func:`_inline`),
    every BM25 leg in one job, one after the other in one worker: a leg in a worker of
    its own ends no sooner then, and each hand-off costs CPU the searches share."""
    if searches_in_flight() > 1 and lexical:
        return [[job] for job in vector] + [lexical]
    return [[job] for job in [*vector, *lexical]]


def _split_scans(vector: list[Job]) -> tuple[list[Job], list[Job]]:
    """(the in-process scans the calling thread runs, those handed to a leg worker).

    Alone in the process, a search hands every scan but the relationships' (on a graph
    the largest, MetaQA's 129k rows against 42k objects) to a worker, beside the BM25
    legs: the two cores then share its CPU evenly instead of the calling thread
    running every scan while the other core waits (beside another search every leg
    stays inline, :func:`_inline`).
    """
    if len(vector) < 2:
        return vector, []
    kept = [job for job in vector if job[1] is Kind.RELATIONSHIP] or vector[:1]
    return kept, [job for job in vector if job not in kept]


def _record(jobs: _Jobs, results: Sequence[tuple[str, list[tuple[str, float]], float]]) -> Legs:
    """Legs in the order they always had (per scope: vector, hinted, bm25, name), so
    fusion's found_by lists do not depend on which thread finished first."""
    order = {
        name: (_KIND_RANK[kind], _LEG_RANK[name.split(":", 1)[1]])
        for name, kind, _ in jobs.lookup + jobs.vector + jobs.lexical
    }
    legs = Legs()
    for name, ranked, ms in sorted(results, key=lambda r: order[r[0]]):
        legs.lists[name] = ranked
        legs.ms[name] = ms
    return legs


def _hinted_filters(
    store: SearchIndex, project: str, plan: Plan, traces: Traces | None
) -> Filters | None:
    """Filters restricted to the hinted type(s); None without a hint for a searched object
    scope, or when no type matches the hint."""
    request = plan.request
    if not request.type_hint or Kind.OBJECT not in plan.scopes:
        return None
    wanted = normalize_tag(request.type_hint)
    found = store.object_types(project, trace=log_of(traces, "type_hint"))
    types = [t for t in found if normalize_tag(t) == wanted]
    if request.filters.object_types is not None:
        types = [t for t in types if t in request.filters.object_types]
    if not types:
        return None
    return request.filters.model_copy(update={"object_types": types})


def _seeds(
    plan: Plan, rows: Rows, ranked: Sequence[tuple[str, float]], trace: Trace | None
) -> dict[str, float]:
    """Object ids touched by the top hits (an object itself, a relationship's endpoints),
    each weighted by the best hit score that reached it."""
    seeds: dict[str, float] = {}
    rel_ids: list[tuple[str, float]] = []
    for value, score in ranked[: plan.seed_top]:
        kind, id = split_key(value)
        if kind is Kind.OBJECT:
            seeds[id] = max(seeds.get(id, 0.0), score)
        elif kind is Kind.RELATIONSHIP:
            rel_ids.append((id, score))
    if Kind.RELATIONSHIP not in plan.scopes:
        return seeds
    # read even when no relationship made the top: one call whatever the ranking
    rels = rows.relationships((i for i, _ in rel_ids), trace)
    for id, score in rel_ids:
        rel = rels.get(id)
        if rel is not None:
            for end in (rel.source_id, rel.target_id):
                seeds[end] = max(seeds.get(end, 0.0), score)
    return seeds


def graph_legs(
    store: SearchReads,
    plan: Plan,
    first_round: Sequence[tuple[str, float]],
    legs: Legs,
    rows: Rows,
    traces: Traces | None = None,
    embed: Callable[[str], Vector] | None = None,
    embed_many: Callable[[Sequence[str]], list[Vector]] | None = None,
) -> None:
    """BFS expansion or personalized PageRank from origins or the first round's hits, or
    relation paths from the objects the query names (see ``paths.py``).

    Args:
        store: The store searched.
        plan: The search plan (graph kind, depth, seeds, filters, scopes).
        first_round: The other legs' hits, fused, best first.
        legs: Where the graph legs are recorded.
        rows: The search's rows; rows read here are kept for hydration.
        traces: Where the stage's statements go when the search is explained.
        embed: The query embedder, which scores relation paths (without one the paths
            leg finds nothing).
        embed_many: Embeds many relation texts at once (faster), when the embedder can.
    """
    request = plan.request
    started = time.perf_counter()
    trace = log_of(traces, "graph:" + request.graph)
    if request.graph == "paths":
        _paths(store, plan, embed, embed_many, legs, started, rows, trace)
        return
    if request.bfs_origins:
        live = rows.objects(request.bfs_origins, trace)
        seeds = {i: 1.0 for i in request.bfs_origins if i in live}
    else:
        seeds = _seeds(plan, rows, first_round, trace)
    if not seeds:
        legs.add("graph:" + request.graph, [], started)
        return
    if request.graph == "bfs":
        _bfs(store, plan, seeds, legs, started, rows, trace)
    else:
        _ppr(store, plan, seeds, legs, started, rows, trace)


def _bfs(
    store: GraphReads,
    plan: Plan,
    seeds: dict[str, float],
    legs: Legs,
    started: float,
    rows: Rows,
    trace: Trace | None,
) -> None:
    request = plan.request
    found = store.neighbors(
        rows.project,
        list(seeds),
        depth=request.graph_depth,
        relationship_types=request.filters.relationship_types,
        as_of=request.filters.as_of,
        trace=trace,
    )
    allowed = allowed_objects(rows, request, [n.id for n in found], trace)
    if plan.graph_objects:
        objects = [(key(Kind.OBJECT, n.id), 1.0 / n.depth) for n in found if n.id in allowed]
        legs.add("graph:bfs", objects, started)
    if plan.graph_relationships:
        keep = _allowed_relationships(rows, request, [n.via for n in found], trace)
        rels = [(key(Kind.RELATIONSHIP, n.via), 1.0 / n.depth) for n in found if n.via in keep]
        legs.add("graph:bfs:relationships", list(dict.fromkeys(rels)), started)


def allowed_objects(
    rows: Rows, request: SearchRequest, ids: Sequence[str], trace: Trace | None
) -> set[str]:
    """Object ids passing the type, label and property filters (read through ``rows``)."""
    f = request.filters
    if not (f.object_types or f.labels or f.properties):
        return set(ids)
    return {
        o.id
        for o in rows.objects(ids, trace).values()
        if (not f.object_types or o.type in f.object_types)
        and (not f.labels or set(f.labels) & set(o.labels))
        and (not f.properties or all(o.properties.get(k) == v for k, v in f.properties.items()))
    }


def _allowed_relationships(
    rows: Rows, request: SearchRequest, ids: Sequence[str], trace: Trace | None
) -> set[str]:
    """Relationship ids passing the property filter (types and validity are applied by
    the traversal itself)."""
    wanted = request.filters.properties
    if not wanted:
        return set(ids)
    return {
        r.id
        for r in rows.relationships(ids, trace).values()
        if all(r.properties.get(k) == v for k, v in wanted.items())
    }


def _ppr(
    store: GraphReads,
    plan: Plan,
    seeds: dict[str, float],
    legs: Legs,
    started: float,
    rows: Rows,
    trace: Trace | None,
) -> None:
    """HippoRAG-style propagation over the seeds' neighbourhood (bounded subgraph)."""
    request = plan.request
    frontier = set(seeds)
    edges: dict[str, tuple[str, str, float]] = {}
    for _ in range(request.graph_depth):
        batch = store.edges_among(
            rows.project,
            sorted(frontier),
            relationship_types=request.filters.relationship_types,
            as_of=request.filters.as_of,
            trace=trace,
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
    allowed = allowed_objects(rows, request, list(scores), trace)
    ranked = sorted(
        ((i, s) for i, s in scores.items() if i in allowed), key=lambda x: (-x[1], x[0])
    )[:500]
    if plan.graph_objects:
        legs.add("graph:ppr", [(key(Kind.OBJECT, i), s) for i, s in ranked], started)
    if plan.graph_relationships:
        rel_scores = sorted(
            ((rid, scores.get(s, 0.0) + scores.get(t, 0.0)) for rid, (s, t, _) in edges.items()),
            key=lambda x: (-x[1], x[0]),
        )[:500]
        keep = _allowed_relationships(rows, request, [r for r, _ in rel_scores], trace)
        legs.add(
            "graph:ppr:relationships",
            [(key(Kind.RELATIONSHIP, r), s) for r, s in rel_scores if s > 0 and r in keep],
            started,
        )


def _paths(
    store: SearchReads,
    plan: Plan,
    embed: Callable[[str], Vector] | None,
    embed_many: Callable[[Sequence[str]], list[Vector]] | None,
    legs: Legs,
    started: float,
    rows: Rows,
    trace: Trace | None,
) -> None:
    """The objects at the ends of the relation paths that best match the query."""
    request = plan.request
    if embed is None:
        objects: list[tuple[str, float]] = []
        rels: list[tuple[str, float]] = []
    else:
        found = walk_paths(
            store,
            rows.project,
            request.query,
            embed,
            depth=request.graph_depth,
            trace=trace,
            embed_many=embed_many,
        )
        allowed = allowed_objects(rows, request, [i for i, _ in found.objects], trace)
        objects = [(key(Kind.OBJECT, i), s) for i, s in found.objects if i in allowed]
        keep = _allowed_relationships(rows, request, [r for r, _ in found.relationships], trace)
        rels = [(key(Kind.RELATIONSHIP, r), s) for r, s in found.relationships if r in keep]
    if plan.graph_objects:
        legs.add("graph:paths", objects, started)
    if plan.graph_relationships:
        legs.add("graph:paths:relationships", rels, started)


def _run_scope(given: LegInput) -> None:
    found = scope_legs(
        given.store,
        given.project,
        given.plan,
        given.vectors,
        given.traces,
        given.under_way,
        given.rows,
    )
    given.legs.lists.update(found.lists)
    given.legs.ms.update(found.ms)


def _run_graph(given: LegInput) -> None:
    graph_legs(
        given.store,
        given.plan,
        given.first_round,
        given.legs,
        given.rows,
        given.traces,
        given.embed,
        given.embed_many,
    )


def _graph_selected(plan: Plan) -> bool:
    """BFS, PageRank or relation paths; on a graph built from documents not paths: their
    beam over the extracted relationships ranks no passages (the ``graph:passages``
    leg does) and cost MuSiQue's multi_hop search 60–400 ms (docs/benchmarks.md
    "passages"), while the contexts built without its facts held the answer as often
    or more (docqa, 25 questions a set)."""
    if not plan.graph or plan.request.graph not in ("bfs", "ppr", "paths"):
        return False
    return not (plan.documents and plan.request.graph == "paths")


LEGS.register(
    "scope",
    Leg(
        "scope",
        "retrieve",
        (Kind.OBJECT, Kind.RELATIONSHIP, Kind.CHUNK),
        selected=lambda plan: True,
        run=_run_scope,
        needs=frozenset({"query_vector", "names", "index"}),
    ),
)
LEGS.register(
    "graph",
    Leg(
        "graph",
        "expand",
        (Kind.OBJECT, Kind.RELATIONSHIP),
        selected=_graph_selected,
        run=_run_graph,
        needs=frozenset({"first_round", "graph", "embedder"}),
    ),
)
