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
from kgsearch.model import ChunkIn, Kind, MentionIn, ObjectIn, ObjectRef, RelationshipIn, SourceIn
from kgsearch.search import passage_graph
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


def test_warm_reads_a_document_graphs_passage_graph(tmp_path: Path) -> None:
    engine = Engine(SQLiteStore(str(tmp_path / "docs.db")), embedder=FakeEmbedder(16))
    try:
        engine.add_objects([ObjectIn(type="person", key=k) for k in ("ada", "bob")])
        engine.add_sources([SourceIn(id="s")])
        engine.add_chunks([ChunkIn(id="c1", text="Ada met Bob.", source_id="s")])
        refs = [ObjectRef(type="person", key=k) for k in ("ada", "bob")]
        engine.add_mentions([MentionIn(chunk_id="c1", source_id="s", object=r) for r in refs])
        engine.embed_pending()

        engine.warm(freeze=False)

        # held: the first multi_hop search finds it and reads nothing
        held = passage_graph._cache.get(engine.store, {}).get(engine.project)
        assert held is not None and held.graph.chunks == ["c1"]
    finally:
        engine.close()


def test_warm_reads_no_passage_graph_without_documents(engine: Engine) -> None:
    engine.warm(freeze=False)

    assert passage_graph._cache.get(engine.store, {}).get(engine.project) is None
