"""Logic both stores share: the lifecycle's upsert rule, the model check, paging,
the row tables, traversal arguments, and the retry and upsert rules of both queues.

The stores differ in SQL dialect and placeholders; what is written here is the same
for both and lives once.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, Literal, NamedTuple, TypeVar

from kgsearch.errors import ConfigError, Conflict, DimensionMismatch, InvalidRequest, StoreError
from kgsearch.model import (
    Kind,
    Mention,
)
from kgsearch.store.counts import PROJECTS_SQL, group_counts
from kgsearch.store.records import EmbeddingCounts, Task, TaskState
from kgsearch.store.rows import (
    CHUNK_COLUMNS,
    OBJECT_COLUMNS,
    RELATIONSHIP_COLUMNS,
    SOURCE_COLUMNS,
    to_chunk,
    to_object,
    to_relationship,
    to_source,
)
from kgsearch.urls import redact_url

__all__ = [
    "PROJECTS_SQL",
    "PURGED_TABLES",
    "RELATIONSHIP_UPDATES",
    "SOURCE_UPDATES",
    "TASK_COLUMNS",
    "TASK_ON_CONFLICT",
    "TASK_OPEN",
    "TEXT_ROW_KINDS",
    "RowTable",
    "batched",
    "check_embedding_model",
    "embedding_counts",
    "error_text",
    "mention_rows",
    "on_conflict",
    "retry_state",
    "row_table",
    "to_task",
    "to_task_state",
]

T = TypeVar("T")

# The row kind of each embeddable kind whose texts the text rules build (community
# reports get theirs from their build).
TEXT_ROW_KINDS: dict[Kind, Literal["object", "relationship", "chunk"]] = {
    Kind.OBJECT: "object",
    Kind.RELATIONSHIP: "relationship",
    Kind.CHUNK: "chunk",
}

# The tables ``purge`` empties of soft-deleted rows, each with the mentions column
# that points at its rows (those links go with them).
PURGED_TABLES = (
    ("objects", "object_id"),
    ("relationships", "relationship_id"),
    ("chunks", "chunk_id"),
    ("sources", "source_id"),
)

# ``ON CONFLICT (project, job, row_id) DO UPDATE`` assignments of the task queue (both
# stores): the same input keeps its task as it is, so a done task is never run again;
# another input makes it pending with attempts, error and result reset. Every
# expression reads the row as it was, before ``input_hash`` is replaced. The lease is
# kept: a runner still working on the old input holds it until it finishes.
TASK_ON_CONFLICT = """
    status = CASE WHEN excluded.input_hash = tasks.input_hash THEN tasks.status ELSE 'pending' END,
    attempts = CASE WHEN excluded.input_hash = tasks.input_hash THEN tasks.attempts ELSE 0 END,
    last_error = CASE WHEN excluded.input_hash = tasks.input_hash
        THEN tasks.last_error ELSE NULL END,
    next_attempt_at = CASE WHEN excluded.input_hash = tasks.input_hash
        THEN tasks.next_attempt_at ELSE 0 END,
    result = CASE WHEN excluded.input_hash = tasks.input_hash THEN tasks.result ELSE NULL END,
    input_hash = excluded.input_hash, payload = excluded.payload,
    updated_at = excluded.updated_at
"""

# Task states a runner may still claim (once due and not leased).
TASK_OPEN = "status IN ('pending', 'failed', 'running')"

# What ``to_task_state`` reads of a stored task.
TASK_COLUMNS = (
    "project, row_id, input_hash, status, attempts, last_error, next_attempt_at, "
    "claimed_until, payload, result"
)

_STATE_ON_CONFLICT = """
    status = CASE
        WHEN excluded.text_hash = {t}.text_hash AND {t}.deleted_at IS NULL THEN {t}.status
        WHEN excluded.text_hash = {t}.embedded_hash AND {t}.vector IS NOT NULL THEN 'embedded'
        ELSE 'pending' END,
    attempts = CASE WHEN excluded.text_hash = {t}.text_hash THEN {t}.attempts ELSE 0 END,
    last_error = CASE WHEN excluded.text_hash = {t}.text_hash THEN {t}.last_error ELSE NULL END,
    next_attempt_at = CASE WHEN excluded.text_hash = {t}.text_hash
        THEN {t}.next_attempt_at ELSE 0 END,
    text = excluded.text, text_hash = excluded.text_hash, text_version = excluded.text_version,
    deleted_at = NULL{extra}
