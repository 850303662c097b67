"""PostgreSQL with several processes: first-time set-up races, concurrent index
builds, a role without CREATE rights, and deletes racing relationship writes."""

from __future__ import annotations

import threading
import time
import uuid
from typing import Any

import psycopg

from kgsearch.engine import Engine
from kgsearch.model import Kind, ObjectIn, ObjectRef, RelationshipIn
from kgsearch.store.postgres import PostgresStore
from kgsearch.store.postgres.search import build_vector_index, vector_index_exists
from kgsearch.testing import FakeEmbedder


def together(n: int, work: Any) -> list[BaseException]:
    """Run ``work(i)`` on ``n`` threads released at once; return their errors."""
    barrier = threading.Barrier(n)
    errors: list[BaseException] = []

    def run(i: int) -> None:
        barrier.wait()
        try:
            work(i)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    return errors


def test_processes_opening_a_new_schema_at_once_all_succeed(pg_factory: Any) -> None:
    url = pg_factory.postgres_store_url()
    stores: list[PostgresStore] = []
    errors = together(4, lambda i: stores.append(PostgresStore(url)))
    for store in stores:
        pg_factory.track(store)
    assert errors == []
    assert len(stores) == 4
    assert stores[0].info().migrations == stores[3].info().migrations


def test_concurrent_index_builds_build_one_index(pg_factory: Any) -> None:
    store = PostgresStore(pg_factory.postgres_store_url(), index_min_rows=10**9)
    pg_factory.track(store)
    engine = Engine(store, embedder=FakeEmbedder(32))
    engine.add_objects([ObjectIn(type="T", key=f"k{i}") for i in range(60)])
    engine.embed_pending()
    built: list[bool] = []
    errors = together(
        3, lambda i: built.append(build_vector_index(store.db, Kind.OBJECT, 32, "hnsw", min_rows=1))
    )
    assert errors == []
    assert built.count(True) == 1
    assert vector_index_exists(store.db, Kind.OBJECT)


def test_a_role_without_create_rights_uses_an_existing_store(
    pg_factory: Any, postgres_url: str
) -> None:
    url = pg_factory.postgres_store_url()
    owner = PostgresStore(url)
    pg_factory.track(owner)
    Engine(owner, embedder=FakeEmbedder(32)).add_objects([ObjectIn(type="T", key="a")])
    schema = owner.db.schema
    role = f"reader_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(f"CREATE ROLE {role} LOGIN")
        conn.execute(f'GRANT USAGE ON SCHEMA "{schema}" TO {role}')
        conn.execute(
            f'GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA "{schema}" TO {role}'
        )
    try:
        as_role = url.replace("postgres:@", f"{role}:@", 1)
        assert as_role != url
        store = PostgresStore(as_role)
        pg_factory.track(store)
        assert [o.key for o in store.iter_rows("default", "object")] == ["a"]
        assert store.text_search("default", Kind.OBJECT, "a", limit=5)
    finally:
        owner.close()
        with psycopg.connect(postgres_url, autocommit=True) as conn:
            conn.execute(f'REVOKE ALL ON ALL TABLES IN SCHEMA "{schema}" FROM {role}')
            conn.execute(f'REVOKE ALL ON SCHEMA "{schema}" FROM {role}')


def test_a_delete_racing_a_relationship_write_leaves_no_dangling_edge(pg_factory: Any) -> None:
    store = PostgresStore(pg_factory.postgres_store_url())
    pg_factory.track(store)
    engine = Engine(store, embedder=FakeEmbedder(32))
    a, b = engine.add_objects([ObjectIn(type="T", key="a"), ObjectIn(type="T", key="b")])
    other = PostgresStore(store.url)
    pg_factory.track(other)
    deleted = threading.Event()

    def delete_b() -> None:
        other.delete("default", "object", [b.id])
        deleted.set()

    with store.transaction():
        engine.add_relationships(
            [
                RelationshipIn(
                    type="knows",
                    source=ObjectRef(type="T", key="a"),
                    target=ObjectRef(type="T", key="b"),
                )
            ]
        )
        thread = threading.Thread(target=delete_b)
        thread.start()
        time.sleep(0.5)
        assert not deleted.is_set(), "the delete did not wait for the relationship's writer"
    thread.join(timeout=30)
    assert deleted.is_set()
    assert list(store.iter_rows("default", "relationship")) == []
    assert store.neighbors("default", [a.id]) == []
