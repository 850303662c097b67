"""PostgreSQL schema as named, append-only migrations (never edit a released one).

Tables mirror the SQLite store's columns (so both decode through ``store/rows.py``),
with native types: ``json`` (keeps key order, unlike ``jsonb``), ``timestamptz``, a
pgvector ``halfvec`` column without fixed dimensions (``vector`` before m005; the HNSW
index casts to the store's dims), and a generated ``tsvector`` column under the
``kgsearch`` text-search configuration: English stemming with no stopword list, since
the query side drops
stopwords itself (as with SQLite's porter tokenizer, "not" or "the" stay searchable
when they are all a query has). The ``tsvector`` is built from ``words``, the text's
``\\w`` runs written by the store (``values.words``), so words split exactly as query
words are and as SQLite's unicode61 tokenizer splits them: PostgreSQL's own parser
would keep "3.12", host names, e-mail addresses and paths whole.
"""

from __future__ import annotations

from collections.abc import Sequence

from kgsearch.store.migrations import Execute, Migration

__all__ = [
    "DISTRIBUTED_TABLES",
    "HNSW_SQL",
    "INDEXED_DISTANCE",
    "IVFFLAT_SQL",
    "MIGRATIONS",
    "REFERENCE_TABLES",
    "SCHEMA_VERSION",
    "VECTOR_WRITE_TRIGGERS",
]

_VECTOR_TABLES = ("objects", "relationships", "chunks")
_PROJECT_TABLES = ("objects", "relationships", "sources", "chunks", "mentions")
_COMMUNITY_TABLES = ("community_builds", "communities", "community_members", "community_reports")
# Citus layout (docs/scaling.md): tables distributed by a column, with the distribution
# column every primary and unique key must hold; the per-project tables are co-located.
DISTRIBUTED_TABLES = {
    **{t: "project" for t in (*_PROJECT_TABLES, "tasks")},
    **{t: "project" for t in _COMMUNITY_TABLES},
    "llm_usage": "project",  # LLM spend per (project, key, minute), summed per project
    "cache": "namespace",  # LLM responses: can grow large, looked up by (namespace, key)
    # the log of vector writes (m014): grows with the writes; unused on Citus, whose
    # distributed tables carry no triggers
    "vector_writes": "kind",
}
# Small tables every node may hold a copy of (Citus reference tables).
REFERENCE_TABLES = ("meta", "migrations", "embed_stats", "api_keys")

# The vector index of a kind, over the ``halfvec`` column cast to ``vector`` (float32)
# of the store's dims (``%s``): the rows keep 2 bytes a dimension, the index 4, since
# pgvector's halfvec distance converts every float16 on each call (measured 4 times
# slower than vector's on PostgreSQL 18 + pgvector 0.8.6, and distances are most of an
# HNSW search's work). m = 32, ef_construction = 400: on MetaQA's objects (short,
# similar texts) m = 24 and 128 gave recall@10 0.87 at ef_search 200 and 0.92 even at
# 1000; these give 0.954 at 400 (m = 48 / 200: 0.961, a larger index).
HNSW_SQL = "hnsw ((vector::vector(%s)) vector_cosine_ops) WITH (m = 32, ef_construction = 400)"
IVFFLAT_SQL = "ivfflat ((vector::vector(%s)) vector_cosine_ops) WITH (lists = %s)"
# The expression both index over, for queries that use them: (dims, dims).
INDEXED_DISTANCE = "t.vector::vector(%d) <=> %%s::vector(%d)"
# What m005 built (released migrations never change).
_HNSW_HALFVEC_SQL = (
    "hnsw ((vector::halfvec(%s)) halfvec_cosine_ops) WITH (m = 32, ef_construction = 400)"
)
_IVFFLAT_HALFVEC_SQL = "ivfflat ((vector::halfvec(%s)) halfvec_cosine_ops) WITH (lists = %s)"

