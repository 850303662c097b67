"""Search legs as declared parts: a leg is a value in the :data:`LEGS` registry.

A :class:`Leg` says what it is (name, the scopes it ranks, its default fusion weight,
what it needs), when it runs (its stage) and whether a plan selects it; its ``run``
does the work on a :class:`LegInput`. The pipeline runs whatever the registry holds,
stage by stage, with no case per leg family:

- ``retrieve``: the first round, run together (``legs.py``: the vector, BM25 and name
  legs of each scope); it calls :meth:`LegInput.under_way` once its legs are started.
- ``beside``: started then, beside the first round (the anchored leg); ``run`` returns
  what waits for it and records it once the first round is done.
- ``expand``: after the first round is fused (``LegInput.first_round``), in registry
  order (graph legs, query modes, passages).

A new leg is a module that registers one (``LEGS.register``), declared in
:data:`kgsearch.registry.BUILTINS`. ``Legs`` and the ``kind:id`` keys live here, the
floor every leg module stands on.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol

from kgsearch.model import Kind
from kgsearch.registry import Registry
from kgsearch.search.plan import Plan, Vector
from kgsearch.search.rows import Rows
from kgsearch.search.statements import Traces
from kgsearch.store.base import GraphReads, Lifecycle, SearchIndex

__all__ = [
    "LEGS",
    "GraphSearch",
    "Leg",
    "LegInput",
    "Legs",
    "Need",
    "Prefetch",
    "SearchReads",
    "Stage",
    "default_weights",
    "key",
    "prefetches",
    "run_legs",
    "scaled_lists",
    "split_key",
]

Stage = Literal["retrieve", "beside", "expand"]
Need = Literal["query_vector", "embedder", "names", "first_round", "graph", "index"]
"""What a leg uses: the query vectors, the query embedder, the names the query gives,
the first round's fused hits, the store's graph reads, the store's search index."""


class GraphSearch(GraphReads, SearchIndex, Protocol):
    """The graph reads and the search index (name lookups and edges, as relation
    paths and the anchored leg use them)."""


class SearchReads(GraphSearch, Lifecycle, Protocol):
    """What a search reads: the graph, the search index, and whether the caller's own
    write transaction is open (its legs then run in the calling thread)."""


# Each kind's key prefix, and the kinds by value: a search makes and splits a few
# hundred keys, and an enum's value and its constructor are slow next to a dict.
_PREFIX = {k: f"{k.value}:" for k in Kind}
_KINDS = {k.value: k for k in Kind}


def key(kind: Kind, id: str) -> str:
    """The fusion key of a row."""
    return f"{_PREFIX[kind]}{id}"


def split_key(value: str) -> tuple[Kind, str]:
    """Inverse of :func:`key`."""
    kind, _, id = value.partition(":")
    found = _KINDS.get(kind)
    return (Kind(kind) if found is None else found), id


@dataclass
class Legs:
    """Ranked lists per leg name, with timings for metadata/debug, and the per-query
    weight multipliers of the lists whose leg declares them (:attr:`Leg.scales`)."""

    lists: dict[str, list[tuple[str, float]]] = field(default_factory=dict)
    ms: dict[str, float] = field(default_factory=dict)
    multipliers: dict[str, float] = field(default_factory=dict)

    def add(
        self, name: str, ranked: list[tuple[str, float]], started: float, multiplier: float = 1.0
    ) -> None:
        """Record one leg's ranked list, how long it took and, when it is not 1, how much
        more (or less) it weighs in fusion for this query."""
        self.lists[name] = ranked
        self.ms[name] = (time.perf_counter() - started) * 1000
        if multiplier != 1.0:
            self.multipliers[name] = multiplier


@dataclass
class LegInput:
    """What a leg may use, and where it records its ranked lists.

    Attributes:
        store: The store searched.
        project: The project searched.
        plan: The search plan.
        rows: The search's rows (rows read here are kept for hydration).
        vectors: The query vector per scope (empty when nothing was embedded).
        legs: Where legs record their ranked lists.
        traces: Where each leg's statements go when the search is explained.
        embed: The query embedder, when there is one.
        embed_many: Embeds many texts in one call, when the embedder can.
        prefetched: What a leg's prefetch worked out that its run uses, by leg name
            (the anchored leg links the query's names once a search).
        first_round: The first round's hits, fused, best first (set before ``expand``).
    """

    store: SearchReads
    project: str
    plan: Plan
    rows: Rows
    vectors: Mapping[Kind, Vector | None]
    legs: Legs
    traces: Traces | None = None
    embed: Callable[[str], Vector] | None = None
    embed_many: Callable[[Sequence[str]], list[Vector]] | None = None
    prefetched: dict[str, object] = field(default_factory=dict)
    first_round: Sequence[tuple[str, float]] = ()
    _waiting: list[Callable[[], None]] = field(default_factory=list)
    _beside: list[Leg] | None = None

    def under_way(self) -> None:
        """Start the selected ``beside`` legs (once): the first round is under way, so
        they queue behind it for connections and workers."""
        beside, self._beside = self._beside or [], []
        for leg in beside:
            wait = leg.run(self)
            if wait is not None:
                self._waiting.append(wait)


