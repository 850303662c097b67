"""SQLite keeps decoded rows between reads while their kind's write epoch holds."""

from __future__ import annotations

from pathlib import Path

from kgsearch.engine import Engine
from kgsearch.model import ObjectIn
from kgsearch.search.request import SearchRequest
from kgsearch.store.sqlite import SQLiteStore
from kgsearch.store.sqlite.row_cache import RowCache
from kgsearch.testing import FakeEmbedder


def _engine(tmp_path: Path) -> tuple[Engine, SQLiteStore]:
    store = SQLiteStore(str(tmp_path / "kg.db"))
    engine = Engine(store, embedder=FakeEmbedder(16))
    engine.add_objects(
        [
            ObjectIn(type="Thing", key="alpha", properties={"colour": "red"}),
            ObjectIn(type="Thing", key="bravo", properties={"colour": "green"}),
        ]
    )
    engine.embed_pending()
    return engine, store


def _fields(engine: Engine, query: str) -> dict[str, object]:
    found = engine.search(SearchRequest(query=query, limit=5))
    return {r.key: r.fields for r in found.results if r.type == "graph"}


def test_a_repeated_search_takes_its_rows_from_the_cache(tmp_path: Path) -> None:
    engine, store = _engine(tmp_path)
    _fields(engine, "alpha")
    hits = store.row_cache.hits
    assert _fields(engine, "alpha")["alpha"] == {"colour": "red"}
    assert store.row_cache.hits > hits
    engine.close()


def test_a_write_between_two_searches_is_seen(tmp_path: Path) -> None:
    engine, _ = _engine(tmp_path)
    assert _fields(engine, "alpha")["alpha"] == {"colour": "red"}
    engine.add_objects([ObjectIn(type="Thing", key="alpha", properties={"colour": "blue"})])
    assert _fields(engine, "alpha")["alpha"] == {"colour": "blue"}
    engine.close()


def test_a_delete_between_two_reads_is_seen(tmp_path: Path) -> None:
    engine, store = _engine(tmp_path)
    ids = [o.id for o in store.list_rows("default", "object").items]
    assert len(store.get_objects("default", ids)) == 2
    store.delete("default", "object", ids[:1])
    assert [o.id for o in store.get_objects("default", ids)] == ids[1:]
    engine.close()


def test_vectors_forgotten_for_a_new_model_are_seen(tmp_path: Path) -> None:
    engine, store = _engine(tmp_path)
    ids = [o.id for o in store.list_rows("default", "object").items]
    assert all(o.embedding.embedded_text for o in store.get_objects("default", ids))
    store.set_embedding_model("another:16", 16, replace=True)  # moves no epoch
    assert [o.embedding.embedded_text for o in store.get_objects("default", ids)] == [None, None]
    engine.close()


def test_values_read_at_an_epoch_the_cache_has_left_are_not_held() -> None:
    cache = RowCache()
    assert cache.get("object", "2", [("p", "a")]) == {}
    cache.put("object", "1", [(("p", "a"), "row")])  # read before the write that moved it
    assert cache.get("object", "2", [("p", "a")]) == {}


def test_the_oldest_values_go_first_beyond_the_size() -> None:
    cache = RowCache(size=2)
    cache.get("object", "1", [])
    cache.put("object", "1", [(("p", i), i) for i in "abc"])
    assert cache.get("object", "1", [("p", i) for i in "abc"]) == {("p", "b"): "b", ("p", "c"): "c"}