_EMBEDDING_COLUMNS = """
    text TEXT NOT NULL DEFAULT '',
    text_hash TEXT NOT NULL DEFAULT '',
    text_version INTEGER NOT NULL DEFAULT 0,
    status TEXT NOT NULL DEFAULT 'pending'
        CHECK (status IN ('pending', 'embedded', 'failed', 'dead')),
    attempts INTEGER NOT NULL DEFAULT 0,
    last_error TEXT,
    next_attempt_at DOUBLE PRECISION NOT NULL DEFAULT 0,
    claimed_until DOUBLE PRECISION NOT NULL DEFAULT 0,
    embedded_text TEXT,
    embedded_hash TEXT,
    model TEXT,
    dims INTEGER,
    embedded_at TIMESTAMPTZ,
    vector vector,
    words TEXT NOT NULL DEFAULT '',
    tsv tsvector GENERATED ALWAYS AS (to_tsvector('kgsearch', words)) STORED
"""


def m001_create_graph(execute: Execute) -> None:
    """Objects, relationships, sources, chunks, mentions, lexical and due indexes."""
    execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    execute("CREATE TEXT SEARCH DICTIONARY kgsearch_stem (TEMPLATE = snowball, Language = english)")
    execute("CREATE TEXT SEARCH CONFIGURATION kgsearch (COPY = pg_catalog.english)")
    execute(
        "ALTER TEXT SEARCH CONFIGURATION kgsearch ALTER MAPPING FOR asciiword, asciihword, "
        "hword_asciipart, word, hword, hword_part WITH kgsearch_stem"
    )
    execute(
        f"""CREATE TABLE objects (
            seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            id TEXT NOT NULL, project TEXT NOT NULL, type TEXT NOT NULL, key TEXT NOT NULL,
            tags JSON NOT NULL DEFAULT '[]', properties JSON NOT NULL DEFAULT '{{}}',
            labels JSON NOT NULL DEFAULT '[]',
            created_at TIMESTAMPTZ NOT NULL, updated_at TIMESTAMPTZ NOT NULL,
            deleted_at TIMESTAMPTZ,
            {_EMBEDDING_COLUMNS},
            UNIQUE (project, id), UNIQUE (project, type, key))"""
    )
    execute(
        f"""CREATE TABLE relationships (
            seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            id TEXT NOT NULL, project TEXT NOT NULL, type TEXT NOT NULL,
            source_id TEXT NOT NULL, target_id TEXT NOT NULL, label TEXT,
            properties JSON NOT NULL DEFAULT '{{}}', weight DOUBLE PRECISION NOT NULL DEFAULT 1.0,
            valid_from TIMESTAMPTZ, valid_to TIMESTAMPTZ, description TEXT,
            source_chunks JSON NOT NULL DEFAULT '[]',
            created_at TIMESTAMPTZ NOT NULL, updated_at TIMESTAMPTZ NOT NULL,
            deleted_at TIMESTAMPTZ,
            {_EMBEDDING_COLUMNS},
            UNIQUE (project, id))"""
    )
    execute("CREATE INDEX relationships_source ON relationships (project, source_id)")
    execute("CREATE INDEX relationships_target ON relationships (project, target_id)")
    execute(
        """CREATE TABLE sources (
            seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            id TEXT NOT NULL, project TEXT NOT NULL, title TEXT, uri TEXT,
            metadata JSON NOT NULL DEFAULT '{}', created_at TIMESTAMPTZ NOT NULL,
            deleted_at TIMESTAMPTZ,
            UNIQUE (project, id))"""
    )
    execute(
        f"""CREATE TABLE chunks (
            seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            id TEXT NOT NULL, project TEXT NOT NULL, source_id TEXT, body TEXT NOT NULL,
            position INTEGER NOT NULL DEFAULT 0, metadata JSON NOT NULL DEFAULT '{{}}',
            created_at TIMESTAMPTZ NOT NULL, updated_at TIMESTAMPTZ NOT NULL,
            deleted_at TIMESTAMPTZ,
            {_EMBEDDING_COLUMNS},
            UNIQUE (project, id))"""
    )
    execute("CREATE INDEX chunks_source ON chunks (project, source_id)")
    execute(
        """CREATE TABLE mentions (
            seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            project TEXT NOT NULL, source_id TEXT NOT NULL DEFAULT '',
            chunk_id TEXT NOT NULL DEFAULT '', object_id TEXT NOT NULL DEFAULT '',
            relationship_id TEXT NOT NULL DEFAULT '',
            UNIQUE (project, source_id, chunk_id, object_id, relationship_id))"""
    )
    execute("CREATE INDEX mentions_object ON mentions (project, object_id)")
    execute("CREATE INDEX mentions_relationship ON mentions (project, relationship_id)")
    execute("CREATE INDEX mentions_chunk ON mentions (project, chunk_id)")
    for table in ("objects", "relationships", "chunks"):
        # Due rows only: the claim query's index stays small once most rows are embedded.
        execute(
            f"CREATE INDEX {table}_due ON {table} (next_attempt_at) "
            "WHERE status IN ('pending', 'failed') AND deleted_at IS NULL"
        )
        execute(f"CREATE INDEX {table}_tsv ON {table} USING gin (tsv) WHERE deleted_at IS NULL")
        execute(f"CREATE INDEX {table}_project ON {table} (project, seq)")
    execute("CREATE INDEX sources_project ON sources (project, seq)")
    execute(
        "CREATE TABLE embed_stats (kind TEXT PRIMARY KEY, texts BIGINT NOT NULL, "
        "ms DOUBLE PRECISION NOT NULL)"
    )
    execute(
        """CREATE TABLE api_keys (
            id TEXT PRIMARY KEY, project TEXT NOT NULL, name TEXT,
            scopes JSON NOT NULL DEFAULT '[]', key_hash TEXT NOT NULL,
            created_at TIMESTAMPTZ NOT NULL, revoked_at TIMESTAMPTZ)"""
    )
    execute("CREATE INDEX api_keys_project ON api_keys (project)")


