"""The suite's fixtures, all built on the one fixture a store provides: ``store_factory``.

``store`` is a fresh store from the factory and ``engine`` an engine over it with a
deterministic :data:`~kgsearch.testing.conformance.builders.DIMS`-d fake embedder;
``two_projects`` and ``named`` fill it for the isolation and exact-name tests.
"""

from __future__ import annotations

from typing import Any

import pytest

from kgsearch.engine import Engine
from kgsearch.model import ChunkIn, MentionIn, ObjectIn, ObjectRef, SourceIn
from kgsearch.store.base import Store
from kgsearch.testing import FakeEmbedder
from kgsearch.testing.conformance.builders import DIMS, knows, person
from kgsearch.testing.stores import StoreFactory

__all__ = ["engine", "named", "store", "two_projects"]


@pytest.fixture
def store(store_factory: StoreFactory) -> Store:
    """A fresh, empty store of the backend under test."""
    return store_factory()


@pytest.fixture
def engine(store: Store) -> Engine:
    """An engine over ``store`` with a deterministic fake embedder."""
    return Engine(store, embedder=FakeEmbedder(DIMS))


@pytest.fixture
def two_projects(engine: Engine) -> dict[str, dict[str, Any]]:
    """The same graph in projects A and B; B's names all say 'Bravo'."""
    made: dict[str, dict[str, Any]] = {}
    for project, word in (("A", "Alpha"), ("B", "Bravo")):
        objects = engine.add_objects(
            [person(k, f"{word} {k}", team=word) for k in ("x", "y", "z")], project=project
        )
        rels = engine.add_relationships(
            [knows("x", "y"), knows("y", "z", "LIKES")], project=project
        )
        engine.add_sources([SourceIn(id="s1", title=f"{word} notes")], project=project)
        engine.add_chunks(
            [ChunkIn(id="c1", text=f"{word} chunk text", source_id="s1")], project=project
        )
        engine.add_mentions(
            [MentionIn(chunk_id="c1", object=ObjectRef(type="Person", key="x"))],
            project=project,
        )
        made[project] = {
            "objects": {o.key: o.id for o in objects},
            "relationships": [r.id for r in rels],
        }
    engine.embed_pending()
    return made


@pytest.fixture
def named(store: Store) -> dict[str, str]:
    """Objects named Benji (a movie and a person), two longer names, and one elsewhere."""
    engine = Engine(store, embedder=FakeEmbedder(32))
    objects = engine.add_objects(
        [
            ObjectIn(type="Movie", key="Benji"),
            ObjectIn(type="Person", key="Benji"),
            ObjectIn(type="Movie", key="For the Love of Benji"),
            ObjectIn(type="Movie", key="Gone"),
        ]
    )
    engine.add_objects([ObjectIn(type="Movie", key="Benji")], project="other")
    return {f"{o.type}:{o.key}": o.id for o in objects}
