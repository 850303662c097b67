"""A vector index build on Citus gets its memory on the workers, which build it.

``CREATE INDEX`` on a distributed table runs on the workers, one build per shard, and a
``SET LOCAL maintenance_work_mem`` on the coordinator stays there: every shard's graph
was built in the workers' own setting (64 MB by default, the HNSW graph of about 20,000
rows of 384 dims; a bigger one is built on disk, many times slower). Seen from the
client: an IVFFlat build whose k-means sample outgrows the memory it is given fails
with pgvector's "memory required is … MB, maintenance_work_mem is 1 MB", raised on the
worker and relayed by Citus (worker notices are not relayed, so the HNSW build's "graph
no longer fits" notice cannot be seen here; it takes its memory the same way).
"""

from __future__ import annotations

import pytest
from citus_cluster import CitusStoreFactory

from kgsearch import Engine
from kgsearch.errors import StoreError
from kgsearch.model import Kind, ObjectIn
from kgsearch.store.postgres import PostgresStore
from kgsearch.store.postgres.search import build_vector_index, vector_index_exists
from kgsearch.testing import FakeEmbedder


def test_the_build_memory_reaches_the_workers(
    citus_url: str, store_factory: CitusStoreFactory
) -> None:
    store = store_factory()
    assert isinstance(store, PostgresStore) and store.citus
    engine = Engine(store, embedder=FakeEmbedder(32), project="big")
    engine.add_objects([ObjectIn(type="Thing", key=f"t{i}") for i in range(300)])
    engine.embed_pending()

    # the coordinator's own setting does not reach the worker: its 64 MB build passes
    with store.db.transaction() as conn:
        conn.execute("SET LOCAL maintenance_work_mem = '1MB'")
        conn.execute(
            "CREATE INDEX objects_vector ON objects USING ivfflat "
            "((vector::vector(32)) vector_cosine_ops) WITH (lists = 10) WHERE dims = 32"
        )
    store.db.execute("DROP INDEX objects_vector")

    # the store's build sends its memory on: the worker builds in 1 MB, too little
    with pytest.raises(StoreError) as refused:
        build_vector_index(store.db, Kind.OBJECT, 32, "ivfflat", min_rows=1, memory="1MB")
    assert "maintenance_work_mem is 1 MB" in str(refused.value.__cause__)
    assert not vector_index_exists(store.db, Kind.OBJECT)
    # the store's own builds ask for the URL's build_memory
    url = f"{citus_url}{'&' if '?' in citus_url else '?'}schema={store.db.schema}"
    small = PostgresStore(f"{url}&vector_index=ivfflat&build_memory=1MB", index_min_rows=1)
    try:
        with pytest.raises(StoreError) as refused:
            small.build_indexes()
        assert "maintenance_work_mem is 1 MB" in str(refused.value.__cause__)
    finally:
        small.close()
    assert not vector_index_exists(store.db, Kind.OBJECT)
    assert build_vector_index(store.db, Kind.OBJECT, 32, "ivfflat", min_rows=1)
