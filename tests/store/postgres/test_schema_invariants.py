"""The PostgreSQL schema stays distributable by Citus (docs/scaling.md), read from the
catalog of a freshly migrated store: every table is either distributed by a column that
each of its primary and unique keys holds (the per-project tables by ``project``), or a
small reference table; nothing references across tables by a key without the project;
and the vectors are ``halfvec`` under ``halfvec`` indexes."""

from __future__ import annotations

from typing import Any

from kgsearch.engine import Engine
from kgsearch.model import ObjectIn
from kgsearch.store.postgres import PostgresStore
from kgsearch.store.postgres.schema import DISTRIBUTED_TABLES, REFERENCE_TABLES
from kgsearch.testing import FakeEmbedder


def tables(store: PostgresStore) -> set[str]:
    rows = store.db.all(
        "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
        "WHERE n.nspname = %s AND c.relkind IN ('r', 'p')",
        (store.db.schema,),
    )
    return {r["relname"] for r in rows}


def keys(store: PostgresStore, table: str) -> list[tuple[str, list[str]]]:
    """(index name, its columns) of every primary key and unique index of ``table``
    (expression columns as ``None``, so they never count as the distribution column)."""
    rows = store.db.all(
        "SELECT i.relname AS name, array(SELECT a.attname FROM unnest(x.indkey) "
        "WITH ORDINALITY AS k(attnum, n) LEFT JOIN pg_attribute a "
        "ON a.attrelid = x.indrelid AND a.attnum = k.attnum ORDER BY k.n) AS cols "
        "FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid "
        "WHERE x.indrelid = to_regclass(%s) AND (x.indisunique OR x.indisprimary)",
        (f'"{store.db.schema}".{table}',),
    )
    return [(r["name"], list(r["cols"])) for r in rows]


def test_every_table_is_distributed_by_a_key_column_or_a_small_reference_table(
    pg_factory: Any,
) -> None:
    store = PostgresStore(pg_factory.postgres_store_url())
    pg_factory.track(store)
    found = tables(store)
    assert found == set(DISTRIBUTED_TABLES) | set(REFERENCE_TABLES), (
        "a new table must be classed in schema.DISTRIBUTED_TABLES or REFERENCE_TABLES"
    )
    for table, column in DISTRIBUTED_TABLES.items():
        unique = keys(store, table)
        assert unique, f"{table} has no primary key"
        for name, cols in unique:
            assert column in cols, f"{table}: key {name} {cols} lacks {column}"


def test_per_project_tables_are_co_located_by_project(pg_factory: Any) -> None:
    store = PostgresStore(pg_factory.postgres_store_url())
    pg_factory.track(store)
    by_project = [t for t, c in DISTRIBUTED_TABLES.items() if c == "project"]
    assert {"objects", "relationships", "chunks", "sources", "mentions", "tasks"} <= set(by_project)
    for table in by_project:
        row = store.db.one(
            "SELECT a.attnotnull FROM pg_attribute a WHERE a.attrelid = to_regclass(%s) "
            "AND a.attname = 'project'",
            (f'"{store.db.schema}".{table}',),
        )
        assert row is not None and row["attnotnull"], f"{table}.project must be NOT NULL"


def test_reference_tables_stay_small_and_no_foreign_key_crosses_projects(
    pg_factory: Any,
) -> None:
    store = PostgresStore(pg_factory.postgres_store_url())
    pg_factory.track(store)
    engine = Engine(store, embedder=FakeEmbedder(16))
    engine.add_objects([ObjectIn(type="T", key=f"k{i}") for i in range(300)])
    engine.embed_pending()
    for table in REFERENCE_TABLES:
        row = store.db.one(f"SELECT count(*) AS n FROM {table}")
        # rows per store or per key, never per object or per relationship
        assert row is not None and row["n"] < 50, f"{table} grows with the data"
    rows = store.db.all(
        "SELECT conname, conrelid::regclass::text AS t FROM pg_constraint "
        "WHERE contype = 'f' AND connamespace = %s::regnamespace",
        (f'"{store.db.schema}"',),
    )
    assert rows == [], "foreign keys would need the same distribution on both sides"


def test_vectors_are_halfvec_and_indexed_over_float32_casts(pg_factory: Any) -> None:
    store = PostgresStore(pg_factory.postgres_store_url(), index_min_rows=50)
    pg_factory.track(store)
    engine = Engine(store, embedder=FakeEmbedder(16))
    engine.add_objects([ObjectIn(type="T", key=f"k{i}") for i in range(60)])
    engine.embed_pending()
    for table in ("objects", "relationships", "chunks", "community_reports"):
        row = store.db.one(
            "SELECT format_type(a.atttypid, a.atttypmod) AS t FROM pg_attribute a "
            "WHERE a.attrelid = to_regclass(%s) AND a.attname = 'vector'",
            (f'"{store.db.schema}".{table}',),
        )
        assert row is not None and row["t"] == "halfvec"
    index = store.db.one(
        "SELECT indexdef FROM pg_indexes WHERE schemaname = %s AND indexname = 'objects_vector'",
        (store.db.schema,),
    )
    # rows in halfvec, the index over float32 casts (pgvector's halfvec distances are slow)
    assert index is not None and "((vector)::vector(16)) vector_cosine_ops" in index["indexdef"]
    assert "hnsw" in index["indexdef"]
    # plain scans by default; a leg whose conditions drop many rows turns iterative
    # scans on for its own statement (test_postgres_index.py)
    setting = store.db.one("SHOW hnsw.iterative_scan")
    assert setting is not None and setting["hnsw.iterative_scan"] == "off"
