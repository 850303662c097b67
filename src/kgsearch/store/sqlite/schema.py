"""SQLite schema as named, append-only migrations (never edit a released one)."""

from __future__ import annotations

from kgsearch.store.migrations import Execute, Migration

__all__ = [
    "DEFERRABLE_FTS",
    "LIVE_INDEXES",
    "MIGRATIONS",
    "ROWS_EPOCH_TABLES",
    "SCHEMA_VERSION",
    "SECONDARY_INDEXES",
    "SHOWN_COLUMNS",
    "fts_flush_sql",
    "fts_triggers",
]

# Indexes a bulk load may drop and rebuild (sorting once beats random inserts);
# the last one of each table is its due-for-embedding index.
SECONDARY_INDEXES: dict[str, list[str]] = {
    "objects": [
        "CREATE INDEX IF NOT EXISTS objects_name ON objects (project, key COLLATE NOCASE)",
        # m001 creates the last index of each list
        "CREATE INDEX IF NOT EXISTS objects_due ON objects (status, next_attempt_at)",
    ],
    "relationships": [
        "CREATE INDEX IF NOT EXISTS relationships_source ON relationships (project, source_id)",
        "CREATE INDEX IF NOT EXISTS relationships_target ON relationships (project, target_id)",
        "CREATE INDEX IF NOT EXISTS relationships_due ON relationships (status, next_attempt_at)",
    ],
    "chunks": ["CREATE INDEX IF NOT EXISTS chunks_due ON chunks (status, next_attempt_at)"],
}

_EMBEDDING_COLUMNS = """
    text TEXT NOT NULL DEFAULT '',
    text_hash TEXT NOT NULL DEFAULT '',
    text_version INTEGER NOT NULL DEFAULT 0,
    status TEXT NOT NULL DEFAULT 'pending'
        CHECK (status IN ('pending', 'embedded', 'failed', 'dead')),
    attempts INTEGER NOT NULL DEFAULT 0,
    last_error TEXT,
    next_attempt_at REAL NOT NULL DEFAULT 0,
    claimed_until REAL NOT NULL DEFAULT 0,
    embedded_text TEXT,
    embedded_hash TEXT,
    model TEXT,
    dims INTEGER,
    embedded_at TEXT,
    vector BLOB
"""


def _fts(execute: Execute, table: str) -> None:
    """An external-content FTS5 index over ``table.text`` kept in sync by triggers.

    Soft-deleted rows leave the index, so no lexical leg can return them.
    """
    execute(
        f"CREATE VIRTUAL TABLE {table}_fts USING fts5("
        f"text, content='{table}', content_rowid='rowid', tokenize='porter unicode61')"
    )
    _plain_fts_triggers(execute, table)


def fts_triggers(execute: Execute, table: str) -> None:
    """(Re)create the triggers that keep ``{table}_fts`` in step with ``table`` (as the
    latest migration has them)."""
    if table in DEFERRABLE_FTS:
        _deferrable_fts_triggers(execute, table)
    else:
        _plain_fts_triggers(execute, table)


def _plain_fts_triggers(execute: Execute, table: str) -> None:
    """The triggers of m001 (the update one as m013 has it)."""
    execute(
        f"CREATE TRIGGER {table}_fts_ai AFTER INSERT ON {table} "
        f"WHEN new.deleted_at IS NULL BEGIN "
        f"INSERT INTO {table}_fts(rowid, text) VALUES (new.rowid, new.text); END"
    )
    execute(
        f"CREATE TRIGGER {table}_fts_ad AFTER DELETE ON {table} "
        f"WHEN old.deleted_at IS NULL BEGIN "
        f"INSERT INTO {table}_fts({table}_fts, rowid, text) "
        f"VALUES ('delete', old.rowid, old.text); END"
    )
    _fts_update_trigger(execute, table)


def _fts_update_trigger(execute: Execute, table: str) -> None:
    """The update trigger: it re-indexes a row only when its text or liveness changed
    (an upsert rewriting the same text leaves the index alone)."""
    execute(
        f"CREATE TRIGGER {table}_fts_au AFTER UPDATE OF text, deleted_at ON {table} "
        f"WHEN old.text IS NOT new.text "
        f"OR (old.deleted_at IS NULL) IS NOT (new.deleted_at IS NULL) BEGIN "
        f"INSERT INTO {table}_fts({table}_fts, rowid, text) "
        f"SELECT 'delete', old.rowid, old.text WHERE old.deleted_at IS NULL; "
        f"INSERT INTO {table}_fts(rowid, text) "
        f"SELECT new.rowid, new.text WHERE new.deleted_at IS NULL; END"
    )