@dataclass(frozen=True)
class Prefetch:
    """Texts a leg will embed with the query embedder that it can tell before the query
    is embedded, and what keeps their vectors for it: the embed stage embeds them with
    the question in one model call rather than the leg making a second one mid-search.

    Attributes:
        texts: The texts, not embedded yet.
        keep: Takes their vectors, in order.
    """

    texts: Sequence[str]
    keep: Callable[[Sequence[Vector]], None]


@dataclass(frozen=True)
class Leg:
    """One search leg (or family of legs run together), as the registry holds it.

    Attributes:
        name: The registry name (a family's names its lists, e.g. ``graph:passages``).
        stage: When it runs (see the module docstring).
        scopes: The kinds of row it ranks.
        selected: Whether a plan runs it.
        run: Does the work, recording into ``LegInput.legs``; a ``beside`` leg returns
            what waits for it and records it, any other None.
        weights: Default fusion weights of the lists it records that do not weigh 1.0
            (a request's ``weights`` override them).
        needs: What it uses (documentation and the registry's listing).
        scales: The lists whose fusion weight the leg scales per query, by a multiplier
            it records with them (:meth:`Legs.add`): how sure it is of its ranking for
            this query. Fusion applies the multiplier on top of the weight, default or
            the request's; multipliers recorded for other lists are ignored.
        prefetch: Tells, before the query is embedded, texts the leg will embed
            (:class:`Prefetch`; None when there are none).
    """

    name: str
    stage: Stage
    scopes: tuple[Kind, ...]
    selected: Callable[[Plan], bool]
    run: Callable[[LegInput], Callable[[], None] | None]
    weights: Mapping[str, float] = field(default_factory=dict)
    needs: frozenset[Need] = frozenset()
    scales: frozenset[str] = frozenset()
    prefetch: Callable[[LegInput], Prefetch | None] | None = None


LEGS: Registry[Leg] = Registry("leg")
"""The search legs by name, in the order their stage runs them."""


def default_weights() -> dict[str, float]:
    """Every leg's default fusion weight that is not 1.0, by list name."""
    return {name: w for _, leg in LEGS.items() for name, w in leg.weights.items()}


def scaled_lists() -> frozenset[str]:
    """The lists whose leg declares a per-query weight multiplier (:attr:`Leg.scales`)."""
    return frozenset(name for _, leg in LEGS.items() for name in leg.scales)


def prefetches(given: LegInput) -> list[Prefetch]:
    """The texts the selected legs will embed that they can tell now (see :class:`Prefetch`)."""
    found = []
    for _, leg in LEGS.items():
        if leg.prefetch is not None and leg.selected(given.plan):
            wanted = leg.prefetch(given)
            if wanted is not None and wanted.texts:
                found.append(wanted)
    return found


def run_legs(given: LegInput, fuse: Callable[[], Sequence[tuple[str, float]]]) -> None:
    """Run the legs the plan selects, stage by stage, into ``given.legs``.

    Args:
        given: What the legs use.
        fuse: The first round fused, best first (called once, only when an
            ``expand`` leg that needs ``first_round`` is selected: it picks their
            seeds; the passage walk ranks from the legs' own lists).
    """
    chosen = [leg for _, leg in LEGS.items() if leg.selected(given.plan)]
    given._beside = [leg for leg in chosen if leg.stage == "beside"]
    try:
        for leg in chosen:
            if leg.stage == "retrieve":
                leg.run(given)
        given.under_way()  # no-op when a retrieve leg started them already
        for wait in given._waiting:
            wait()
    finally:
        # a beside leg's wait holds ``given`` (a reference cycle): let it go, so the
        # search's rows and lists are freed when the search ends, not by the cyclic
        # collector (on MetaQA ~300 objects a search were left to it, and its
        # collections cost ~0.4 ms of CPU a search)
        given._waiting.clear()
    expand = [leg for leg in chosen if leg.stage == "expand"]
    if any("first_round" in leg.needs for leg in expand):
        given.first_round = fuse()
    for leg in expand:
        leg.run(given)
