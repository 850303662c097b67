"""Store metadata: the embedding model it was built with, meta values, migrations."""

from __future__ import annotations

import pytest

from kgsearch.engine import Engine
from kgsearch.errors import ConfigError, DimensionMismatch
from kgsearch.model import Kind
from kgsearch.store.base import Store, StoreInfo
from kgsearch.testing import FakeEmbedder
from kgsearch.testing.conformance.builders import random_objects, reopen
from kgsearch.testing.stores import StoreFactory


def test_fresh_store_info_has_no_embedding_model(store: Store) -> None:
    info = store.info()

    assert info == StoreInfo(
        url=store.url,
        schema_version=len(info.migrations),
        migrations=info.migrations,
        embedding_model=None,
        dims=None,
    )


def test_set_embedding_model_is_recorded_in_info(store: Store) -> None:
    store.set_embedding_model("fake:32", 32)
    store.set_embedding_model("fake:32", 32)

    info = store.info()
    assert (info.embedding_model, info.dims, info.distance) == ("fake:32", 32, "cosine")


def test_set_embedding_model_with_other_dims_raises_dimension_mismatch(store: Store) -> None:
    store.set_embedding_model("fake:32", 32)

    with pytest.raises(DimensionMismatch) as caught:
        store.set_embedding_model("fake:32", 16)

    assert caught.value.details == {"store_dims": 32, "embedder_dims": 16}
    assert (store.info().embedding_model, store.info().dims) == ("fake:32", 32)


def test_set_embedding_model_with_other_model_raises_config_error(store: Store) -> None:
    store.set_embedding_model("fake:32", 32)

    with pytest.raises(ConfigError) as caught:
        store.set_embedding_model("other:32", 32)

    assert caught.value.details == {"store_model": "fake:32", "embedder_model": "other:32"}
    assert (store.info().embedding_model, store.info().dims) == ("fake:32", 32)


def test_replacing_the_model_makes_every_row_pending(engine: Engine) -> None:
    engine.add_objects(random_objects(5))
    engine.embed_pending()

    engine.store.set_embedding_model("other:16", 16, replace=True)

    assert (engine.store.info().embedding_model, engine.store.info().dims) == ("other:16", 16)
    rows = engine.list_rows("object").items
    assert [(o.embedding.status, o.embedding.embedded_text) for o in rows] == [
        ("pending", None)
    ] * 5
    assert (
        engine.store.vector_search(
            "default", Kind.OBJECT, FakeEmbedder(16).embed_query("apple"), limit=5
        )
        == []
    )


def test_meta_values_round_trip(store: Store) -> None:
    assert store.get_meta("color") is None

    store.set_meta("color", "blue")
    store.set_meta("color", "green")

    assert store.get_meta("color") == "green"


def test_migrations_are_recorded_and_not_applied_twice(store: Store) -> None:
    migrations = store.info().migrations

    assert migrations[0] == "m001_create_graph"
    assert list(migrations) == sorted(set(migrations))
    assert store.migrate() == []
    assert store.info().migrations == migrations
    assert store.info().schema_version == len(migrations)


def test_reopening_a_store_applies_no_migration_and_keeps_data(
    store_factory: StoreFactory, engine: Engine
) -> None:
    engine.add_objects(random_objects(3))
    engine.embed_pending()
    store = engine.store

    again = reopen(store_factory, store)

    assert again.migrate() == []
    assert again.info() == store.info()
    assert again.counts("default") == store.counts("default")
    assert again.info().embedding_model == "fake:32"
