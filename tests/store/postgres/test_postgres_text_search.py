"""PostgreSQL BM25: the two-stage plan (cheap rank, exact re-score of the best) returns
what scoring every matching row exactly returns, also when the cheap stage ties many
rows, and ranks as SQLite's BM25 does."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from kgsearch.engine import Engine
from kgsearch.model import Kind, ObjectIn
from kgsearch.store.postgres import PostgresStore, lexical
from kgsearch.store.sqlite import SQLiteStore

# 150 rows hold "zeta" once; the last one written holds it three times, which only the
# exact stage sees (the cheap one counts each word once): it must still come first.
ROWS = [
    *(ObjectIn(type="Thing", key=f"k{i}", properties={"name": f"zeta w{i}"}) for i in range(150)),
    ObjectIn(type="Thing", key="many", properties={"name": "zeta zeta zeta w0"}),
    ObjectIn(type="Other", key="rare", properties={"name": "omega zeta"}),
]


@pytest.fixture
def store(pg_factory: Any) -> PostgresStore:
    pg = PostgresStore(pg_factory.postgres_store_url())
    pg_factory.track(pg)
    Engine(pg).add_objects(ROWS)
    return pg


@pytest.mark.parametrize(
    ("query", "limit"), [("zeta", 5), ("zeta", 60), ("zeta omega", 3), ("w0 zeta", 2)]
)
def test_two_stage_bm25_equals_scoring_every_row(
    store: PostgresStore, monkeypatch: pytest.MonkeyPatch, query: str, limit: int
) -> None:
    got = store.text_search("default", Kind.OBJECT, query, limit=limit)
    monkeypatch.setattr(lexical, "_RESCORE_POOL", 10_000)  # every matching row, exactly
    full = store.text_search("default", Kind.OBJECT, query, limit=limit)
    assert got == full
    assert len(got) == limit


def test_a_repeated_word_ranks_first_as_on_sqlite(store: PostgresStore, tmp_path: Path) -> None:
    sqlite = SQLiteStore(str(tmp_path / "kg.db"))
    Engine(sqlite).add_objects(ROWS)
    for query in ("zeta", "zeta omega"):
        got = store.text_search("default", Kind.OBJECT, query, limit=3)
        want = sqlite.text_search("default", Kind.OBJECT, query, limit=3)
        pg_keys = [o.key for o in store.get_objects("default", [i for i, _ in got])]
        sqlite_keys = [o.key for o in sqlite.get_objects("default", [i for i, _ in want])]
        assert pg_keys[0] == sqlite_keys[0] == ("many" if query == "zeta" else "rare")
    sqlite.close()


def test_common_words_of_a_large_kind_take_their_frequency_from_the_statistics(
    store: PostgresStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(lexical, "_SYNC_ROWS", 50)  # 152 rows count as a large kind
    store.db.execute("ANALYZE objects")
    shares = store.lexical.common(store.db, Kind.OBJECT)
    assert shares.get("zeta", 0) > 0.9  # every row holds it
    heard: list[str] = []
    hits = store.text_search(
        "default", Kind.OBJECT, "zeta omega", limit=3, trace=lambda sql, _: heard.append(sql)
    )
    assert hits[0][0] == Engine(store).get_object_by_key("Other", "rare").id
    # the first search of the words read which are common from the statistics (their
    # own statement, remembered for minutes: not part of the one that stems them); the
    # frequency is the statistics' share of the project's rows
    (stems,) = [sql for sql in heard if "to_tsvector('kgsearch', w.term)" in sql]
    assert "pg_stats" not in stems
    zeta = store.lexical.dfs(store.db, "default", Kind.OBJECT, ["zeta"], set())["zeta"]
    assert zeta == round(shares["zeta"] * 152)
    omega = store.lexical.dfs(store.db, "default", Kind.OBJECT, ["omega"], set())["omega"]
    assert omega == 1  # a rare word is counted


def test_new_terms_are_stemmed_without_reading_the_statistics_view_each_time(
    pg_factory: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # planning the pg_stats view took most of the stemming statement's time (1.7 of 2 ms
    # on the sample graph): the common lexemes' shares are read once, for minutes
    monkeypatch.setattr(lexical, "_SYNC_ROWS", 50)  # 152 rows count as a large kind
    pg = PostgresStore(pg_factory.postgres_store_url() + "&pool_size=1")
    pg_factory.track(pg)
    Engine(pg).add_objects(ROWS)
    pg.db.execute("ANALYZE objects")
    heard: list[str] = []
    for i in range(9):  # a new word each time: its stems and counts are read
        hits = pg.text_search(
            "default",
            Kind.OBJECT,
            f"zeta w{i + 1}",
            limit=3,
            trace=lambda sql, _: heard.append(sql),
        )
        assert hits[0][0] == Engine(pg).get_object_by_key("Thing", f"k{i + 1}").id
    stems = [sql for sql in heard if "to_tsvector('kgsearch', w.term)" in sql]
    assert len(stems) == 9
    assert len([sql for sql in heard if "pg_stats" in sql]) == 1


def test_writes_make_a_large_kind_s_figures_read_again_at_most_every_few_seconds(
    store: PostgresStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    # each write makes every figure stale; on a large kind searches go on with them and
    # one background refresh reads them again, not one per write (it reads every row)
    monkeypatch.setattr(lexical, "_LAG_ROWS", 50)  # 152 rows: read again in the background
    monkeypatch.setattr(lexical, "_REFRESH_SECONDS", 2.0)
    reads: list[Kind] = []
    real = lexical.LexicalStats._read_table

    def read_table(self: lexical.LexicalStats, db: Any, project: str, kind: Kind) -> Any:
        reads.append(kind)
        return real(self, db, project, kind)

    monkeypatch.setattr(lexical.LexicalStats, "_read_table", read_table)
    engine = Engine(store)
    assert store.text_search("default", Kind.OBJECT, "omega", limit=3)
    reads.clear()
    for i in range(5):
        engine.add_objects([ObjectIn(type="Other", key=f"o{i}", properties={"name": "omega"})])
        assert store.text_search("default", Kind.OBJECT, "omega", limit=3)

    def omega() -> int:
        return store.lexical.dfs(store.db, "default", Kind.OBJECT, ["omega"], set())["omega"]

    deadline = time.monotonic() + 20
    while omega() != 6 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert omega() == 6  # the searched word's figure caught up with the writes
    assert store.lexical.table(store.db, "default", Kind.OBJECT)[0] == 157
    assert reads.count(Kind.OBJECT) <= 2  # 5 writes: at most a refresh now, one later


def test_searches_finding_a_small_kind_s_figures_stale_read_them_once(
    store: PostgresStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a small kind is counted again before scoring after a write: searches that find
    # it stale at the same time share one count
    reads: list[Kind] = []
    real = lexical.LexicalStats._read_table

    def slow_read(self: lexical.LexicalStats, db: Any, project: str, kind: Kind) -> Any:
        reads.append(kind)
        time.sleep(0.3)
        return real(self, db, project, kind)

    monkeypatch.setattr(lexical.LexicalStats, "_read_table", slow_read)
    Engine(store).add_objects([ObjectIn(type="Other", key="new", properties={"name": "omega"})])
    with ThreadPoolExecutor(4) as pool:
        figures = list(
            pool.map(lambda _: store.lexical.table(store.db, "default", Kind.OBJECT), range(4))
        )
    assert [n for n, _ in figures] == [153] * 4
    assert reads == [Kind.OBJECT]
