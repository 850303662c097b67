"""The reads of rows by id, by reference and by page: one place for their SQL.

The SQLite store (``store/sqlite/reads.py``, ``sql.py``) reads rows with these
statements, and so does the CLI's read-only path
(:mod:`kgsearch.store.sqlite.readonly_rows`), which answers ``kgsearch objects
get/list`` and ``kgsearch relationships get/list`` without the engine. The columns
each kind's decoder reads and the paging rule (:func:`page_start`) are shared with
PostgreSQL too.

Standard library only on purpose (no pydantic, no numpy): importing this module is
part of a light command's start-up. Placeholders are SQLite's (``?``).
"""

from __future__ import annotations

from kgsearch.errors import InvalidRequest

__all__ = [
    "CHUNK_COLUMNS",
    "MAX_PAGE",
    "OBJECT_COLUMNS",
    "RELATIONSHIP_COLUMNS",
    "SOURCE_COLUMNS",
    "by_id_sql",
    "labels_sql",
    "page_sql",
    "page_start",
    "placeholders",
    "resolve_sql",
    "type_in_sql",
]

_STATE = (
    "status, text, text_hash, embedded_text, attempts, last_error, model, dims, "
    "text_version, embedded_at"
)
OBJECT_COLUMNS = (
    f"id, project, type, key, tags, properties, labels, created_at, updated_at, {_STATE}"
)
RELATIONSHIP_COLUMNS = (
    "id, project, type, source_id, target_id, label, properties, weight, valid_from, valid_to, "
    f"description, source_chunks, created_at, updated_at, {_STATE}"
)
CHUNK_COLUMNS = (
    f"id, project, body, source_id, position, metadata, created_at, updated_at, {_STATE}"
)
SOURCE_COLUMNS = "id, project, title, uri, metadata, created_at"

MAX_PAGE = 10_000
"""Most rows one page of a listing may hold."""


def placeholders(n: int) -> str:
    """``?,?,…`` with ``n`` marks."""
    return ",".join("?" * n)


def by_id_sql(table: str, columns: str, n: int) -> str:
    """Live rows of ``table`` among ``n`` ids (bound as project, then the ids)."""
    return (
        f"SELECT {columns} FROM {table} WHERE project = ? "
        f"AND deleted_at IS NULL AND id IN ({placeholders(n)})"
    )


def page_sql(table: str, columns: str, where: str, position: str = "rowid", mark: str = "?") -> str:
    """One page of live rows of ``table`` in insertion order, each with its ``position``
    as ``_pos`` (bound as project, the position to continue after, the parameters of
    ``where`` — conditions on alias ``t``, each starting with `` AND`` — and the
    number of rows; ``mark`` is the placeholder)."""
    return (
        f"SELECT {position} AS _pos, {columns} FROM {table} t WHERE project = {mark} "
        f"AND deleted_at IS NULL AND {position} > {mark}{where} ORDER BY {position} "
        f"LIMIT {mark}"
    )


def resolve_sql(n: int) -> str:
    """Live objects named by ``n`` (type, key) pairs (bound as each pair's type and
    key, then the project): their id, type, key and properties."""
    values = ",".join("(?,?)" for _ in range(n))
    return (
        f"WITH wanted(type, key) AS (VALUES {values}) "
        "SELECT o.id, o.type, o.key, o.properties FROM objects o JOIN wanted w "
        "ON o.type = w.type AND o.key = w.key WHERE o.project = ? "
        "AND o.deleted_at IS NULL"
    )


def type_in_sql(alias: str, n: int) -> str:
    """Rows whose type is one of ``n`` (bound as the types)."""
    return f"{alias}.type IN ({placeholders(n)})"


def labels_sql(alias: str, n: int) -> str:
    """Objects carrying any of ``n`` labels (bound as the labels)."""
    return f"EXISTS (SELECT 1 FROM json_each({alias}.labels) WHERE value IN ({placeholders(n)}))"


def page_start(limit: int, cursor: str | None) -> int:
    """The position a listing continues after (0 for the first page).

    Raises:
        InvalidRequest: The limit is outside 1 to :data:`MAX_PAGE`, or the cursor is not
            one a store handed out.
    """
    if not 1 <= limit <= MAX_PAGE:
        raise InvalidRequest(f"limit must be between 1 and {MAX_PAGE}")
    if not cursor:
        return 0
    try:
        position = int(cursor)
    except ValueError:
        raise InvalidRequest(f"invalid cursor {cursor[:50]!r}") from None
    if not 0 <= position < 2**63:  # positions are 64-bit row numbers
        raise InvalidRequest(f"invalid cursor {cursor[:50]!r}")
    return position