def m002_index_object_names(execute: Execute) -> None:
    """Index object keys without case, for the exact-name search leg."""
    execute("CREATE INDEX IF NOT EXISTS objects_name ON objects (project, lower(key))")


def m003_create_tasks(execute: Execute) -> None:
    """The generic task queue: one row per (project, job, row id), with the hash of
    the input it was queued for, its state, attempts, lease and JSON payload/result
    (``text``: the store reads them back whole, never inside SQL)."""
    execute(
        """CREATE TABLE tasks (
            seq BIGINT GENERATED ALWAYS AS IDENTITY UNIQUE,
            project TEXT NOT NULL, job TEXT NOT NULL, row_id TEXT NOT NULL,
            input_hash TEXT NOT NULL,
            status TEXT NOT NULL DEFAULT 'pending'
                CHECK (status IN ('pending', 'running', 'done', 'failed', 'dead')),
            attempts INTEGER NOT NULL DEFAULT 0,
            last_error TEXT,
            next_attempt_at DOUBLE PRECISION NOT NULL DEFAULT 0,
            claimed_until DOUBLE PRECISION NOT NULL DEFAULT 0,
            payload TEXT NOT NULL DEFAULT '{}',
            result TEXT,
            created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
            updated_at TIMESTAMPTZ NOT NULL DEFAULT now(),
            PRIMARY KEY (project, job, row_id))"""
    )
    # Unfinished tasks only: the claim query's index stays small once most are done.
    execute(
        "CREATE INDEX tasks_due ON tasks (job, next_attempt_at) "
        "WHERE status IN ('pending', 'failed', 'running')"
    )


def m004_create_cache(execute: Execute) -> None:
    """A key/value cache shared by every project (LLM responses)."""
    execute(
        """CREATE TABLE cache (
            namespace TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL,
            created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
            PRIMARY KEY (namespace, key))"""
    )


