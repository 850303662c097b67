"""A SQLite search reads every freshness mark it checks (epochs, the BM25 index's
structure records) in one statement, and still sees every write committed before it,
whichever connection or process made it."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import nullcontext
from pathlib import Path
from typing import Any

import pytest

import kgsearch.search.pipeline as pipeline
from kgsearch.engine import Engine
from kgsearch.model import ObjectIn, RelationshipIn
from kgsearch.search.request import SearchRequest
from kgsearch.store.sqlite import SQLiteStore
from kgsearch.store.sqlite.connection import Connection
from kgsearch.testing import FakeEmbedder


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[Engine]:
    engine = Engine(SQLiteStore(str(tmp_path / "kg.db")), embedder=FakeEmbedder(16))
    objects = engine.add_objects(
        [ObjectIn(type="Thing", key=k, properties={"name": k}) for k in ("alpha", "bravo")]
    )
    engine.add_relationships(
        [RelationshipIn(type="near", source=objects[0].id, target=objects[1].id)]
    )
    engine.embed_pending()
    yield engine
    engine.close()


def _marks_reads(engine: Engine, monkeypatch: pytest.MonkeyPatch) -> int:
    """Statements one search runs that read ``meta`` (the epochs), in its own thread
    and the leg workers (not the background reads of the held BM25 postings)."""
    statements: list[str] = []
    real = Connection._run

    def run(self: Connection, sql: str, params: Any, plain: bool = False) -> Any:
        if not threading.current_thread().name.startswith("kgsearch-held-bm25"):
            statements.append(sql)
        return real(self, sql, params, plain)

    monkeypatch.setattr(Connection, "_run", run)
    engine.search(SearchRequest(query="alpha near bravo", limit=5))
    monkeypatch.setattr(Connection, "_run", real)
    return sum("FROM meta" in s for s in statements)


def test_a_search_reads_its_marks_in_one_statement(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine.search(SearchRequest(query="warm", limit=5))
    assert _marks_reads(engine, monkeypatch) == 1
    # without the search's read scope each check reads on its own
    monkeypatch.setattr(pipeline, "read_scope", nullcontext)
    assert _marks_reads(engine, monkeypatch) > 1


def test_a_write_of_another_connection_between_searches_is_seen(engine: Engine) -> None:
    before = engine.search(SearchRequest(query="charlie", limit=5, result_types="graph"))
    assert "charlie" not in {getattr(r, "key", None) for r in before.results}
    store: Any = engine.store
    other = Engine(SQLiteStore(store.path), embedder=FakeEmbedder(16))
    other.add_objects([ObjectIn(type="Thing", key="charlie", properties={"name": "charlie"})])
    other.embed_pending()
    other.close()
    after = engine.search(SearchRequest(query="charlie", limit=5, result_types="graph"))
    assert "charlie" in {getattr(r, "key", None) for r in after.results}
