"""SQLite key look-ups: on the calling thread's own connection, never behind a write."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from kgsearch.engine import Engine
from kgsearch.store.sqlite import SQLiteStore


def test_a_key_is_found_while_a_write_holds_the_connection(tmp_path: Path) -> None:
    # a REST server checks keys on its event loop: a write holding the store's
    # connection (and its lock) must not stall it
    store = SQLiteStore(str(tmp_path / "kg.db"))
    _, record = Engine(store).create_api_key("alpha", "read")
    holding, release = threading.Event(), threading.Event()

    def write() -> None:
        with store.transaction():
            holding.set()
            release.wait(30)

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    assert holding.wait(30)
    found: list[Any] = []
    reader = threading.Thread(target=lambda: found.append(store.find_api_key(record.id)))
    reader.start()
    reader.join(10)
    waited = reader.is_alive()
    release.set()
    writer.join(30)
    reader.join(30)
    store.close()
    assert not waited
    assert [f[0] for f in found] == [record]


def test_a_revocation_is_seen_at_once_by_the_same_thread(tmp_path: Path) -> None:
    store = SQLiteStore(str(tmp_path / "kg.db"))
    engine = Engine(store)
    _, record = engine.create_api_key("alpha", "read")
    before = store.find_api_key(record.id)

    engine.revoke_api_key(record.id)

    after = store.find_api_key(record.id)
    store.close()
    assert before is not None and after is not None
    assert (before[0].active, after[0].active) == (True, False)