def _rebuild_vector_indexes(
    tables: Sequence[str], hnsw: str, ivfflat: str, *, first: str = "", then: str = ""
) -> str:
    """A ``DO`` block that drops each table's vector index and, when there was one,
    builds it again of the same kind (``hnsw``, ``ivfflat``: the ``USING`` clauses),
    running ``first`` before the loop and ``then`` after each drop."""
    listed = ", ".join(f"'{t}'" for t in tables)
    return f"""DO $$
        DECLARE t text; had text; d int;
        BEGIN
            SELECT value::int INTO d FROM meta WHERE key = 'dims';{first}
            FOREACH t IN ARRAY ARRAY[{listed}] LOOP
                had := NULL;
                SELECT am.amname INTO had FROM pg_class c JOIN pg_am am ON am.oid = c.relam
                    WHERE c.oid = to_regclass(quote_ident(t || '_vector'));
                EXECUTE format('DROP INDEX IF EXISTS %I', t || '_vector');{then}
                IF had = 'ivfflat' AND d IS NOT NULL THEN
                    EXECUTE format('CREATE INDEX %I ON %I USING %s WHERE dims = %s',
                        t || '_vector', t, '{ivfflat}', d);
                ELSIF had IS NOT NULL AND d IS NOT NULL THEN
                    EXECUTE format('CREATE INDEX %I ON %I USING %s WHERE dims = %s',
                        t || '_vector', t, '{hnsw}', d);
                END IF;
            END LOOP;
        END $$"""


def m005_store_halfvec(execute: Execute) -> None:
    """Vectors as ``halfvec`` (2 bytes a dimension: a 384-dim row is 776 bytes, stored
    inline instead of TOASTed; needs pgvector 0.7+). Each kind's vector index (built on
    the old type) is dropped and, when there was one, built again over ``halfvec``."""
    hnsw = _HNSW_HALFVEC_SQL.replace("%s", "' || d || '")
    ivfflat = _IVFFLAT_HALFVEC_SQL.replace("%s", "' || d || '", 1).replace("%s", "100")
    execute(
        _rebuild_vector_indexes(
            _VECTOR_TABLES,
            hnsw,
            ivfflat,
            then="""
                EXECUTE format(
                    'ALTER TABLE %I ALTER COLUMN vector TYPE halfvec USING vector::halfvec', t);""",
        )
    )


def m006_key_by_project(execute: Execute) -> None:
    """Every primary and unique key of a per-project table starts with ``project``, so
    Citus can distribute the tables by project, co-located (see docs/scaling.md).

    The ``(project, seq)`` primary keys replace the ``seq`` ones and the
    ``{table}_project`` indexes they duplicate; the tasks' ``seq`` becomes unique per
    project."""
    for table in _PROJECT_TABLES:
        execute(f"ALTER TABLE {table} DROP CONSTRAINT {table}_pkey")
        execute(f"ALTER TABLE {table} ADD PRIMARY KEY (project, seq)")
        execute(f"DROP INDEX IF EXISTS {table}_project")
    execute("ALTER TABLE tasks DROP CONSTRAINT tasks_seq_key")
    execute("ALTER TABLE tasks ADD CONSTRAINT tasks_project_seq_key UNIQUE (project, seq)")