def m001_create_graph(execute: Execute) -> None:
    """Objects, relationships, sources, chunks, mentions, with lexical indexes."""
    execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    execute(
        f"""CREATE TABLE objects (
            id TEXT NOT NULL, project TEXT NOT NULL, type TEXT NOT NULL, key TEXT NOT NULL,
            tags TEXT NOT NULL DEFAULT '[]', properties TEXT NOT NULL DEFAULT '{{}}',
            labels TEXT NOT NULL DEFAULT '[]',
            created_at TEXT NOT NULL, updated_at TEXT NOT NULL, deleted_at TEXT,
            {_EMBEDDING_COLUMNS},
            UNIQUE (project, id), UNIQUE (project, type, key))"""
    )
    execute(
        f"""CREATE TABLE relationships (
            id TEXT NOT NULL, project TEXT NOT NULL, type TEXT NOT NULL,
            source_id TEXT NOT NULL, target_id TEXT NOT NULL, label TEXT,
            properties TEXT NOT NULL DEFAULT '{{}}', weight REAL NOT NULL DEFAULT 1.0,
            valid_from TEXT, valid_to TEXT, description TEXT,
            source_chunks TEXT NOT NULL DEFAULT '[]',
            created_at TEXT NOT NULL, updated_at TEXT NOT NULL, deleted_at TEXT,
            {_EMBEDDING_COLUMNS},
            UNIQUE (project, id))"""
    )
    for sql in SECONDARY_INDEXES["relationships"]:
        execute(sql)
    execute(
        """CREATE TABLE sources (
            id TEXT NOT NULL, project TEXT NOT NULL, title TEXT, uri TEXT,
            metadata TEXT NOT NULL DEFAULT '{}', created_at TEXT NOT NULL, deleted_at TEXT,
            UNIQUE (project, id))"""
    )
    execute(
        f"""CREATE TABLE chunks (
            id TEXT NOT NULL, project TEXT NOT NULL, source_id TEXT, body TEXT NOT NULL,
            position INTEGER NOT NULL DEFAULT 0, metadata TEXT NOT NULL DEFAULT '{{}}',
            created_at TEXT NOT NULL, updated_at TEXT NOT NULL, deleted_at TEXT,
            {_EMBEDDING_COLUMNS},
            UNIQUE (project, id))"""
    )
    execute("CREATE INDEX chunks_source ON chunks (project, source_id)")
    execute(
        """CREATE TABLE mentions (
            project TEXT NOT NULL, source_id TEXT NOT NULL DEFAULT '',
            chunk_id TEXT NOT NULL DEFAULT '', object_id TEXT NOT NULL DEFAULT '',
            relationship_id TEXT NOT NULL DEFAULT '',
            UNIQUE (project, source_id, chunk_id, object_id, relationship_id))"""
    )
    execute("CREATE INDEX mentions_object ON mentions (project, object_id)")
    execute("CREATE INDEX mentions_relationship ON mentions (project, relationship_id)")
    execute("CREATE INDEX mentions_chunk ON mentions (project, chunk_id)")
    for table in ("objects", "relationships", "chunks"):
        execute(SECONDARY_INDEXES[table][-1])
        _fts(execute, table)
    execute(
        "CREATE TABLE embed_stats (kind TEXT PRIMARY KEY, texts INTEGER NOT NULL, ms REAL NOT NULL)"
    )


def m002_create_api_keys(execute: Execute) -> None:
    """API keys: one project and a set of scopes each; only the secret's digest is kept."""
    execute(
        """CREATE TABLE api_keys (
            id TEXT PRIMARY KEY, project TEXT NOT NULL, name TEXT,
            scopes TEXT NOT NULL DEFAULT '[]', key_hash TEXT NOT NULL,
            created_at TEXT NOT NULL, revoked_at TEXT)"""
    )
    execute("CREATE INDEX api_keys_project ON api_keys (project)")


def m003_index_project_rowid(execute: Execute) -> None:
    """Index each table by project, so listings and exports page in rowid order without
    sorting the whole project per page (an index on ``project`` is ordered by rowid)."""
    for table in ("objects", "relationships", "chunks", "sources"):
        execute(f"CREATE INDEX IF NOT EXISTS {table}_project ON {table} (project)")


