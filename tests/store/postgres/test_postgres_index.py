"""PostgreSQL vector indexes: built after embedding runs once a kind is large enough,
used for unfiltered searches, and never leaving a filtered search short."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest

from kgsearch.engine import Engine
from kgsearch.errors import StoreError
from kgsearch.model import MAX_ID_BYTES, ChunkIn, Filters, Kind, ObjectIn, RelationshipIn, SourceIn
from kgsearch.store.postgres import PostgresStore
from kgsearch.store.postgres import store as store_module
from kgsearch.store.postgres.connection import EF_SEARCH
from kgsearch.store.postgres.schema import MIGRATIONS
from kgsearch.store.postgres.search import vector_index_exists
from kgsearch.testing import FakeEmbedder


def _url(pg_factory: Any) -> str:
    """A fresh schema's URL, vectors not held in the process: these tests are about
    PostgreSQL's own vector statements (held copies: test_postgres_held_vectors.py)."""
    return str(pg_factory.postgres_store_url()) + "&held_vectors=off"


def fill(store: PostgresStore, n: int) -> Engine:
    engine = Engine(store, embedder=FakeEmbedder(32))
    engine.add_objects(
        [
            ObjectIn(
                type="Rare" if i % 25 == 0 else "Common",
                key=f"k{i}",
                properties={"name": f"thing {i} {'alpha' if i % 2 else 'beta'}"},
            )
            for i in range(n)
        ]
    )
    # the kinds every schema has (a store at the released m004 has no community reports)
    engine.embed_pending(kinds=[Kind.OBJECT, Kind.RELATIONSHIP, Kind.CHUNK])
    return engine


@pytest.mark.parametrize("method", ["hnsw", "ivfflat"])
def test_index_is_built_once_large_enough_and_agrees_with_exact(
    pg_factory: Any, method: str
) -> None:
    url = _url(pg_factory) + f"&vector_index={method}"
    # a store this small is searched exactly (see below) unless told otherwise
    store = PostgresStore(url, index_min_rows=150, exact_max_rows=0)
    pg_factory.track(store)
    engine = fill(store, 100)
    assert not vector_index_exists(store.db, Kind.OBJECT), "built below the threshold"
    engine.add_objects([ObjectIn(type="Common", key=f"x{i}") for i in range(100)])
    engine.embed_pending()
    assert vector_index_exists(store.db, Kind.OBJECT)
    exact = PostgresStore(url.replace(f"vector_index={method}", "vector_index=none"))
    pg_factory.track(exact)
    query = FakeEmbedder(32).embed_query("thing 7 alpha")
    fast = store.vector_search("default", Kind.OBJECT, query, limit=5)
    truth = exact.vector_search("default", Kind.OBJECT, query, limit=5)
    assert [round(s, 5) for _, s in fast] == [round(s, 5) for _, s in truth]
    assert fast[0][0] == truth[0][0]


def test_a_filtered_search_through_the_index_is_never_short(pg_factory: Any) -> None:
    store = PostgresStore(_url(pg_factory), index_min_rows=50, exact_max_rows=0)
    pg_factory.track(store)
    fill(store, 200)
    assert vector_index_exists(store.db, Kind.OBJECT)
    query = FakeEmbedder(32).embed_query("thing")
    hits = store.vector_search(
        "default", Kind.OBJECT, query, limit=20, filters=Filters(object_types=["Rare"])
    )
    assert len(hits) == 8  # every Rare object, though the index's nearest are Common
    objects = store.get_objects("default", [i for i, _ in hits])
    assert {o.type for o in objects} == {"Rare"}


def test_no_index_on_an_empty_store(pg_factory: Any) -> None:
    store = PostgresStore(_url(pg_factory), index_min_rows=1)
    pg_factory.track(store)
    store.set_embedding_model("fake:32", 32)
    assert store.build_indexes() == []
    assert not vector_index_exists(store.db, Kind.OBJECT)