"""


def on_conflict(table: str, extra: str = "") -> str:
    """``ON CONFLICT … DO UPDATE`` assignments for an embeddable table (SQLite and
    PostgreSQL alike): a text change resets the lifecycle; an unchanged text keeps it; a
    text that returns to what was embedded before is embedded again without calling the
    embedder. ``extra`` appends assignments (``", col = excluded.col"``)."""
    return _STATE_ON_CONFLICT.format(t=table, extra=extra)


RELATIONSHIP_UPDATES = (
    "type = excluded.type, source_id = excluded.source_id, target_id = excluded.target_id, "
    "label = excluded.label, properties = excluded.properties, weight = excluded.weight, "
    "valid_from = excluded.valid_from, valid_to = excluded.valid_to, "
    "description = excluded.description, source_chunks = excluded.source_chunks, "
    "updated_at = excluded.updated_at, "
)
"""The assignments of a relationship upsert's ``ON CONFLICT (project, id)`` (both
backends), before the lifecycle's (:func:`on_conflict`)."""

SOURCE_UPDATES = (
    "title = excluded.title, uri = excluded.uri, metadata = excluded.metadata, deleted_at = NULL"
)
"""The assignments of a source upsert's ``ON CONFLICT (project, id)`` (both backends)."""


class RowTable(NamedTuple):
    """Where a kind of row lives, the columns its decoder reads, and the decoder."""

    name: str
    columns: str
    decode: Callable[[Any], Any]


_ROW_TABLES = {
    "object": RowTable("objects", OBJECT_COLUMNS, to_object),
    "relationship": RowTable("relationships", RELATIONSHIP_COLUMNS, to_relationship),
    "chunk": RowTable("chunks", CHUNK_COLUMNS, to_chunk),
    "source": RowTable("sources", SOURCE_COLUMNS, to_source),
}


def row_table(kind: str) -> RowTable:
    """The table of a row kind (``object``, ``relationship``, ``chunk``, ``source``).

    Raises:
        InvalidRequest: The kind is not one of those.
    """
    try:
        return _ROW_TABLES[kind]
    except KeyError:
        raise InvalidRequest(
            f"unknown kind {kind!r}; expected one of {', '.join(_ROW_TABLES)}"
        ) from None


def mention_rows(project: str, mentions: Sequence[Mention]) -> list[tuple[str, ...]]:
    """Parameter rows (project, source, chunk, object, relationship) of mention links;
    an absent end is stored as ``''`` so that the unique key ignores duplicates."""
    return [
        (
            project,
            m.source_id or "",
            m.chunk_id or "",
            m.object_id or "",
            m.relationship_id or "",
        )
        for m in mentions
    ]


def embedding_counts(rows: Iterable[tuple[Kind, Any]]) -> list[EmbeddingCounts]:
    """Counts by project and kind from (kind, row) pairs, each row holding a project,
    a status, its count ``n`` and its ``stale`` count; ordered by project, then kind."""
    return [
        EmbeddingCounts(project=project, kind=Kind(kind), by_status=by_status, stale=stale)
        for project, kind, by_status, stale in group_counts((k.value, row) for k, row in rows)
    ]


def to_task(row: Any) -> Task:
    """A claimed task from a row holding project, row_id, input_hash, attempts and the
    payload's JSON text."""
    return Task(
        row["project"],
        row["row_id"],
        row["input_hash"],
        row["attempts"],
        json.loads(row["payload"]),
    )


def to_task_state(row: Any) -> TaskState:
    """A stored task from a row holding :data:`TASK_COLUMNS`."""
    result = row["result"]
    return TaskState(
        **{c: row[c] for c in ("project", "row_id", "input_hash", "status", "attempts")},
        last_error=row["last_error"],
        next_attempt_at=float(row["next_attempt_at"]),
        claimed_until=float(row["claimed_until"]),
        payload=json.loads(row["payload"]),
        result=None if result is None else json.loads(result),
    )


def retry_state(
    attempts: int, *, now: float, max_attempts: int, backoff_seconds: float
) -> tuple[str, int, float]:
    """(status, attempts, next attempt time) after one more failed attempt: ``failed``
    with exponential backoff (``backoff_seconds`` doubled per attempt before), or
    ``dead`` once ``max_attempts`` is reached."""
    count = attempts + 1
    status = "dead" if count >= max_attempts else "failed"
    return status, count, now + backoff_seconds * (2 ** (count - 1))


