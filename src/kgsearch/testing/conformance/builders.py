"""Rows and graphs the conformance tests build, and the re-open helper they share.

Rows are built through the :class:`~kgsearch.engine.Engine` where that is the
convenient way to get ids and embedding texts; the tests then assert on what the
store persists and returns.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from kgsearch.engine import Engine
from kgsearch.model import Kind, ObjectIn, ObjectRef, RelationshipIn
from kgsearch.store.base import Store
from kgsearch.store.common import TEXT_ROW_KINDS
from kgsearch.testing.oracles import Edge
from kgsearch.testing.stores import StoreFactory

DIMS = 32
"""Dimensions of the fake embedder of the ``engine`` fixture."""

GRAPH_EDGES = [
    ("a", "b", "KNOWS"),
    ("b", "c", "KNOWS"),
    ("c", "d", "LIKES"),
    ("d", "a", "KNOWS"),
    ("c", "e", "KNOWS"),
    ("e", "f", "LIKES"),
    ("f", "g", "KNOWS"),
    ("g", "e", "LIKES"),
    ("h", "a", "LIKES"),
    ("b", "b", "KNOWS"),
]
"""(source key, target key, type) of the small graph :func:`build_graph` writes."""

WORDS = [
    "apple",
    "banana",
    "cherry",
    "date",
    "elder",
    "fig",
    "grape",
    "honeydew",
    "kiwi",
    "lemon",
    "mango",
]
"""The vocabulary of :func:`random_objects`' names."""


def person(key: str, name: str | None = None, **properties: Any) -> ObjectIn:
    """A ``Person`` object named after its key unless ``name`` is given."""
    props = {"name": name or key.title(), **properties}
    return ObjectIn(type="Person", key=key, properties=props)


def knows(source: str, target: str, type_: str = "KNOWS") -> RelationshipIn:
    """A relationship between two ``Person`` keys."""
    return RelationshipIn(
        type=type_,
        source=ObjectRef(type="Person", key=source),
        target=ObjectRef(type="Person", key=target),
    )


def ids(hits: list[tuple[str, float]]) -> list[str]:
    """The ids of a ranked ``(id, score)`` list, in order."""
    return [id_ for id_, _ in hits]


def all_ids(store: Store, project: str, kind: Any) -> list[str]:
    """The ids of every live row of one kind, in listing order."""
    return [row.id for row in store.list_rows(project, kind, limit=10_000).items]


def build_graph(engine: Engine, project: str = "default") -> tuple[dict[str, str], list[Edge]]:
    """Write :data:`GRAPH_EDGES` (and a lonely object); returns ids by key and the edges."""
    keys = sorted({k for s, t, _ in GRAPH_EDGES for k in (s, t)} | {"lonely"})
    objects = engine.add_objects([person(k) for k in keys], project=project)
    by_key = {o.key: o.id for o in objects}
    rels = engine.add_relationships([knows(s, t, ty) for s, t, ty in GRAPH_EDGES], project=project)
    edges = [(r.id, r.type, r.source_id, r.target_id) for r in rels]
    return by_key, edges


def random_objects(n: int, seed: int = 7) -> list[ObjectIn]:
    """``n`` objects of three types with random names, colours and labels (seeded)."""
    rng = random.Random(seed)
    objects = []
    for i in range(n):
        words = rng.sample(WORDS, rng.randint(1, 4))
        objects.append(
            ObjectIn(
                type=rng.choice(["Fruit", "Tree", "Shop"]),
                key=f"k{i}",
                properties={"name": " ".join(words), "color": rng.choice(["red", "green"])},
                labels=rng.sample(["fresh", "dried", "frozen"], rng.randint(0, 2)),
            )
        )
    return objects


def embedded_texts(store: Store, project: str, kind: Kind) -> dict[str, str]:
    """The embedded text of every row of one kind, checking that all are embedded."""
    rows: list[Any] = store.list_rows(project, TEXT_ROW_KINDS[kind], limit=10_000).items
    texts = {}
    for row in rows:
        assert row.embedding.status == "embedded"
        assert row.embedding.embedded_text == row.embedding.text
        texts[row.id] = row.embedding.text
    return texts


def reopen(store_factory: StoreFactory, store: Store) -> Store:
    """A second handle on ``store``'s database; skips the test for non-persistent stores."""
    if not store_factory.persistent:
        pytest.skip("this store cannot be re-opened")
    return store_factory.reopen(store)
