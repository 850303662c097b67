"""``Engine.warm`` reads a SQLite store's BM25 postings before it returns (no
background read left to share the cores with the first searches) and, unless told
not to, leaves what it loaded out of the cyclic garbage collector."""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from kgsearch import Engine
from kgsearch.embed.fake import FakeEmbedder
from kgsearch.model import Kind, ObjectIn, ObjectRef, RelationshipIn
from kgsearch.store.sqlite import SQLiteStore


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[Engine]:
    engine = Engine(SQLiteStore(str(tmp_path / "kg.db")), embedder=FakeEmbedder(16))
    engine.add_objects(
        [ObjectIn(type="Film", key=f"f{i}", properties={"name": f"film {i}"}) for i in range(30)]
    )
    engine.add_relationships(
        [
            RelationshipIn(
                type="SEQUEL_OF",
                source=ObjectRef(type="Film", key=f"f{i}"),
                target=ObjectRef(type="Film", key=f"f{i + 1}"),
            )
            for i in range(29)
        ]
    )
    engine.embed_pending()
    yield engine
    engine.close()
    gc.unfreeze()


def test_warm_reads_the_postings_before_it_returns(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = engine.store
    assert isinstance(store, SQLiteStore)
    started: list[str] = []

    class Thread(threading.Thread):
        def start(self) -> None:
            started.append(self.name)
            super().start()

    monkeypatch.setattr(threading, "Thread", Thread)  # held_lexical starts its reads so

    engine.warm(freeze=False)

    assert "kgsearch-held-bm25" not in started  # read by warm, none left in the background
    held, db = store.lexical.held, store.db.reader()
    for kind in (Kind.OBJECT, Kind.RELATIONSHIP):
        found = held.fresh(db, kind, store.db.reader)
        assert found is not None and found[0].n_rows in (29, 30)


def test_warm_freezes_what_it_loaded_unless_told_not_to(engine: Engine) -> None:
    gc.unfreeze()
    engine.warm(freeze=False)
    assert gc.get_freeze_count() == 0

    engine.warm()

    assert gc.get_freeze_count() > 0