def m007_create_communities(execute: Execute) -> None:
    """Communities (one build per project), membership by object, and community reports:
    embeddable rows of kind ``community`` with the usual lifecycle, ``halfvec`` vectors
    (as m005 made the other kinds) and a lexical index; keys start with ``project``
    (m006)."""
    execute(
        """CREATE TABLE community_builds (
            project TEXT PRIMARY KEY, build_id TEXT NOT NULL, generation INTEGER NOT NULL,
            params TEXT NOT NULL, created_at TIMESTAMPTZ NOT NULL DEFAULT now())"""
    )
    execute(
        """CREATE TABLE communities (
            project TEXT NOT NULL, id TEXT NOT NULL, level INTEGER NOT NULL, parent TEXT,
            members JSON NOT NULL, size INTEGER NOT NULL, rank DOUBLE PRECISION NOT NULL,
            build_id TEXT NOT NULL,
            PRIMARY KEY (project, id))"""
    )
    execute("CREATE INDEX communities_level ON communities (project, level, rank)")
    execute(
        """CREATE TABLE community_members (
            project TEXT NOT NULL, object_id TEXT NOT NULL, level INTEGER NOT NULL,
            community_id TEXT NOT NULL,
            PRIMARY KEY (project, object_id, level))"""
    )
    execute(
        f"""CREATE TABLE community_reports (
            seq BIGINT GENERATED ALWAYS AS IDENTITY,
            id TEXT NOT NULL, project TEXT NOT NULL, level INTEGER NOT NULL,
            title TEXT NOT NULL, summary TEXT NOT NULL, findings JSON NOT NULL DEFAULT '[]',
            rating DOUBLE PRECISION NOT NULL DEFAULT 0,
            rating_explanation TEXT NOT NULL DEFAULT '',
            method TEXT NOT NULL, prompt_version TEXT NOT NULL DEFAULT '', report_model TEXT,
            source_digest TEXT NOT NULL DEFAULT '',
            created_at TIMESTAMPTZ NOT NULL, updated_at TIMESTAMPTZ NOT NULL,
            deleted_at TIMESTAMPTZ,
            {_EMBEDDING_COLUMNS},
            PRIMARY KEY (project, seq), UNIQUE (project, id))"""
    )
    execute("ALTER TABLE community_reports ALTER COLUMN vector TYPE halfvec")
    execute(
        "CREATE INDEX community_reports_due ON community_reports (next_attempt_at) "
        "WHERE status IN ('pending', 'failed') AND deleted_at IS NULL"
    )
    execute(
        "CREATE INDEX community_reports_tsv ON community_reports USING gin (tsv) "
        "WHERE deleted_at IS NULL"
    )


def m008_index_relationship_types(execute: Execute) -> None:
    """Relationships by type within a project (objects have their ``(project, type,
    key)`` key): a vector leg filtered to a rare type scans just its rows exactly."""
    execute("CREATE INDEX IF NOT EXISTS relationships_type ON relationships (project, type)")


def m009_index_float_vectors(execute: Execute) -> None:
    """Vector indexes over ``vector`` (float32) casts of the ``halfvec`` column, whose
    distances pgvector computes several times faster (see ``HNSW_SQL``). Each kind's
    index is dropped and, when there was one, built again (minutes on 10^5 rows)."""
    hnsw = HNSW_SQL.replace("%s", "' || d || '")
    ivfflat = IVFFLAT_SQL.replace("%s", "' || d || '", 1).replace("%s", "100")
    execute(
        _rebuild_vector_indexes(
            (*_VECTOR_TABLES, "community_reports"),
            hnsw,
            ivfflat,
            first="""
            SET LOCAL maintenance_work_mem = '512MB';""",
        )
    )


def m010_associations_not_facts(execute: Execute) -> None:
    """Co-occurrence is association data, not facts (docs/extraction.md): the
    ``co_occurs`` relationships that extraction wrote (they carry ``_chunks``) are
    deleted with their mention links; the entity–chunk mentions they came from stay.
    Imported ``co_occurs`` relationships (no ``_chunks``) are left alone."""
    execute(
        "UPDATE relationships SET deleted_at = now() WHERE type = 'co_occurs' "
        "AND deleted_at IS NULL AND properties -> '_chunks' IS NOT NULL"
    )
    execute(
        "DELETE FROM mentions m USING relationships r WHERE m.relationship_id != '' "
        "AND r.project = m.project AND r.id = m.relationship_id "
        "AND r.type = 'co_occurs' AND r.deleted_at IS NOT NULL"
    )


def m011_llm_budgets(execute: Execute) -> None:
    """LLM spend per (project, API key, UTC minute), for budgets that survive a restart
    (:mod:`kgsearch.store.usage`), and each key's own limits (JSON, NULL: the server's)."""
    execute(
        """CREATE TABLE llm_usage (
            project TEXT NOT NULL, key_id TEXT NOT NULL, minute BIGINT NOT NULL,
            requests BIGINT NOT NULL DEFAULT 0,
            prompt_tokens BIGINT NOT NULL DEFAULT 0,
            completion_tokens BIGINT NOT NULL DEFAULT 0,
            cost_usd DOUBLE PRECISION NOT NULL DEFAULT 0,
            PRIMARY KEY (project, key_id, minute))"""
    )
    execute("CREATE INDEX llm_usage_minute ON llm_usage (minute)")
    execute("ALTER TABLE api_keys ADD COLUMN llm_limits TEXT")


