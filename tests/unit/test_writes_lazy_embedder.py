"""Writes that have nothing to write, or are refused, never load the embedder.

The embedder (the bundled model, or a remote provider) is created on first use; a
write needs it only for the text rules of rows it actually writes.
"""

from __future__ import annotations

import pytest

from kgsearch.embed.base import Embedder
from kgsearch.engine import Engine
from kgsearch.errors import NotFound
from kgsearch.model import ObjectRef, RelationshipIn
from kgsearch.store.base import Store


def _refusing_factory() -> Embedder:
    raise AssertionError("the embedder was loaded")


def test_empty_writes_do_not_load_the_embedder(store: Store) -> None:
    engine = Engine(store, embedder_factory=_refusing_factory)
    assert engine.add_objects([]) == []
    assert engine.add_relationships([]) == []
    assert engine.add_chunks([]) == []


def test_a_relationship_to_a_missing_object_is_refused_before_loading_it(store: Store) -> None:
    engine = Engine(store, embedder_factory=_refusing_factory)
    ghost = ObjectRef(type="Person", key="nobody")
    with pytest.raises(NotFound):
        engine.add_relationships([RelationshipIn(type="KNOWS", source=ghost, target=ghost)])
