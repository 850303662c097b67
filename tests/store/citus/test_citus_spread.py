"""One project spread over both workers (issue 33, item 3): ``distribute(…, spread=True)``
distributes relationships and chunks by row id, so a project's rows of them sit on
every worker, and every search recipe ranks as on the unspread layout (project by
project on one worker). Checked on the real 3-node cluster, from the workers' shards."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from citus_cluster import CitusStoreFactory
from citus_films import QUESTIONS, ranked, seed

from kgsearch.engine import Engine
from kgsearch.errors import ConfigError
from kgsearch.migrate import migrate_store
from kgsearch.model import ChunkIn, Kind, ObjectIn, ObjectRef, RelationshipIn
from kgsearch.search.request import RECIPES
from kgsearch.store.postgres import PostgresStore
from kgsearch.store.postgres.citus import SPREAD_TABLES, distribute, spread_tables
from kgsearch.testing import FakeEmbedder


@pytest.fixture
def spread_factory(citus_url: str) -> Iterator[CitusStoreFactory]:
    """Fresh stores on the cluster with their big tables spread over the workers."""
    factory = CitusStoreFactory(citus_url, spread=True)
    yield factory
    factory.close_all()


def columns(store: PostgresStore) -> dict[str, tuple[str | None, int]]:
    """Table → (distribution column, co-location group), from the coordinator's catalog."""
    rows = store.db.all(
        "SELECT c.relname AS t, column_to_column_name(p.logicalrelid, p.partkey) AS col, "
        "p.colocationid AS g FROM pg_dist_partition p JOIN pg_class c ON c.oid = p.logicalrelid "
        "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = %s",
        (store.db.schema,),
    )
    return {r["t"]: (r["col"], r["g"]) for r in rows}


def primary_key(store: PostgresStore, table: str) -> str:
    row = store.db.one(
        "SELECT pg_get_constraintdef(oid) AS d FROM pg_constraint "
        "WHERE conrelid = to_regclass(%s) AND contype = 'p'",
        (f'"{store.db.schema}".{table}',),
    )
    assert row is not None
    return str(row["d"])


def rows_per_worker(store: PostgresStore, table: str, project: str) -> dict[int, int]:
    """Live rows of a project in a table, counted on each worker's own shards."""
    rows = store.db.all(
        "SELECT s.nodeport AS port, r.result::int AS n FROM run_command_on_shards("
        f"%s, $$SELECT count(*) FROM %%s WHERE project = '{project}'$$) r "
        "JOIN citus_shards s ON s.shardid = r.shardid",
        (f'"{store.db.schema}".{table}',),
    )
    out: dict[int, int] = {}
    for r in rows:
        out[r["port"]] = out.get(r["port"], 0) + r["n"]
    return out


def test_a_spread_store_distributes_its_big_tables_by_row_id(spread_factory: Any) -> None:
    store = spread_factory()
    found = columns(store)
    assert {t: found[t][0] for t in SPREAD_TABLES} == {t: "id" for t in SPREAD_TABLES}
    # co-located with each other, not with the project tables
    assert found["relationships"][1] == found["chunks"][1] != found["objects"][1]
    assert found["objects"][0] == found["mentions"][0] == "project"
    assert primary_key(store, "relationships") == "PRIMARY KEY (project, id)"
    assert store.spread == frozenset(SPREAD_TABLES)
    assert [p for p in distribute(store.db) if p.changed] == []  # kept as it is


@pytest.fixture(scope="module")
def layouts(citus_url: str) -> Any:
    """The film graph on a spread store and on an unspread one, same cluster."""
    spread = CitusStoreFactory(citus_url, spread=True)
    unspread = CitusStoreFactory(citus_url)
    try:
        yield seed(spread(), "films"), seed(unspread(), "films")
    finally:
        spread.close_all()
        unspread.close_all()


def test_rows_of_one_project_sit_on_both_workers(layouts: Any) -> None:
    spread, unspread = layouts
    for table in SPREAD_TABLES:
        on_spread = rows_per_worker(spread.store, table, "films")
        assert len(on_spread) == 2 and all(n > 0 for n in on_spread.values()), table
        on_one = rows_per_worker(unspread.store, table, "films")
        assert sorted(on_one.values())[0] == 0, table  # unspread: one worker has them all
        assert sum(on_spread.values()) == sum(on_one.values()) > 0


@pytest.mark.parametrize("recipe", sorted(RECIPES))
def test_every_recipe_ranks_as_on_the_unspread_layout(layouts: Any, recipe: str) -> None:
    spread, unspread = layouts
    for query in QUESTIONS:
        assert ranked(spread, query, recipe) == ranked(unspread, query, recipe), query


def test_bm25_document_frequencies_are_summed_over_the_shards(layouts: Any) -> None:
    spread, unspread = layouts
    for kind in (Kind.CHUNK, Kind.RELATIONSHIP):
        terms = ["directed", "wrath", "ford", "nothing"]
        got = spread.store.lexical.words(spread.store.db, "films", kind, terms, False)
        want = unspread.store.lexical.words(unspread.store.db, "films", kind, terms, False)
        assert got == want
    assert got[2]["direct"] == 4  # every chunk says "directed", on both workers