def m004_index_object_names(execute: Execute) -> None:
    """Index object keys without case, for the exact-name search leg."""
    execute(SECONDARY_INDEXES["objects"][0])


def m005_create_tasks(execute: Execute) -> None:
    """The generic task queue: one row per (project, job, row id), with the hash of
    the input it was queued for, its state, attempts, lease and JSON payload/result."""
    execute(
        """CREATE TABLE tasks (
            project TEXT NOT NULL, job TEXT NOT NULL, row_id TEXT NOT NULL,
            input_hash TEXT NOT NULL,
            status TEXT NOT NULL DEFAULT 'pending'
                CHECK (status IN ('pending', 'running', 'done', 'failed', 'dead')),
            attempts INTEGER NOT NULL DEFAULT 0,
            last_error TEXT,
            next_attempt_at REAL NOT NULL DEFAULT 0,
            claimed_until REAL NOT NULL DEFAULT 0,
            payload TEXT NOT NULL DEFAULT '{}',
            result TEXT,
            created_at TEXT NOT NULL, updated_at TEXT NOT NULL,
            PRIMARY KEY (project, job, row_id))"""
    )
    # Unfinished tasks only: the claim query's index stays small once most are done.
    execute(
        "CREATE INDEX tasks_due ON tasks (job, next_attempt_at) "
        "WHERE status IN ('pending', 'failed', 'running')"
    )


def m006_create_cache(execute: Execute) -> None:
    """A key/value cache shared by every project (LLM responses)."""
    execute(
        """CREATE TABLE cache (
            namespace TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL,
            created_at TEXT NOT NULL,
            PRIMARY KEY (namespace, key))"""
    )


def m007_create_communities(execute: Execute) -> None:
    """Communities (one build per project), membership by object, and community reports:
    embeddable rows of kind ``community`` with the usual lifecycle and a lexical index."""
    execute(
        """CREATE TABLE community_builds (
            project TEXT PRIMARY KEY, build_id TEXT NOT NULL, generation INTEGER NOT NULL,
            params TEXT NOT NULL, created_at TEXT NOT NULL)"""
    )
    execute(
        """CREATE TABLE communities (
            project TEXT NOT NULL, id TEXT NOT NULL, level INTEGER NOT NULL, parent TEXT,
            members TEXT NOT NULL, size INTEGER NOT NULL, rank REAL NOT NULL,
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
            id TEXT NOT NULL, project TEXT NOT NULL, level INTEGER NOT NULL,
            title TEXT NOT NULL, summary TEXT NOT NULL, findings TEXT NOT NULL DEFAULT '[]',
            rating REAL NOT NULL DEFAULT 0, rating_explanation TEXT NOT NULL DEFAULT '',
            method TEXT NOT NULL, prompt_version TEXT NOT NULL DEFAULT '', report_model TEXT,
            source_digest TEXT NOT NULL DEFAULT '',
            created_at TEXT NOT NULL, updated_at TEXT NOT NULL, deleted_at TEXT,
            {_EMBEDDING_COLUMNS},
            UNIQUE (project, id))"""
    )
    execute("CREATE INDEX community_reports_due ON community_reports (status, next_attempt_at)")
    execute("CREATE INDEX community_reports_project ON community_reports (project)")
    _fts(execute, "community_reports")


def m008_log_vector_changes(execute: Execute) -> None:
    """A log of the rows whose vector or liveness changed, written by triggers in the
    writing transaction, so in-memory vector indexes follow any process's writes by key
    (``vectors.py``). Rows that were never embedded are not logged."""
    execute(
        "CREATE TABLE IF NOT EXISTS vector_changes (seq INTEGER PRIMARY KEY AUTOINCREMENT, "
        "kind TEXT NOT NULL, row_id INTEGER NOT NULL)"
    )
    log = "INSERT INTO vector_changes (kind, row_id) VALUES"
    for table, kind in (
        ("objects", "object"),
        ("relationships", "relationship"),
        ("chunks", "chunk"),
        ("community_reports", "community"),
    ):
        execute(
            f"CREATE TRIGGER IF NOT EXISTS {table}_vec_ai AFTER INSERT ON {table} "
            f"WHEN new.status = 'embedded' BEGIN {log} ('{kind}', new.rowid); END"
        )
        execute(
            f"CREATE TRIGGER IF NOT EXISTS {table}_vec_au "
            f"AFTER UPDATE OF vector, status, deleted_at ON {table} "
            "WHEN (old.status = 'embedded' OR new.status = 'embedded') AND "
            "(old.vector IS NOT new.vector OR old.status IS NOT new.status "
            f"OR old.deleted_at IS NOT new.deleted_at) BEGIN {log} ('{kind}', new.rowid); END"
        )
        execute(
            f"CREATE TRIGGER IF NOT EXISTS {table}_vec_ad AFTER DELETE ON {table} "
            f"WHEN old.status = 'embedded' BEGIN {log} ('{kind}', old.rowid); END"
        )