def m012_embedding_skipped(execute: Execute) -> None:
    """Objects may be ``skipped`` for embedding (named once by extraction, no
    relationship: docs/extraction.md)."""
    execute("ALTER TABLE objects DROP CONSTRAINT IF EXISTS objects_status_check")
    execute(
        "ALTER TABLE objects ADD CONSTRAINT objects_status_check "
        "CHECK (status IN ('pending', 'embedded', 'failed', 'dead', 'skipped'))"
    )


# What an exact vector scan (search.py) returns or tests beyond the index's key and
# predicate, per table: the relationships' validity too.
# No id: ids are the caller's (a chunk's holds its document's path), and one long
# enough would not fit a btree entry; the scan reads the top rows' ids by their keys.
_EXACT_SCAN_COLUMNS = {
    "objects": "seq, vector",
    "relationships": "seq, vector, valid_from, valid_to",
    "chunks": "seq, vector",
    "community_reports": "seq, vector",
}
# Vectors of more dims are left out of those indexes: a btree entry holds at most
# 2,704 bytes; a halfvec takes 2 a dim and 8 more (768 dims: 1,544 bytes), a project
# name at most 200 characters (800 bytes), seq, dims and validity 36.
EXACT_SCAN_MAX_DIMS = 768


def m013_index_exact_scans(execute: Execute) -> None:
    """Each kind's live embedded rows by ``(project, dims)``, holding what an exact
    vector scan reads: the scan reads this index alone (an index-only scan) instead of
    every page of the table, whose rows also hold texts and JSON (on the sample graph's
    8,031 objects: 1,007 pages instead of 1,858 to 3,313, and 4.2 instead of 7.6 ms of
    CPU per scan)."""
    for table, columns in _EXACT_SCAN_COLUMNS.items():
        execute(
            f"CREATE INDEX IF NOT EXISTS {table}_exact ON {table} (project, dims) "
            f"INCLUDE ({columns}) WHERE deleted_at IS NULL AND status = 'embedded' "
            f"AND vector IS NOT NULL AND dims <= {EXACT_SCAN_MAX_DIMS}"
        )


# The kinds whose vectors a process may hold (store/postgres/held.py), by table.
_HELD_KINDS = {
    "objects": "object",
    "relationships": "relationship",
    "chunks": "chunk",
    "community_reports": "community",
}
# What a held copy depends on: an update changing none of these is not logged (a
# queue's claim, a text edited before it is embedded again).
_HELD_COLUMNS = ("project", "id", "status", "deleted_at", "dims", "vector")
# The triggers m014 creates on each table (Citus refuses triggers on distributed
# tables: citus.distribute drops them, and a distributed store holds no vectors).
VECTOR_WRITE_TRIGGERS = ("held_insert", "held_update", "held_delete", "held_truncate")
# A row is held when it is live and embedded.
_HELD_ROW = "{0}.deleted_at IS NULL AND {0}.status = 'embedded' AND {0}.vector IS NOT NULL"


def _log_function(name: str, rows: str) -> str:
    """A trigger function logging ``rows`` (a query over the statement's transition
    tables yielding ``seq``) under the trigger's kind and the current transaction; its
    search_path fixed at creation, so a session with another (psql) finds the log."""
    return f"""CREATE OR REPLACE FUNCTION {name}() RETURNS trigger
        LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
        BEGIN
            INSERT INTO vector_writes (kind, xid, seq)
                SELECT DISTINCT TG_ARGV[0], pg_current_xact_id(), r.seq FROM ({rows}) AS r
                ON CONFLICT DO NOTHING;
            RETURN NULL;
        END $$"""