def test_connections_search_with_the_configured_beam_and_widen_it_for_larger_limits(
    pg_factory: Any,
) -> None:
    store = PostgresStore(
        _url(pg_factory) + "&ef_search=10&pool_size=1",
        index_min_rows=50,
        exact_max_rows=0,
    )
    pg_factory.track(store)
    fill(store, 200)
    assert vector_index_exists(store.db, Kind.OBJECT)
    row = store.db.one("SHOW hnsw.ef_search")
    assert row is not None and row["hnsw.ef_search"] == "10"
    query = FakeEmbedder(32).embed_query("thing 7 alpha")
    # a beam of 10 returns at most 10 rows from the index; a limit of 40 must widen it
    # (or fall back to the exact scan), never come back short
    hits = store.vector_search("default", Kind.OBJECT, query, limit=40)
    assert len(hits) == 40
    # the wider beam stays in the session only until the next walk names its own
    log = _Log()
    assert len(store.vector_search("default", Kind.OBJECT, query, limit=10, trace=log)) == 10
    assert log.settings() == {}  # the connection's own beam
    assert store.db.one("SHOW hnsw.ef_search") == row


def test_a_store_from_before_halfvec_is_migrated_with_its_index_and_answers_alike(
    pg_factory: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = _url(pg_factory)
    # the released schema (with today's community tables, which the code expects)
    communities = [m for m in MIGRATIONS if m.name == "m007_create_communities"]
    monkeypatch.setattr(store_module, "MIGRATIONS", MIGRATIONS[:4] + communities)
    old = PostgresStore(url, index_min_rows=10_000)
    pg_factory.track(old)
    fill(old, 120)
    old.db.execute(
        "CREATE INDEX objects_vector ON objects USING hnsw ((vector::vector(32)) "
        "vector_cosine_ops) WHERE dims = 32"
    )
    query = FakeEmbedder(32).embed_query("thing 7 alpha")
    before = old.vector_search("default", Kind.OBJECT, query, limit=5)
    assert old.db.one(
        "SELECT format_type(atttypid, atttypmod) AS t FROM pg_attribute "
        "WHERE attrelid = 'objects'::regclass AND attname = 'vector'"
    ) == {"t": "vector"}
    monkeypatch.undo()
    new = PostgresStore(url)
    pg_factory.track(new)
    applied = {r["name"] for r in new.db.all("SELECT name FROM migrations")}
    assert {"m005_store_halfvec", "m006_key_by_project", "m009_index_float_vectors"} <= applied
    # rows in halfvec (m005); the index rebuilt by m009 over float32 casts of them
    assert new.db.one(
        "SELECT format_type(atttypid, atttypmod) AS t FROM pg_attribute "
        "WHERE attrelid = 'objects'::regclass AND attname = 'vector'"
    ) == {"t": "halfvec"}
    index = new.db.one("SELECT indexdef FROM pg_indexes WHERE indexname = 'objects_vector'")
    assert index is not None and "vector(32)) vector_cosine_ops" in index["indexdef"]
    after = new.vector_search("default", Kind.OBJECT, query, limit=5)
    # the same nearest rows, scored alike but for float16 rounding (near ties may swap)
    assert after[0][0] == before[0][0]
    assert all(abs(a - b) < 2e-3 for (_, a), (_, b) in zip(after, before, strict=True))
    pkey = new.db.one(
        "SELECT pg_get_constraintdef(oid) AS d FROM pg_constraint "
        "WHERE conrelid = 'objects'::regclass AND contype = 'p'"
    )
    assert pkey == {"d": "PRIMARY KEY (project, seq)"}


class _Log:
    """A tracer that keeps the statements, their parameters and the notes of one store
    call."""

    def __init__(self) -> None:
        self.statements: list[str] = []
        self.params: list[list[Any]] = []
        self.notes: list[str] = []

    def __call__(self, sql: str, params: Any) -> None:
        self.statements.append(sql)
        self.params.append(list(params))

    def settings(self) -> dict[str, str]:
        """The run-time settings the call gave its statements (``set_config`` in a
        transaction, or a pooled session's, which the store notes)."""
        local = {
            str(p[0]): str(p[1])
            for sql, p in zip(self.statements, self.params, strict=True)
            if sql.startswith("SELECT set_config")
        }
        noted = [n.removeprefix("setting ").split(" = ", 1) for n in self.notes]
        return {**local, **{x[0]: x[1] for x in noted if len(x) == 2}}

    def note(self, text: str) -> None:
        self.notes.append(text)


def test_a_selective_filter_scans_its_rows_exactly_and_a_broad_one_uses_the_index(
    pg_factory: Any,
) -> None:
    url = _url(pg_factory)
    # 8 Rare objects of 200: below the cut-off of 50 rows, the Common ones above it
    store = PostgresStore(url, index_min_rows=50, exact_max_rows=50)
    pg_factory.track(store)
    fill(store, 200)
    store.db.execute("ANALYZE objects")
    assert vector_index_exists(store.db, Kind.OBJECT)
    exact = PostgresStore(url + "&vector_index=none")
    pg_factory.track(exact)
    query = FakeEmbedder(32).embed_query("thing 7 alpha")
    rare = Filters(object_types=["Rare"])
    log = _Log()
    hits = store.vector_search("default", Kind.OBJECT, query, limit=5, filters=rare, trace=log)
    assert hits == exact.vector_search("default", Kind.OBJECT, query, limit=5, filters=rare)
    assert any("exact scan" in n for n in log.notes), log.notes
    assert not any("::vector(32)" in s for s in log.statements)
    # the broad filter walks the index (its statement casts to the index's type)
    log = _Log()
    common = Filters(object_types=["Common"])
    store.vector_search("default", Kind.OBJECT, query, limit=5, filters=common, trace=log)
    assert any("::vector(32)" in s for s in log.statements), log.statements
    assert not log.notes


def test_relationship_types_are_indexed_for_selective_filters(pg_factory: Any) -> None:
    store = PostgresStore(_url(pg_factory))
    pg_factory.track(store)
    index = store.db.one(
        "SELECT indexdef FROM pg_indexes WHERE schemaname = %s AND indexname = %s",
        (store.db.schema, "relationships_type"),
    )
    assert index is not None and "(project, type)" in index["indexdef"]


def test_an_empty_kind_is_searched_without_statements_until_the_store_writes_to_it(
    pg_factory: Any,
) -> None:
    store = PostgresStore(_url(pg_factory))
    pg_factory.track(store)
    engine = fill(store, 20)  # objects only: no chunks
    query = FakeEmbedder(32).embed_query("thing")
    assert store.vector_search("default", Kind.CHUNK, query, limit=5) == []
    assert store.text_search("default", Kind.CHUNK, "thing", limit=5) == []
    log = _Log()
    assert store.vector_search("default", Kind.CHUNK, query, limit=5, trace=log) == []
    assert store.text_search("default", Kind.CHUNK, "thing", limit=5, trace=log) == []
    assert log.statements == []
    # the store's own write is seen at once, by both legs
    engine.add_chunks([ChunkIn(id="c1", text="thing one")])
    engine.embed_pending(kinds=[Kind.CHUNK])
    assert [i for i, _ in store.text_search("default", Kind.CHUNK, "thing", limit=5)] == ["c1"]
    assert [i for i, _ in store.vector_search("default", Kind.CHUNK, query, limit=5)] == ["c1"]


def _ids(store: PostgresStore, project: str) -> set[str]:
    rows = store.db.all("SELECT id FROM objects WHERE project = %s", (project,))
    return {r["id"] for r in rows}


def test_iterative_scans_only_where_the_conditions_drop_many_indexed_rows(
    pg_factory: Any,
) -> None:
    url = _url(pg_factory)
    store = PostgresStore(url + "&pool_size=1", index_min_rows=50, exact_max_rows=0)
    pg_factory.track(store)
    fill(store, 200)
    store.db.execute("ANALYZE objects")
    query = FakeEmbedder(32).embed_query("thing 7 alpha")
    # every indexed row passes an unfiltered leg: the connection's plain scan, no settings
    plain = _Log()
    assert len(store.vector_search("default", Kind.OBJECT, query, limit=10, trace=plain)) == 10
    assert plain.settings() == {} and not any("iterative" in n for n in plain.notes)
    # a filter keeping a few rows: an iterative scan for that statement only
    rare = _Log()
    hits = store.vector_search(
        "default",
        Kind.OBJECT,
        query,
        limit=10,
        filters=Filters(object_types=["Rare"]),
        trace=rare,
    )
    assert len(hits) == 8
    assert rare.settings().get("hnsw.iterative_scan") == "relaxed_order"
    # the session keeps it until the next walk, which names its own scan
    assert store.db.one("SHOW hnsw.iterative_scan") == {"hnsw.iterative_scan": "relaxed_order"}
    assert len(store.vector_search("default", Kind.OBJECT, query, limit=10)) == 10
    assert store.db.one("SHOW hnsw.iterative_scan") == {"hnsw.iterative_scan": "off"}
    # a small project beside a large one: its unfiltered leg walks iteratively too, and
    # finds its rows although the large project's are the index's nearest
    Engine(store, embedder=FakeEmbedder(32), project="small").add_objects(
        [ObjectIn(type="Common", key=f"s{i}") for i in range(12)]
    )
    Engine(store, embedder=FakeEmbedder(32), project="small").embed_pending()
    store.db.execute("ANALYZE objects")
    small = _Log()
    found = store.vector_search("small", Kind.OBJECT, query, limit=10, trace=small)
    assert len(found) == 10
    assert {i for i, _ in found} <= _ids(store, "small")
    assert small.settings().get("hnsw.iterative_scan") == "relaxed_order"


def test_each_kind_walks_its_own_beam_unless_the_url_sets_one(pg_factory: Any) -> None:
    url = _url(pg_factory)
    store = PostgresStore(url, index_min_rows=50, exact_max_rows=0)
    pg_factory.track(store)
    engine = fill(store, 120)
    ids = sorted(_ids(store, "default"))
    engine.add_relationships(
        [RelationshipIn(source=ids[i], target=ids[i + 1], type="next") for i in range(110)]
    )
    engine.embed_pending()
    assert vector_index_exists(store.db, Kind.RELATIONSHIP)
    query = FakeEmbedder(32).embed_query("thing 7 alpha")
    heard = {kind: _Log() for kind in (Kind.OBJECT, Kind.RELATIONSHIP)}
    for kind, log in heard.items():
        assert len(store.vector_search("default", kind, query, limit=10, trace=log)) == 10
    # objects walk the connection's beam; relationships name theirs (the session keeps
    # it until a walk names another)
    assert heard[Kind.OBJECT].settings() == {}
    assert heard[Kind.RELATIONSHIP].settings() == {
        "hnsw.ef_search": str(EF_SEARCH[Kind.RELATIONSHIP])
    }
    one_beam = PostgresStore(url + "&ef_search=64", index_min_rows=50, exact_max_rows=0)
    pg_factory.track(one_beam)
    log = _Log()
    assert len(one_beam.vector_search("default", Kind.RELATIONSHIP, query, limit=10, trace=log))
    assert log.settings() == {}


def test_an_exact_scan_reads_its_kind_s_exact_scan_index_alone(pg_factory: Any) -> None:
    # the index holds each live embedded row's vector (schema m013): read instead of
    # every page of the table, with its texts and JSON
    # rows as wide as the sample graph's (a text, 384 dims): at the planner's default
    # price of an index page the whole table looks cheaper to read than the index
    url = _url(pg_factory)
    store = PostgresStore(url, index_min_rows=10**9)
    pg_factory.track(store)
    engine = Engine(store, embedder=FakeEmbedder(384))
    about = "a film of the sample graph, with a plot told at some length " * 8
    engine.add_objects(
        [
            ObjectIn(type="Film", key=f"k{i}", properties={"about": f"{i} {about}"})
            for i in range(300)
        ]
    )
    engine.embed_pending(kinds=[Kind.OBJECT])
    store.db.execute("VACUUM ANALYZE objects")
    query = FakeEmbedder(384).embed_query("17 a film")
    log = _Log()
    hits = store.vector_search("default", Kind.OBJECT, query, limit=5, trace=log)
    exact = PostgresStore(url + "&vector_index=none")
    pg_factory.track(exact)
    assert hits == exact.vector_search("default", Kind.OBJECT, query, limit=5)
    (at,) = [i for i, sql in enumerate(log.statements) if "::halfvec" in sql]
    with store.db.transaction() as conn:
        store.db.set_local(conn, log.settings())
        rows = conn.execute("EXPLAIN " + log.statements[at], log.params[at]).fetchall()
    plan = "\n".join(r["QUERY PLAN"] for r in rows)
    assert "Index Only Scan using objects_exact" in plan, plan


def test_vectors_too_long_for_the_exact_scan_index_are_stored_and_found(
    pg_factory: Any,
) -> None:
    # a btree entry holds 2,704 bytes: 1,536 halfvec dims (3,080) stay out of the index
    store = PostgresStore(_url(pg_factory))
    pg_factory.track(store)
    engine = Engine(store, embedder=FakeEmbedder(1536))
    engine.add_objects(
        [ObjectIn(type="T", key=f"k{i}", properties={"name": f"long {i}"}) for i in range(3)]
    )
    engine.embed_pending(kinds=[Kind.OBJECT])
    query = FakeEmbedder(1536).embed_query("long 1")
    hits = store.vector_search("default", Kind.OBJECT, query, limit=3)
    assert len(hits) == 3
    assert hits[0][0] == engine.get_object_by_key("T", "k1").id


def test_pooled_connections_compile_no_statement(pg_factory: Any) -> None:
    # a statement of milliseconds gains nothing from JIT, which compiles for tens
    store = PostgresStore(_url(pg_factory))
    pg_factory.track(store)
    assert store.db.one("SHOW jit") == {"jit": "off"}


def test_settings_given_to_one_statement_are_undone_for_the_next(pg_factory: Any) -> None:
    # one pooled connection: a statement's settings stay in its session until a
    # statement wanting others (or the connection's own) takes it; those of a vector
    # walk stay until a statement names them (every walk names them)
    store = PostgresStore(_url(pg_factory) + "&pool_size=1")
    pg_factory.track(store)
    show = (
        "SELECT current_setting('hnsw.ef_search') AS ef, "
        "current_setting('random_page_cost') AS cost, current_setting('jit') AS jit"
    )
    own = store.db.one(show)
    assert own == {"ef": str(EF_SEARCH[Kind.OBJECT]), "cost": "1.1", "jit": "off"}
    wanted = {"hnsw.ef_search": "64", "random_page_cost": "1.25", "jit": "on"}
    assert store.db.all_with(wanted, show) == [{"ef": "64", "cost": "1.25", "jit": "on"}]
    assert store.db.all_with({"hnsw.ef_search": "80"}, show) == [
        {"ef": "80", "cost": "1.1", "jit": "off"}
    ]
    assert store.db.one(show) == {**own, "ef": "80"}
    assert store.db.all_with({"hnsw.ef_search": own["ef"]}, show) == [own]
    store.db.all_with(wanted, show)
    with store.db.transaction():  # a transaction starts from the connection's own too
        assert store.db.one(show) == own
    with pytest.raises(StoreError, match="not a setting name"):
        store.db.all_with({"x; DROP TABLE objects": "1"}, show)
    assert store.db.one(show) == own


def test_a_bulk_load_leaves_its_tables_vacuumed_for_index_only_scans(pg_factory: Any) -> None:
    # a migrated copy is searched at once: its pages must be marked all-visible, or the
    # exact scan's index-only plan visits the table for every row until autovacuum runs
    store = PostgresStore(_url(pg_factory))
    pg_factory.track(store)
    engine = Engine(store, embedder=FakeEmbedder(32))
    with store.bulk_load():
        engine.add_objects([ObjectIn(type="Film", key=f"k{i}") for i in range(500)])

    row = store.db.one(
        "SELECT c.relpages, c.relallvisible, s.last_vacuum IS NOT NULL AS vacuumed "
        "FROM pg_class c JOIN pg_stat_user_tables s ON s.relid = c.oid "
        "WHERE c.oid = to_regclass('objects')"
    )
    assert row is not None
    assert row["vacuumed"]
    assert row["relpages"] > 0 and row["relallvisible"] == row["relpages"], row


def test_a_chunk_with_a_long_id_is_embedded_and_found_at_768_dims(pg_factory: Any) -> None:
    # ids are not in the exact-scan index: the longest id (MAX_ID_BYTES) beside a
    # 768-dim vector and a long project name would not fit a btree entry (2,704 bytes)
    store = PostgresStore(_url(pg_factory), index_min_rows=10**9)
    pg_factory.track(store)
    # (texts that do not compress: PostgreSQL compresses a large index entry first)
    project = "".join(hashlib.sha256(str(i).encode()).hexdigest() for i in range(4))[:200]
    engine = Engine(store, embedder=FakeEmbedder(768), project=project)
    long_id = ("doc:" + "".join(hashlib.sha256(str(i).encode()).hexdigest() for i in range(24)))[
        :MAX_ID_BYTES
    ]
    engine.add_sources([SourceIn(id="s")])
    engine.add_chunks(
        [ChunkIn(id=long_id, text="a passage", source_id="s")]
        + [ChunkIn(id=f"c{i}", text=f"passage {i}", source_id="s") for i in range(20)]
    )
    report = engine.embed_pending(kinds=[Kind.CHUNK])
    assert report.failed == 0 and report.embedded == 21

    query = FakeEmbedder(768).embed_query("a passage")
    hits = store.vector_search(project, Kind.CHUNK, query, limit=3)
    assert hits[0][0] == long_id