@pytest.fixture
def plain_factory(citus_url: str) -> Iterator[CitusStoreFactory]:
    """Stores on the coordinator that are not laid out on Citus."""
    factory = CitusStoreFactory(citus_url, PostgresStore)
    yield factory
    factory.close_all()


def small_graph(engine: Engine) -> None:
    engine.add_objects([ObjectIn(type="T", key=f"k{i}") for i in range(12)])
    engine.add_relationships(
        [
            RelationshipIn(
                type="NEXT",
                source=ObjectRef(type="T", key=f"k{i}"),
                target=ObjectRef(type="T", key=f"k{i + 1}"),
            )
            for i in range(11)
        ]
    )
    engine.add_chunks([ChunkIn(id=f"c{i}", text=f"chunk number {i} of k{i}") for i in range(8)])
    engine.embed_pending()


def searches(engine: Engine) -> list[list[tuple[str, str]]]:
    return [ranked(engine, q, r) for q in ("k3", "chunk 5") for r in ("hybrid", "chunks", "expand")]


def test_an_existing_store_is_spread_with_its_rows(plain_factory: Any) -> None:
    plain = plain_factory()
    url = plain.url
    engine = Engine(plain, embedder=FakeEmbedder(16), project="p")
    small_graph(engine)
    before = searches(engine)
    placed = distribute(plain.db, spread=True)
    assert {p.table: (p.column, p.changed) for p in placed if p.table in SPREAD_TABLES} == {
        t: ("id", True) for t in SPREAD_TABLES
    }
    assert spread_tables(plain.db) == frozenset(SPREAD_TABLES)
    reopened = plain_factory.track(PostgresStore(url))
    assert reopened.spread == frozenset(SPREAD_TABLES)
    assert reopened.counts("p")["relationships"] == 11
    assert len(rows_per_worker(reopened, "chunks", "p")) == 2
    assert searches(Engine(reopened, embedder=FakeEmbedder(16), project="p")) == before


def test_a_distributed_store_keeps_its_layout_and_is_copied_into_another(
    store_factory: Any, spread_factory: Any
) -> None:
    unspread = store_factory()
    engine = Engine(unspread, embedder=FakeEmbedder(16), project="p")
    small_graph(engine)
    # Citus cannot change the column of a table with an identity column in place
    with pytest.raises(ConfigError, match="kgsearch migrate"):
        distribute(unspread.db, spread=True)
    assert spread_tables(unspread.db) == frozenset()
    # copied into a spread store, it searches as its copy into an unspread one (a copy
    # writes rows in its own order, which breaks ties among equal scores)
    spread, copy = spread_factory(), store_factory()
    for target in (spread, copy):
        report = migrate_store(unspread, target)
        assert report.verified and report.mismatches == []
    assert spread.counts("p") == unspread.counts("p")
    assert len(rows_per_worker(spread, "relationships", "p")) == 2
    on_spread = searches(Engine(spread, embedder=FakeEmbedder(16), project="p"))
    assert on_spread == searches(Engine(copy, embedder=FakeEmbedder(16), project="p"))


def test_concurrent_claims_on_spread_tables_take_each_row_once(spread_factory: Any) -> None:
    store = spread_factory()
    engine = Engine(store, embedder=FakeEmbedder(16), project="p")
    engine.add_chunks([ChunkIn(id=f"c{i}", text=f"text {i}") for i in range(60)])
    now = time.time()
    claimed: list[list[str]] = [[] for _ in range(4)]

    def worker(i: int) -> None:
        while batch := store.claim(Kind.CHUNK, project=None, limit=7, now=now):
            claimed[i] += [c.id for c in batch]

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    every = [c for batch in claimed for c in batch]
    assert sorted(every) == sorted(f"c{i}" for i in range(60))  # each once, none left
    assert store.claim(Kind.CHUNK, project="p", limit=7, now=now) == []


def test_a_spread_legs_row_estimate_counts_every_shard(spread_factory: Any) -> None:
    store = spread_factory()
    engine = Engine(store, embedder=FakeEmbedder(16), project="p")
    engine.add_chunks([ChunkIn(id=f"c{i}", text=f"text {i}") for i in range(60)])
    assert len(rows_per_worker(store, "chunks", "p")) == 2
    store.db.execute("ANALYZE chunks")
    # Citus shows one shard's plan of a multi-shard statement: its estimate is scaled
    # by the shard count (one shard's alone would be about half)
    estimate = store._estimated_rows(Kind.CHUNK, "FROM chunks t WHERE t.project = %s", ["p"])
    assert 45 <= estimate <= 75


def test_the_hnsw_settings_reach_every_worker_of_a_spread_leg(layouts: Any) -> None:
    spread, _ = layouts
    # a leg on a spread kind runs on every shard: each worker must see the beam
    rows = spread.store.db.all_with(
        {"hnsw.ef_search": "200", "hnsw.iterative_scan": "relaxed_order"},
        "SELECT current_setting('hnsw.ef_search', true) AS ef, "
        "current_setting('hnsw.iterative_scan', true) AS it, inet_server_port() AS port "
        "FROM relationships WHERE project = 'films'",
    )
    assert len({r["port"] for r in rows}) == 2  # answered by both workers
    assert {(r["ef"], r["it"]) for r in rows} == {("200", "relaxed_order")}