LIVE_INDEXES: dict[str, str] = {
    table: f"CREATE INDEX IF NOT EXISTS {table}_live ON {table} ({columns}) "
    "WHERE deleted_at IS NULL"
    for table, columns in (
        ("objects", "project, embedded_hash, text_hash, status"),
        ("relationships", "project, embedded_hash, text_hash, status"),
        ("chunks", "project, embedded_hash, text_hash, status"),
        ("community_reports", "project, embedded_hash, text_hash, status"),
        ("sources", "project"),
    )
}
"""Partial indexes of the live rows holding what ``stats`` and ``embed status`` count
(``store/counts.py``): the counts read these small indexes, not the rows (vectors
included), about 4× faster on the demo store. ``status`` comes last so that a lookup
by project, status and id keeps the (project, id) key rather than scanning every
embedded row of the project. A bulk load drops and rebuilds them."""


def m009_index_live_rows(execute: Execute) -> None:
    """Index the live rows by project and embedding status (:data:`LIVE_INDEXES`)."""
    for sql in LIVE_INDEXES.values():
        execute(sql)


def m010_associations_not_facts(execute: Execute) -> None:
    """Co-occurrence is association data, not facts (docs/extraction.md): the
    ``co_occurs`` relationships that extraction wrote (they carry ``_chunks``) are
    deleted with their mention links; the entity–chunk mentions they came from stay and
    are what the graph legs, communities and the graph view read instead. Imported
    ``co_occurs`` relationships (no ``_chunks``) are left alone."""
    execute(
        "UPDATE relationships SET deleted_at = strftime('%Y-%m-%dT%H:%M:%f', 'now') "
        "|| '+00:00' WHERE type = 'co_occurs' AND deleted_at IS NULL "
        "AND json_extract(properties, '$._chunks') IS NOT NULL"
    )
    execute(
        "DELETE FROM mentions WHERE relationship_id != '' AND EXISTS (SELECT 1 FROM "
        "relationships r WHERE r.project = mentions.project AND r.id = "
        "mentions.relationship_id AND r.type = 'co_occurs' AND r.deleted_at IS NOT NULL)"
    )


def m011_llm_budgets(execute: Execute) -> None:
    """LLM spend per (project, API key, UTC minute), for budgets that survive a restart
    (:mod:`kgsearch.store.usage`), and each key's own limits (JSON, NULL: the server's)."""
    execute(
        """CREATE TABLE llm_usage (
            project TEXT NOT NULL, key_id TEXT NOT NULL, minute INTEGER NOT NULL,
            requests INTEGER NOT NULL DEFAULT 0,
            prompt_tokens INTEGER NOT NULL DEFAULT 0,
            completion_tokens INTEGER NOT NULL DEFAULT 0,
            cost_usd REAL NOT NULL DEFAULT 0,
            PRIMARY KEY (project, key_id, minute))"""
    )
    execute("CREATE INDEX llm_usage_minute ON llm_usage (minute)")
    execute("ALTER TABLE api_keys ADD COLUMN llm_limits TEXT")


def m012_embedding_skipped(execute: Execute) -> None:
    """Objects may be ``skipped`` for embedding (named once by extraction, no
    relationship: docs/extraction.md). SQLite cannot alter a CHECK constraint, so the
    table's stored definition is widened in place (the documented ``writable_schema``
    way to loosen a constraint: no row changes), the connection re-reads its schema,
    and a throwaway table bumps the schema cookie so other connections re-read it."""
    execute("PRAGMA writable_schema = ON")
    execute(
        "UPDATE sqlite_master SET sql = replace(sql, "
        "'''failed'', ''dead'')', '''failed'', ''dead'', ''skipped'')') "
        "WHERE type = 'table' AND name = 'objects'"
    )
    execute("PRAGMA writable_schema = RESET")
    execute("CREATE TABLE m012_schema_cookie (x)")
    execute("DROP TABLE m012_schema_cookie")


