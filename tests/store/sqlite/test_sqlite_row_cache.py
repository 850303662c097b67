"""SQLite keeps decoded rows between reads while their kind's rows epoch holds, and
every write to a column a row shows moves that epoch, whichever connection or process
makes it (m015's triggers)."""

from __future__ import annotations

import gc
import subprocess
import sys
import textwrap
from pathlib import Path

from kgsearch.engine import Engine
from kgsearch.model import Kind, ObjectIn
from kgsearch.search.request import SearchRequest
from kgsearch.store.rowsql import CHUNK_COLUMNS, OBJECT_COLUMNS, RELATIONSHIP_COLUMNS
from kgsearch.store.sqlite import SQLiteStore
from kgsearch.store.sqlite.row_cache import RowCache
from kgsearch.store.sqlite.schema import ROWS_EPOCH_TABLES, SHOWN_COLUMNS
from kgsearch.testing import FakeEmbedder


def _engine(tmp_path: Path, *, embed: bool = True) -> tuple[Engine, SQLiteStore]:
    store = SQLiteStore(str(tmp_path / "kg.db"))
    engine = Engine(store, embedder=FakeEmbedder(16))
    engine.add_objects(
        [
            ObjectIn(type="Thing", key="alpha", properties={"colour": "red"}),
            ObjectIn(type="Thing", key="bravo", properties={"colour": "green"}),
        ]
    )
    if embed:
        engine.embed_pending()
    return engine, store


def _fields(engine: Engine, query: str) -> dict[str, object]:
    found = engine.search(SearchRequest(query=query, limit=5))
    return {r.key: r.fields for r in found.results if r.type == "graph"}


def _ids(store: SQLiteStore) -> list[str]:
    return [o.id for o in store.list_rows("default", "object").items]


def _states(store: SQLiteStore, ids: list[str]) -> list[tuple[str, int, str | None]]:
    return [
        (o.embedding.status.value, o.embedding.attempts, o.embedding.last_error)
        for o in store.get_objects("default", ids)
    ]


def _fail_all(store: SQLiteStore) -> None:
    """What a failing embedding worker writes: a claim (a lease), then the failure."""
    claims = store.claim(Kind.OBJECT, project="default", limit=10, now=1.0)
    store.fail(Kind.OBJECT, claims, "boom", now=1.0, max_attempts=1, backoff_seconds=1.0)


def test_a_repeated_search_takes_its_rows_from_the_cache(tmp_path: Path) -> None:
    engine, store = _engine(tmp_path)
    _fields(engine, "alpha")
    hits = store.row_cache.hits
    assert _fields(engine, "alpha")["alpha"] == {"colour": "red"}
    assert store.row_cache.hits > hits
    engine.close()


def test_the_cache_holds_values_the_collector_stops_tracking(tmp_path: Path) -> None:
    engine, store = _engine(tmp_path)
    ids = _ids(store)
    first = store.get_objects("default", ids)
    held = [v for _, values in store.row_cache._spaces.values() for v in values.values()]
    assert len(held) == len(ids) and all(type(v) is tuple for v in held)
    gc.collect()
    assert not any(gc.is_tracked(v) for v in held)
    again = store.get_objects("default", ids)
    assert again == first and again[0] is not first[0]  # decoded afresh, equal
    engine.close()


def test_a_write_between_two_searches_is_seen(tmp_path: Path) -> None:
    engine, _ = _engine(tmp_path)
    assert _fields(engine, "alpha")["alpha"] == {"colour": "red"}
    engine.add_objects([ObjectIn(type="Thing", key="alpha", properties={"colour": "blue"})])
    assert _fields(engine, "alpha")["alpha"] == {"colour": "blue"}
    engine.close()


def test_a_delete_between_two_reads_is_seen(tmp_path: Path) -> None:
    engine, store = _engine(tmp_path)
    ids = _ids(store)
    assert len(store.get_objects("default", ids)) == 2
    store.delete("default", "object", ids[:1])
    assert [o.id for o in store.get_objects("default", ids)] == ids[1:]
    engine.close()


def test_a_failure_written_by_another_connection_is_seen(tmp_path: Path) -> None:
    engine, store = _engine(tmp_path, embed=False)
    ids = _ids(store)
    assert _states(store, ids) == [("pending", 0, None)] * 2
    other = SQLiteStore(store.path)
    _fail_all(other)  # writes status, attempts and the error, and calls no _changed
    other.close()
    assert _states(store, ids) == [("dead", 1, "boom")] * 2
    engine.close()


def test_a_failure_written_by_another_process_is_seen(tmp_path: Path) -> None:
    engine, store = _engine(tmp_path, embed=False)
    ids = _ids(store)
    assert _states(store, ids) == [("pending", 0, None)] * 2
    script = textwrap.dedent(
        f"""
        from kgsearch.model import Kind
        from kgsearch.store.sqlite import SQLiteStore
        store = SQLiteStore({store.path!r})
        claims = store.claim(Kind.OBJECT, project="default", limit=10, now=1.0)
        store.fail(Kind.OBJECT, claims, "boom", now=1.0, max_attempts=3, backoff_seconds=1.0)
        store.close()
        """
    )
    subprocess.run([sys.executable, "-c", script], check=True, timeout=120)
    assert _states(store, ids) == [("failed", 1, "boom")] * 2
    engine.close()


def test_vectors_forgotten_for_a_new_model_are_seen(tmp_path: Path) -> None:
    engine, store = _engine(tmp_path)
    ids = _ids(store)
    assert all(o.embedding.embedded_text for o in store.get_objects("default", ids))
    store.set_embedding_model("another:16", 16, replace=True)  # calls no _changed
    assert [o.embedding.embedded_text for o in store.get_objects("default", ids)] == [None, None]
    engine.close()


def test_a_lease_alone_keeps_the_rows_held(tmp_path: Path) -> None:
    engine, store = _engine(tmp_path, embed=False)
    ids = _ids(store)
    store.get_objects("default", ids)
    store.claim(Kind.OBJECT, project="default", limit=10, now=1.0)  # claimed_until only
    hits = store.row_cache.hits
    assert _states(store, ids) == [("pending", 0, None)] * 2
    assert store.row_cache.hits == hits + 2
    engine.close()


def test_a_store_without_the_rows_epoch_holds_nothing(tmp_path: Path) -> None:
    engine, store = _engine(tmp_path)
    store.db.execute("DELETE FROM meta WHERE key = 'rows:object'")  # as before m015
    ids = _ids(store)
    counted = (store.row_cache.hits, store.row_cache.misses)
    store.get_objects("default", ids)
    store.get_objects("default", ids)
    assert (store.row_cache.hits, store.row_cache.misses) == counted
    engine.close()


def test_the_triggers_watch_every_column_a_decoded_row_shows() -> None:
    state = (
        "status, text, text_hash, embedded_text, attempts, last_error, model, dims, "
        "text_version, embedded_at, created_at, updated_at"
    )
    decoded = {"objects": OBJECT_COLUMNS, "relationships": RELATIONSHIP_COLUMNS}
    decoded["chunks"] = CHUNK_COLUMNS
    for table in ROWS_EPOCH_TABLES:
        watched = set(f"{SHOWN_COLUMNS[table]}, {state}".split(", "))
        assert set(decoded[table].split(", ")) - {"id", "project"} == watched


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
