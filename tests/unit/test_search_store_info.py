"""A long-running engine notices another process switching the store's model: the store
info it caches is read again once stale, and at once when a search meets vectors of
other dimensions (``search/service.py``)."""

from __future__ import annotations

from typing import Any

import pytest

from kgsearch.engine import Engine
from kgsearch.errors import ConfigError
from kgsearch.model import ObjectIn
from kgsearch.search.service import INFO_TTL_SECONDS, StoreInfoCache
from kgsearch.store.base import Store
from kgsearch.testing import FakeEmbedder


class OtherModel(FakeEmbedder):
    """Another model of the same dimensions."""

    @property
    def model_id(self) -> str:
        return f"other:{self.dims}"


class Clock:
    """A monotonic clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture(autouse=True)
def uncached_postgres_meta(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """The PostgreSQL store itself remembers metadata for 2 s of real time; these tests
    move only the engine's clock, so there it reads the metadata table every time."""
    if request.getfixturevalue("store_factory").backend == "postgres":
        monkeypatch.setattr("kgsearch.store.postgres.connection._META_TTL_SECONDS", 0.0)


def server(store: Store, clock: Clock) -> Engine:
    """An engine that has searched once (so it holds the store info), on a filled store."""
    engine = Engine(store, embedder=FakeEmbedder(32))
    engine._info.clock = clock
    engine.add_objects([ObjectIn(type="Person", key=k, properties={"name": k}) for k in "abc"])
    engine.embed_pending()
    engine.search("a")
    return engine


def switched(store_factory: Any, store: Store, embedder: FakeEmbedder) -> None:
    """Another process re-embeds the store with ``embedder``."""
    with Engine(store_factory.reopen(store), embedder=FakeEmbedder(32)) as other:
        other.switch_model(embedder)
        other.embed_pending()


def test_a_switch_to_a_model_of_the_same_dims_shows_once_the_info_is_stale(
    store_factory: Any, store: Store
) -> None:
    clock = Clock()
    engine = server(store, clock)
    switched(store_factory, store, OtherModel(32))

    clock.now += INFO_TTL_SECONDS - 0.1
    engine.search("a")  # the info is still trusted
    clock.now += 0.1
    with pytest.raises(ConfigError, match="embedded with other:32, but the engine uses fake:32"):
        engine.search("a")


def test_a_switch_to_other_dims_shows_at_once(store_factory: Any, store: Store) -> None:
    engine = server(store, Clock())
    switched(store_factory, store, FakeEmbedder(16))

    with pytest.raises(ConfigError, match="embedded with fake:16, but the engine uses fake:32"):
        engine.search("a")


def test_the_info_is_read_again_while_nothing_is_embedded(store: Store) -> None:
    clock = Clock()
    cache = StoreInfoCache(store, clock=clock)
    assert cache.get().embedding_model is None
    store.set_embedding_model("fake:32", 32)

    assert cache.get().embedding_model == "fake:32"


def test_forget_reads_the_info_again(store: Store) -> None:
    cache = StoreInfoCache(store, ttl=float("inf"))
    store.set_embedding_model("fake:32", 32)
    first = cache.get()
    store.set_embedding_model("fake:16", 16, replace=True)

    assert cache.get() is first
    cache.forget()
    assert cache.get().embedding_model == "fake:16"