def m013_fts_reindex_on_change(execute: Execute) -> None:
    """The full-text update triggers fire only when a row's text or liveness changed:
    an upsert that writes the same text again (an object named in many batches) no
    longer deletes and re-adds its index entry."""
    for table in ("objects", "relationships", "chunks", "community_reports"):
        execute(f"DROP TRIGGER IF EXISTS {table}_fts_au")
        _fts_update_trigger(execute, table)


DEFERRABLE_FTS = ("objects",)
"""Tables whose full-text upkeep a write run may defer (m014): an object named in many
extraction batches has its description grown, and its text re-indexed, by each."""


def _deferrable_fts_triggers(execute: Execute, table: str) -> None:
    """Full-text triggers that a write run can hold back (m014).

    While ``fts_deferred`` holds a live lease for ``table``, a row whose text or liveness
    changes is noted in ``fts_stale`` with the text its index entry holds (NULL: none)
    instead of being re-indexed; a row noted there stays noted (later changes skip the
    index too) until the run's flush re-indexes every noted row once from its current
    text (``SQLiteStore.write_run``). Deleting a noted row removes the entry it has.
    Each trigger is one body whose statements run in order, so the result does not
    depend on the order SQLite fires triggers in; no statement in it relies on a
    conflict clause (an outer upsert's conflict handling would override it).
    """
    held = f"EXISTS (SELECT 1 FROM fts_deferred WHERE tbl = '{table}' AND until > julianday('now'))"

    def stale(row: str) -> str:
        return f"EXISTS (SELECT 1 FROM fts_stale WHERE tbl = '{table}' AND row = {row}.rowid)"

    execute(
        f"CREATE TRIGGER {table}_fts_ai AFTER INSERT ON {table} "
        f"WHEN new.deleted_at IS NULL BEGIN "
        f"INSERT INTO fts_stale (tbl, row, indexed) "
        f"SELECT '{table}', new.rowid, NULL WHERE {held} AND NOT {stale('new')}; "
        f"INSERT INTO {table}_fts(rowid, text) "
        f"SELECT new.rowid, new.text WHERE NOT {stale('new')}; END"
    )
    execute(
        f"CREATE TRIGGER {table}_fts_ad AFTER DELETE ON {table} BEGIN "
        f"INSERT INTO {table}_fts({table}_fts, rowid, text) "
        f"SELECT 'delete', old.rowid, old.text "
        f"WHERE old.deleted_at IS NULL AND NOT {stale('old')}; "
        f"INSERT INTO {table}_fts({table}_fts, rowid, text) "
        f"SELECT 'delete', row, indexed FROM fts_stale "
        f"WHERE tbl = '{table}' AND row = old.rowid AND indexed IS NOT NULL; "
        f"DELETE FROM fts_stale WHERE tbl = '{table}' AND row = old.rowid; END"
    )
    execute(
        f"CREATE TRIGGER {table}_fts_au AFTER UPDATE OF text, deleted_at ON {table} "
        f"WHEN old.text IS NOT new.text "
        f"OR (old.deleted_at IS NULL) IS NOT (new.deleted_at IS NULL) BEGIN "
        f"INSERT INTO fts_stale (tbl, row, indexed) "
        f"SELECT '{table}', old.rowid, CASE WHEN old.deleted_at IS NULL THEN old.text END "
        f"WHERE {held} AND NOT {stale('old')}; "
        f"INSERT INTO {table}_fts({table}_fts, rowid, text) "
        f"SELECT 'delete', old.rowid, old.text "
        f"WHERE old.deleted_at IS NULL AND NOT {stale('old')}; "
        f"INSERT INTO {table}_fts(rowid, text) "
        f"SELECT new.rowid, new.text WHERE new.deleted_at IS NULL AND NOT {stale('new')}; END"
    )


def fts_flush_sql(table: str) -> list[str]:
    """The statements that re-index the rows of ``table`` noted in ``fts_stale`` (each
    once, from its current text) and forget them."""
    return [
        f"INSERT INTO {table}_fts({table}_fts, rowid, text) SELECT 'delete', row, indexed "
        f"FROM fts_stale WHERE tbl = '{table}' AND indexed IS NOT NULL",
        f"INSERT INTO {table}_fts(rowid, text) SELECT t.rowid, t.text FROM fts_stale s "
        f"JOIN {table} t ON t.rowid = s.row WHERE s.tbl = '{table}' AND t.deleted_at IS NULL",
        f"DELETE FROM fts_stale WHERE tbl = '{table}'",
    ]


