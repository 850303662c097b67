"""The store's Citus layout, read from a real cluster's catalog: the schema invariants
of tests/store/postgres/test_schema_invariants.py carried out. Every table of a
migrated store (communities included) is distributed by the column
``schema.DISTRIBUTED_TABLES`` names, the per-project ones co-located with ``objects``,
or is a reference table; an existing store's rows move to the shards whole."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from citus_cluster import CitusStoreFactory

from kgsearch.engine import Engine
from kgsearch.errors import ConfigError
from kgsearch.model import Kind, ObjectIn
from kgsearch.store.postgres import PostgresStore
from kgsearch.store.postgres.citus import Placement, distribute, distributed
from kgsearch.store.postgres.schema import DISTRIBUTED_TABLES, REFERENCE_TABLES
from kgsearch.testing import FakeEmbedder


def layout(store: PostgresStore) -> dict[str, tuple[str, str | None, int]]:
    """Table → (Citus partition method, distribution column, co-location group)."""
    rows = store.db.all(
        "SELECT c.relname AS t, p.partmethod AS m, "
        "column_to_column_name(p.logicalrelid, p.partkey) AS col, p.colocationid AS g "
        "FROM pg_dist_partition p JOIN pg_class c ON c.oid = p.logicalrelid "
        "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = %s",
        (store.db.schema,),
    )
    return {r["t"]: (r["m"], r["col"], r["g"]) for r in rows}


def test_every_table_is_laid_out_as_the_schema_classes_it(store: PostgresStore) -> None:
    found = layout(store)
    assert set(found) == set(DISTRIBUTED_TABLES) | set(REFERENCE_TABLES)
    for table, column in DISTRIBUTED_TABLES.items():
        assert found[table][:2] == ("h", column), table
    for table in REFERENCE_TABLES:
        assert found[table][:2] == ("n", None), table
    group = found["objects"][2]
    per_project = sorted(t for t, c in DISTRIBUTED_TABLES.items() if c == "project")
    assert [t for t in per_project if found[t][2] != group] == []
    assert found["cache"][2] != group
    assert {"community_builds", "communities", "community_members"} <= set(per_project)
    assert distributed(store.db)


def test_distribute_again_changes_nothing(store: PostgresStore) -> None:
    again = distribute(store.db)
    assert [p for p in again if p.changed] == []
    assert {p.table for p in again} == set(DISTRIBUTED_TABLES) | set(REFERENCE_TABLES)


@pytest.fixture
def plain_factory(citus_url: str) -> Iterator[CitusStoreFactory]:
    """Stores on the coordinator that are not laid out on Citus."""
    factory = CitusStoreFactory(citus_url, PostgresStore)
    yield factory
    factory.close_all()


def test_an_existing_store_keeps_its_rows_on_the_shards(plain_factory: Any) -> None:
    plain = plain_factory()
    url = plain.url
    assert not distributed(plain.db)
    engine = Engine(plain, embedder=FakeEmbedder(16))
    engine.add_objects([ObjectIn(type="T", key=f"k{i}") for i in range(20)], project="p")
    engine.embed_pending()
    placed = distribute(plain.db, shard_count=4)
    assert Placement("objects", "distributed", "project", True) in placed
    assert Placement("meta", "reference", None, True) in placed
    count = plain.db.one("SELECT count(*) AS n FROM objects WHERE project = 'p'")
    assert count == {"n": 20}
    # the coordinator's own copy was emptied: the rows live on the workers' shards
    local = plain.db.one("SELECT pg_relation_size('objects') AS n")
    assert local == {"n": 0}
    shards = plain.db.one(
        "SELECT count(*) AS n FROM pg_dist_shard WHERE logicalrelid = 'objects'::regclass"
    )
    assert shards == {"n": 4}
    # a process opened after the layout searches it
    hits = Engine(plain_factory.track(PostgresStore(url)), embedder=FakeEmbedder(16)).search(
        "k3", project="p", limit=1
    )
    assert [getattr(h, "key", None) for h in hits.results] == ["k3"]


def test_distribute_refuses_a_server_without_citus(pg_factory: Any) -> None:
    store = PostgresStore(pg_factory.postgres_store_url())
    pg_factory.track(store)
    with pytest.raises(ConfigError, match="CREATE EXTENSION citus"):
        distribute(store.db)


def test_vector_indexes_are_built_through_the_coordinator_on_every_shard(
    store_factory: Any,
) -> None:
    first = store_factory()
    url = first.url
    store = store_factory.track(PostgresStore(url, index_min_rows=20))
    engine = Engine(store, embedder=FakeEmbedder(16))
    engine.add_objects([ObjectIn(type="T", key=f"thing {i}") for i in range(30)], project="p")
    engine.embed_pending()
    store.build_indexes()  # embed_pending builds them at its end; again is a no-op
    coordinator = store.db.one(
        "SELECT count(*) AS n FROM pg_indexes WHERE schemaname = %s "
        "AND indexname = 'objects_vector'",
        (store.db.schema,),
    )
    assert coordinator == {"n": 1}
    # one index per shard, on the workers (each also has the table's shell, with metadata)
    per_worker = store.db.all(
        "SELECT result FROM run_command_on_workers($$SELECT string_agg(tablename, ',') "
        f"FROM pg_indexes WHERE schemaname = '{store.db.schema}' "
        "AND indexname LIKE 'objects_vector%%' AND tablename <> 'objects'$$)"
    )
    shards = store.db.all(
        "SELECT 'objects_' || shardid AS t FROM pg_dist_shard "
        "WHERE logicalrelid = 'objects'::regclass"
    )
    indexed = sorted(t for r in per_worker for t in (r["result"] or "").split(",") if t)
    assert indexed == sorted(r["t"] for r in shards)
    hits = engine.search("thing 7", project="p", limit=1, recipe="objects_typed")
    assert [getattr(h, "key", None) for h in hits.results] == ["thing 7"]
    # a vector leg's row estimate is the worker's (Citus's own plan node says 0 rows,
    # which would send every leg to an exact scan and never to the index)
    store.db.execute("ANALYZE objects")
    estimate = store._estimated_rows(Kind.OBJECT, "FROM objects t WHERE t.project = %s", ["p"])
    assert 20 <= estimate <= 40
