"""Read replicas on a real primary + streaming standby: which server answers a read,
a write replicated to the standby, fallback while the standby is down, and reading
one's own writes. Replay on the standby is paused to make replication lag as long as a
test needs: a read that misses a row the primary has was answered by the standby."""

from __future__ import annotations

import time
from collections.abc import Callable

import psycopg
import pytest
from pg_standby import StandbyPair, wait_replayed

from kgsearch.engine import Engine
from kgsearch.errors import ConfigError, StoreError
from kgsearch.model import ObjectIn
from kgsearch.store import connect
from kgsearch.store.postgres import PostgresStore, open_replica
from kgsearch.store.replicated import ReplicatedStore
from kgsearch.testing import FakeEmbedder

Urls = Callable[[], tuple[str, str]]


def people(*names: str) -> list[ObjectIn]:
    return [ObjectIn(type="Person", key=n, properties={"name": n}) for n in names]


def opened(urls: Urls, *, read_your_writes: bool) -> tuple[ReplicatedStore, Engine]:
    primary, standby = urls()
    store = connect(primary, read_url=standby, read_your_writes=read_your_writes)
    assert isinstance(store, ReplicatedStore)
    return store, Engine(store, embedder=FakeEmbedder(16))


def keys(engine: Engine) -> list[str]:
    return sorted(o.key for o in engine.list_rows("object", limit=100).items)


def test_reads_are_answered_by_the_standby(pair: StandbyPair, schema_urls: Urls) -> None:
    store, engine = opened(schema_urls, read_your_writes=False)
    engine.add_objects(people("ada"))
    wait_replayed(pair.primary_url, pair.standby_url)
    with pair.replay_paused():
        # written by another process's handle: this one's reads do not wait for it
        with Engine(PostgresStore(store.url), embedder=FakeEmbedder(16)) as other:
            other.add_objects(people("grace"))
        assert keys(engine) == ["ada"]
        assert sorted(o.key for o in Engine(store.primary).list_rows("object").items) == [
            "ada",
            "grace",
        ]
    assert store.served["replica"] >= 1
    store.close()


def test_a_write_on_the_primary_reaches_the_standby(pair: StandbyPair, schema_urls: Urls) -> None:
    store, engine = opened(schema_urls, read_your_writes=False)
    engine.add_objects(people("ada", "grace", "alan"))
    engine.embed_pending()
    lag = wait_replayed(pair.primary_url, pair.standby_url)
    assert lag < 5
    before = dict(store.served)
    hits = engine.search("grace", limit=3)
    assert '"grace"' in hits.results[0].model_dump_json()
    assert store.served["primary"] == before["primary"]
    assert store.served["replica"] > before["replica"]
    with psycopg.connect(pair.standby_url, autocommit=True) as conn:
        row = conn.execute("SELECT pg_is_in_recovery()").fetchone()
    assert row == (True,)
    store.close()


@pytest.mark.slow
def test_reads_fall_back_to_the_primary_while_the_standby_is_down(
    pair: StandbyPair, schema_urls: Urls
) -> None:
    store, engine = opened(schema_urls, read_your_writes=False)
    store.retry_seconds = 0.5
    engine.add_objects(people("ada", "grace"))
    wait_replayed(pair.primary_url, pair.standby_url)
    assert keys(engine) == ["ada", "grace"]
    pair.stop_standby()
    try:
        started = time.monotonic()
        assert keys(engine) == ["ada", "grace"]
        engine.add_objects(people("alan"))
        assert keys(engine) == ["ada", "alan", "grace"]
        assert time.monotonic() - started < 10
        assert store.fallbacks >= 1
        served = store.served["replica"]
        time.sleep(0.6)  # past retry_seconds: the replica is tried again, and fails again
        assert keys(engine) == ["ada", "alan", "grace"]
        assert store.served["replica"] == served
    finally:
        pair.start_standby()
    wait_replayed(pair.primary_url, pair.standby_url)
    time.sleep(0.6)
    assert keys(engine) == ["ada", "alan", "grace"]
    assert store.served["replica"] > served
    store.close()


def test_a_standby_down_at_start_is_opened_when_it_is_back(
    pair: StandbyPair, schema_urls: Urls
) -> None:
    primary, standby = schema_urls()
    pair.stop_standby()
    try:
        store = connect(primary, read_url=standby)
        assert isinstance(store, ReplicatedStore)
        store.retry_seconds = 0.2
        engine = Engine(store, embedder=FakeEmbedder(16))
        engine.add_objects(people("ada"))
        assert keys(engine) == ["ada"]
        assert store.served == {"replica": 0, "primary": store.served["primary"]}
    finally:
        pair.start_standby()
    wait_replayed(pair.primary_url, pair.standby_url)
    time.sleep(0.3)
    assert keys(engine) == ["ada"]
    assert store.served["replica"] >= 1
    store.close()


def test_read_your_writes_reads_the_primary_until_the_standby_caught_up(
    pair: StandbyPair, schema_urls: Urls
) -> None:
    store, engine = opened(schema_urls, read_your_writes=True)
    with pair.replay_paused():
        engine.add_objects(people("ada"))
        assert store.replica_position_pending is not None
        served = store.served["replica"]
        assert keys(engine) == ["ada"]
        assert store.served["replica"] == served
    wait_replayed(pair.primary_url, pair.standby_url)
    assert keys(engine) == ["ada"]
    assert store.served["replica"] == served + 1
    assert store.replica_position_pending is None
    store.close()


def test_reads_inside_a_write_transaction_go_to_the_primary(schema_urls: Urls) -> None:
    store, engine = opened(schema_urls, read_your_writes=False)
    with store.transaction():
        engine.add_objects(people("ada"))
        assert [
            o.key for o in store.get_objects("default", [engine.list_rows("object").items[0].id])
        ] == ["ada"]
    assert store.served["replica"] == 0
    store.close()


def test_the_standby_is_never_migrated(pair: StandbyPair, schema_urls: Urls) -> None:
    primary, standby = schema_urls()
    schema = primary.rsplit("=", 1)[1]
    with psycopg.connect(pair.primary_url, autocommit=True) as conn:
        # one migration short: opening with migrations would try to apply it
        conn.execute(
            f"DELETE FROM {schema}.migrations "
            f"WHERE name = (SELECT max(name) FROM {schema}.migrations)"
        )
    wait_replayed(pair.primary_url, pair.standby_url)
    with pytest.raises(StoreError):
        PostgresStore(standby).close()
    replica = open_replica(standby)
    assert replica.counts("default")["objects"] == 0
    replica.close()


def test_a_read_url_needs_postgresql_on_both_sides() -> None:
    with pytest.raises(ConfigError, match="needs PostgreSQL"):
        connect("sqlite:///x.db", read_url="postgresql://h/db")
    with pytest.raises(ConfigError, match="needs PostgreSQL"):
        connect("postgresql://h/db", read_url="sqlite:///x.db")


def test_a_read_url_must_name_the_same_schema() -> None:
    with pytest.raises(ConfigError, match="same schema"):
        connect("postgresql://h/db?schema=a", read_url="postgresql://h2/db?schema=b")