def m014_deferrable_fts(execute: Execute) -> None:
    """A write run (an extraction run of many batches) may leave the objects' full-text
    upkeep to its end, re-indexing each changed object once rather than once per batch
    (:func:`_deferrable_fts_triggers`): ``fts_deferred`` holds the runs' leases (a
    julianday until which they defer; a run that died stops deferring when it passes),
    ``fts_stale`` the rows whose index entry waits, with the text that entry holds."""
    execute("CREATE TABLE fts_deferred (tbl TEXT PRIMARY KEY, until REAL NOT NULL) WITHOUT ROWID")
    execute(
        "CREATE TABLE fts_stale (tbl TEXT NOT NULL, row INTEGER NOT NULL, indexed TEXT, "
        "PRIMARY KEY (tbl, row)) WITHOUT ROWID"
    )
    for table in DEFERRABLE_FTS:
        for suffix in ("ai", "ad", "au"):
            execute(f"DROP TRIGGER IF EXISTS {table}_fts_{suffix}")
        _deferrable_fts_triggers(execute, table)


ROWS_EPOCH_TABLES = {"objects": "object", "relationships": "relationship", "chunks": "chunk"}
"""The tables whose decoded rows a process may keep (``row_cache.py``), with the kind
each ``rows:<kind>`` epoch in ``meta`` is named after (m015)."""

SHOWN_COLUMNS = {
    "objects": "type, key, tags, properties, labels",
    "relationships": "type, source_id, target_id, label, properties, weight, valid_from, "
    "valid_to, description, source_chunks",
    "chunks": "body, source_id, position, metadata",
}
"""m015's own copy of the columns each kind's decoder shows besides the embedding state
(``store/rowsql.py``; a test holds them equal)."""


def m015_rows_epoch(execute: Execute) -> None:
    """A ``rows:<kind>`` epoch in ``meta`` that triggers move on every change to a
    column a decoded row shows (its fields, its embedding state, its liveness) and on
    every delete, in the writing transaction of any process: decoded rows kept between
    reads (``row_cache.py``) stay right while it holds. The kind's own epoch moves only
    with the writes that call ``_changed``; the queues' failures, for one, write status,
    attempts and errors without it. A lease (``claimed_until``) or a retry time moves
    nothing: no decoded row shows them. The key is written here, with the triggers, so
    a reader finding it knows the triggers exist."""
    state = (
        "status, text, text_hash, embedded_text, attempts, last_error, model, dims, "
        "text_version, embedded_at, created_at, updated_at, deleted_at"
    )
    for table, kind in ROWS_EPOCH_TABLES.items():
        bump = (
            f"INSERT INTO meta (key, value) VALUES ('rows:{kind}', '1') ON CONFLICT(key) "
            "DO UPDATE SET value = CAST(value AS INTEGER) + 1"
        )
        execute(
            f"CREATE TRIGGER {table}_rows_au AFTER UPDATE OF {SHOWN_COLUMNS[table]}, "
            f"{state} ON {table} BEGIN {bump}; END"
        )
        execute(f"CREATE TRIGGER {table}_rows_ad AFTER DELETE ON {table} BEGIN {bump}; END")
        execute(f"INSERT OR IGNORE INTO meta (key, value) VALUES ('rows:{kind}', '0')")


MIGRATIONS = [
    Migration("m001_create_graph", m001_create_graph),
    Migration("m002_create_api_keys", m002_create_api_keys),
    Migration("m003_index_project_rowid", m003_index_project_rowid),
    Migration("m004_index_object_names", m004_index_object_names),
    Migration("m005_create_tasks", m005_create_tasks),
    Migration("m006_create_cache", m006_create_cache),
    Migration("m007_create_communities", m007_create_communities),
    Migration("m008_log_vector_changes", m008_log_vector_changes),
    Migration("m009_index_live_rows", m009_index_live_rows),
    Migration("m010_associations_not_facts", m010_associations_not_facts),
    Migration("m011_llm_budgets", m011_llm_budgets),
    Migration("m012_embedding_skipped", m012_embedding_skipped),
    Migration("m013_fts_reindex_on_change", m013_fts_reindex_on_change),
    Migration("m014_deferrable_fts", m014_deferrable_fts),
    Migration("m015_rows_epoch", m015_rows_epoch),
]
SCHEMA_VERSION = len(MIGRATIONS)