def error_text(error: str) -> str:
    """An error message as both stores keep it: whole, but without NUL characters
    (PostgreSQL refuses them) or lone surrogates (not valid UTF-8)."""
    return error.replace("\x00", "").encode("utf-8", "replace").decode("utf-8")


def check_embedding_model(
    url: str, current_model: str | None, current_dims: int | None, model: str, dims: int
) -> None:
    """Refuse to mix vectors: another model or other dims than the store holds.

    Raises:
        DimensionMismatch: The store holds vectors of other dimensions.
        ConfigError: The store holds vectors of another model.
    """
    if not current_model:
        return
    if current_dims and current_dims != dims:
        raise DimensionMismatch(
            f"store {redact_url(url)} holds {current_dims}-d vectors of {current_model}; the "
            "embedder "
            f"{model} makes {dims}-d vectors. "
            "Re-embed with `kgsearch embed generate --model ... --force`.",
            details={"store_dims": current_dims, "embedder_dims": dims},
        )
    if current_model != model:
        raise ConfigError(
            f"store {redact_url(url)} was embedded with {current_model}, not {model}. "
            f"Switch models explicitly with `kgsearch embed generate --model {model} --force`, "
            "which re-embeds every row.",
            details={"store_model": current_model, "embedder_model": model},
        )


def batched(items: Iterable[T], size: int = 1000) -> Iterator[list[T]]:
    """Lists of up to ``size`` consecutive items."""
    batch: list[T] = []
    for item in items:
        batch.append(item)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


# errors at the store boundary ------------------------------------------------------
log = logging.getLogger("kgsearch.store")

_ROW_WORDS = {
    "objects": "an object",
    "relationships": "a relationship",
    "sources": "a source",
    "chunks": "a chunk",
    "mentions": "a mention",
    "api_keys": "an API key",
    "tasks": "a task",
}
_SQLITE_UNIQUE = re.compile(r"UNIQUE constraint failed: (\w+)\.\w+")
_SQLITE_COLUMNS = re.compile(r"\w+\.(\w+)")
_PG_KEY = re.compile(r"Key \(([^)]*)\)")


def conflict(table: str | None, columns: Sequence[str]) -> Conflict:
    """A write that breaks a unique rule, said in the model's words: which kind of
    row, and which of its fields collide. Constraint names and SQL stay out of the
    message (the driver's text is logged)."""
    what = _ROW_WORDS.get(table or "", "a row")
    fields = [c for c in columns if c != "project"]
    same = f" with the same {' and '.join(fields)}" if fields else ""
    return Conflict(
        f"write conflicts with existing data: {what}{same} already exists",
        details={"fields": fields} if fields else {},
    )


def sqlite_conflict(message: str) -> Conflict:
    """:func:`conflict` for a SQLite integrity error's message."""
    log.info("store constraint: %s", message)
    unique = _SQLITE_UNIQUE.match(message)
    if unique is None:
        return Conflict("write refused: it breaks a rule of the stored data")
    return conflict(unique.group(1), _SQLITE_COLUMNS.findall(message))


def pg_conflict(table: str | None, detail: str | None, message: str) -> Conflict:
    """:func:`conflict` for a PostgreSQL integrity error (its table and detail)."""
    log.info("store constraint: %s", message)
    key = _PG_KEY.search(detail or "")
    if key is None:
        return Conflict("write refused: it breaks a rule of the stored data")
    return conflict(table, [c.strip() for c in key.group(1).split(",")])


def store_failure(backend: str, message: str) -> StoreError:
    """A driver error that is not the caller's: the message names the backend and,
    for what an operator can act on (locked, busy, full, read-only, unreachable), the
    reason; anything else is logged, never shown (it may quote SQL)."""
    lowered = message.lower()
    actionable = (
        "locked",
        "busy",
        "disk",
        "full",
        "read-only",
        "readonly",
        "connection",
        "not a database",
        "malformed",
        "unable to open",
        "permission",
    )
    for hint in actionable:
        if hint in lowered:
            return StoreError(f"{backend} error: {message.splitlines()[0][:200]}")
    log.error("%s error: %s", backend, message)
    return StoreError(f"{backend} error (details in the server log)")