def m014_log_vector_writes(execute: Execute) -> None:
    """A log of the rows whose vector or liveness each transaction changed: (kind,
    transaction id, ``seq``), written by statement triggers from their transition
    tables inside the writing transaction, so it commits (or not) with the writes. A
    process holding a kind's vectors remembers the snapshot it read them in; a logged
    transaction visible now but not then (``pg_visible_in_snapshot``) makes them stale,
    and its rows are read again. No row is locked and no counter shared, so concurrent
    writers never wait for one another. Inserts log the rows born held, updates those
    whose held columns changed (a queue's claims log nothing), deletes every row, and a
    truncation ``seq`` 0 (read everything again). Tables already distributed by Citus
    get no triggers."""
    execute(
        "CREATE TABLE IF NOT EXISTS vector_writes (kind TEXT NOT NULL, xid xid8 NOT NULL, "
        "seq BIGINT NOT NULL, PRIMARY KEY (kind, xid, seq))"
    )
    execute(
        _log_function(
            "kgsearch_held_insert",
            f"SELECT n.seq FROM new_rows n WHERE {_HELD_ROW.format('n')}",
        )
    )
    execute(_log_function("kgsearch_held_delete", "SELECT o.seq FROM old_rows o"))
    execute(_log_function("kgsearch_held_truncate", "SELECT 0::bigint AS seq"))
    for columns, suffix in ((_HELD_COLUMNS, ""), (("valid_from", "valid_to"), "_valid")):
        changed = " OR ".join(
            f"o.{c} IS DISTINCT FROM n.{c}" for c in _HELD_COLUMNS + (columns if suffix else ())
        )
        execute(
            _log_function(
                f"kgsearch_held_update{suffix}",
                f"SELECT n.seq FROM new_rows n JOIN old_rows o ON o.seq = n.seq WHERE {changed}",
            )
        )
    for table, kind in _HELD_KINDS.items():
        update = "update_valid" if kind == "relationship" else "update"
        execute(
            f"""DO $$ DECLARE spread boolean := false; BEGIN
            IF to_regclass('pg_catalog.pg_dist_partition') IS NOT NULL THEN
                EXECUTE 'SELECT EXISTS (SELECT 1 FROM pg_dist_partition '
                    'WHERE logicalrelid = ''{table}''::regclass)' INTO spread;
            END IF;
            IF spread THEN RETURN; END IF;
            CREATE TRIGGER held_insert AFTER INSERT ON {table}
                REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT
                EXECUTE FUNCTION kgsearch_held_insert('{kind}');
            CREATE TRIGGER held_update AFTER UPDATE ON {table}
                REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT
                EXECUTE FUNCTION kgsearch_held_{update}('{kind}');
            CREATE TRIGGER held_delete AFTER DELETE ON {table}
                REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT
                EXECUTE FUNCTION kgsearch_held_delete('{kind}');
            CREATE TRIGGER held_truncate AFTER TRUNCATE ON {table}
                FOR EACH STATEMENT EXECUTE FUNCTION kgsearch_held_truncate('{kind}');
            END $$"""
        )


MIGRATIONS = [
    Migration("m001_create_graph", m001_create_graph),
    Migration("m002_index_object_names", m002_index_object_names),
    Migration("m003_create_tasks", m003_create_tasks),
    Migration("m004_create_cache", m004_create_cache),
    Migration("m005_store_halfvec", m005_store_halfvec),
    Migration("m006_key_by_project", m006_key_by_project),
    Migration("m007_create_communities", m007_create_communities),
    Migration("m008_index_relationship_types", m008_index_relationship_types),
    Migration("m009_index_float_vectors", m009_index_float_vectors),
    Migration("m010_associations_not_facts", m010_associations_not_facts),
    Migration("m011_llm_budgets", m011_llm_budgets),
    Migration("m012_embedding_skipped", m012_embedding_skipped),
    Migration("m013_index_exact_scans", m013_index_exact_scans),
    Migration("m014_log_vector_writes", m014_log_vector_writes),
]
SCHEMA_VERSION = len(MIGRATIONS)
