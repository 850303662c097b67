"""How ReplicatedStore routes calls, without servers: SQLite files stand in for the
primary and the replica (two files, so which one answered shows in what a read
returns), a scripted clock for the WAL positions."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from kgsearch.engine import Engine
from kgsearch.errors import StoreError
from kgsearch.model import ObjectIn
from kgsearch.store import connect
from kgsearch.store.base import Store
from kgsearch.store.replicated import ReplicatedStore
from kgsearch.testing import FakeEmbedder


class Clock:
    """WAL positions as counters: each write advances the primary; the replica has
    replayed what ``replayed_to`` says."""

    def __init__(self) -> None:
        self.position = 0
        self.replayed_to = 0
        self.asked = 0

    def written(self, primary: Store) -> str:
        self.position += 1
        return str(self.position)

    def replayed(self, replica: Store, position: str) -> bool:
        self.asked += 1
        return self.replayed_to >= int(position)


class Broken:
    """A replica whose every call fails as a server that went away."""

    url = "postgresql://replica"

    def __getattr__(self, name: str) -> Any:
        def fail(*args: Any, **kwargs: Any) -> Any:
            raise StoreError("server closed the connection unexpectedly")

        return fail

    def close(self) -> None:
        pass


def people(*names: str) -> list[ObjectIn]:
    return [ObjectIn(type="Person", key=n, properties={"name": n}) for n in names]


@pytest.fixture
def stores(tmp_path: Path) -> tuple[Store, Store]:
    primary, replica = connect(str(tmp_path / "p.db")), connect(str(tmp_path / "r.db"))
    Engine(replica, embedder=FakeEmbedder(8)).add_objects(people("on-replica"))
    return primary, replica


def keys(store: Store) -> list[str]:
    return sorted(o.key for o in store.list_rows("default", "object").items)


def test_every_capability_of_the_store_protocol_is_routed(stores: tuple[Store, Store]) -> None:
    protocols = [c for c in Store.__mro__ if c.__module__.startswith("kgsearch.store")]
    members = {
        name
        for cls in protocols
        for name in [*vars(cls), *getattr(cls, "__annotations__", {})]
        if not name.startswith("_")
    }
    assert len(members) > 70
    store = ReplicatedStore(stores[0], lambda: stores[1])
    assert sorted(m for m in members if not hasattr(store, m)) == []


def test_reads_go_to_the_replica_and_writes_to_the_primary(stores: tuple[Store, Store]) -> None:
    primary, replica = stores
    store = ReplicatedStore(primary, lambda: replica)
    store.set_meta("written", "here")
    assert (primary.get_meta("written"), replica.get_meta("written")) == ("here", None)
    Engine(primary, embedder=FakeEmbedder(8)).add_objects(people("on-primary"))
    assert keys(store) == ["on-replica"]
    assert store.served == {"replica": 1, "primary": 0}


def test_reads_inside_a_transaction_go_to_the_primary(stores: tuple[Store, Store]) -> None:
    primary, replica = stores
    store = ReplicatedStore(primary, lambda: replica, read_your_writes=False)
    with store.transaction():
        assert keys(store) == []
    assert store.served == {"replica": 0, "primary": 1}


def test_a_failing_replica_read_is_answered_by_the_primary(tmp_path: Path) -> None:
    primary = connect(str(tmp_path / "p.db"))
    store = ReplicatedStore(primary, lambda: Broken(), retry_seconds=60)
    assert keys(store) == []
    assert keys(store) == []
    assert store.fallbacks == 1  # the second read did not try the replica again
    assert store.served == {"replica": 0, "primary": 2}


def test_a_replica_that_cannot_be_opened_is_tried_again_after_the_pause(
    stores: tuple[Store, Store],
) -> None:
    primary, replica = stores
    attempts: list[int] = []

    def open_replica() -> Store:
        attempts.append(1)
        if len(attempts) == 1:
            raise StoreError("cannot open PostgreSQL store: connection refused")
        return replica

    store = ReplicatedStore(primary, open_replica, retry_seconds=0.0)
    assert keys(store) == []
    assert keys(store) == ["on-replica"]
    assert len(attempts) == 2


def test_read_your_writes_waits_for_the_replica_to_replay_the_write(
    stores: tuple[Store, Store],
) -> None:
    primary, replica = stores
    clock = Clock()
    store = ReplicatedStore(primary, lambda: replica, clock=clock)
    Engine(store, embedder=FakeEmbedder(8)).add_objects(people("on-primary"))
    assert store.replica_position_pending == str(clock.position)
    assert keys(store) == ["on-primary"]  # the replica has not replayed it
    clock.replayed_to = clock.position
    assert keys(store) == ["on-replica"]
    assert store.replica_position_pending is None
    asked = clock.asked
    assert keys(store) == ["on-replica"]
    assert clock.asked == asked  # caught up: no more position queries


def test_a_write_inside_a_transaction_notes_its_position_once_committed(
    stores: tuple[Store, Store],
) -> None:
    primary, replica = stores
    clock = Clock()
    store = ReplicatedStore(primary, lambda: replica, clock=clock)
    with store.transaction():
        store.set_meta("k", "v")
        assert store.replica_position_pending is None
    assert store.replica_position_pending is not None


def test_primary_reads_do_not_start_read_your_writes(stores: tuple[Store, Store]) -> None:
    primary, replica = stores
    clock = Clock()
    store = ReplicatedStore(primary, lambda: replica, clock=clock)
    store.get_meta("dims")
    store.embedding_counts(None)
    assert store.replica_position_pending is None


def test_without_read_your_writes_only_the_writing_thread_waits(
    stores: tuple[Store, Store],
) -> None:
    primary, replica = stores
    clock = Clock()
    store = ReplicatedStore(primary, lambda: replica, clock=clock, read_your_writes=False)
    written = Engine(store, embedder=FakeEmbedder(8)).add_objects(people("on-primary"))
    assert [o.key for o in written] == ["on-primary"]  # read back from the primary
    assert keys(store) == ["on-primary"]
    elsewhere: list[list[str]] = []
    other = threading.Thread(target=lambda: elsewhere.append(keys(store)))
    other.start()
    other.join()
    assert elsewhere == [["on-replica"]]


def test_a_write_whose_position_cannot_be_read_still_succeeds(
    stores: tuple[Store, Store],
) -> None:
    primary, replica = stores

    class Unreadable(Clock):
        def written(self, primary: Store) -> str:
            raise StoreError("server closed the connection unexpectedly")

    store = ReplicatedStore(primary, lambda: replica, clock=Unreadable(), retry_seconds=60)
    store.set_meta("k", "v")
    assert primary.get_meta("k") == "v"
    assert keys(store) == []  # the primary answers until the pause ends
    assert store.served == {"replica": 0, "primary": 1}
