"""Decoding stored rows (SQLite or PostgreSQL) into the public model types.

A row is anything indexable by column name. JSON columns may arrive as text (SQLite)
or already decoded (PostgreSQL ``json``); timestamps as ISO text or ``datetime``.

Objects, relationships and chunks (and their embedding state) are built without
pydantic's validation (``model_construct``), each column converted to its field's type
here: the store wrote these rows through validated models, and a search decodes dozens
of them (validation was about half the cost of decoding a row).
"""

from __future__ import annotations

import json
from typing import Any

from kgsearch.model import (
    Chunk,
    EmbeddingState,
    EmbeddingStatus,
    GraphObject,
    Mention,
    Relationship,
    Source,
)
from kgsearch.store.rowsql import (
    CHUNK_COLUMNS,
    OBJECT_COLUMNS,
    RELATIONSHIP_COLUMNS,
    SOURCE_COLUMNS,
)
from kgsearch.store.values import parse_dt

# the columns each decoder reads live with the read SQL (kgsearch.store.rowsql)
__all__ = [
    "CHUNK_COLUMNS",
    "OBJECT_COLUMNS",
    "RELATIONSHIP_COLUMNS",
    "SOURCE_COLUMNS",
    "to_chunk",
    "to_mention",
    "to_object",
    "to_relationship",
    "to_source",
]


# Columns of the embedding state read as they are stored.
_STATE_COLUMNS = (
    "status",
    "text",
    "text_hash",
    "embedded_text",
    "attempts",
    "last_error",
    "model",
    "dims",
)


def _state(row: Any) -> EmbeddingState:
    fields = {c: row[c] for c in _STATE_COLUMNS}
    fields["status"] = EmbeddingStatus(fields["status"])
    fields["attempts"] = int(fields["attempts"])
    if fields["dims"] is not None:
        fields["dims"] = int(fields["dims"])
    return EmbeddingState.model_construct(
        **fields,
        text_version=int(row["text_version"]) if row["embedded_text"] is not None else None,
        embedded_at=parse_dt(row["embedded_at"]),
    )


def _json(value: Any) -> Any:
    return json.loads(value) if isinstance(value, str | bytes) else value


def _fields(row: Any, plain: tuple[str, ...], json_columns: tuple[str, ...] = ()) -> dict[str, Any]:
    """``id``, ``project`` and ``created_at`` of any row, then ``plain`` columns as stored
    and ``json_columns`` decoded."""
    fields = {c: row[c] for c in ("id", "project", *plain)}
    fields.update((c, _json(row[c])) for c in json_columns)
    fields["created_at"] = parse_dt(row["created_at"])
    return fields


def _embeddable(row: Any, plain: tuple[str, ...], json_columns: tuple[str, ...]) -> dict[str, Any]:
    """:func:`_fields` plus what every embeddable row has: ``updated_at`` and its state."""
    fields = _fields(row, plain, json_columns)
    fields.update(updated_at=parse_dt(row["updated_at"]), embedding=_state(row))
    return fields


def to_object(row: Any) -> GraphObject:
    """Decode an ``objects`` row."""
    return GraphObject.model_construct(
        **_embeddable(row, ("type", "key"), ("tags", "properties", "labels"))
    )


def to_relationship(row: Any) -> Relationship:
    """Decode a ``relationships`` row."""
    fields = _embeddable(
        row,
        ("type", "source_id", "target_id", "label", "description"),
        ("properties", "source_chunks"),
    )
    return Relationship.model_construct(
        **fields,
        weight=float(row["weight"]),
        valid_from=parse_dt(row["valid_from"]),
        valid_to=parse_dt(row["valid_to"]),
    )


def to_chunk(row: Any) -> Chunk:
    """Decode a ``chunks`` row (its text is the ``body`` column)."""
    fields = _embeddable(row, ("source_id",), ("metadata",))
    return Chunk.model_construct(**fields, position=int(row["position"]), text=row["body"])


def to_source(row: Any) -> Source:
    """Decode a ``sources`` row."""
    return Source(**_fields(row, ("title", "uri"), ("metadata",)))


def to_mention(row: Any) -> Mention:
    """Decode a ``mentions`` row (empty strings back to None)."""
    return Mention(
        project=row["project"],
        source_id=row["source_id"] or None,
        chunk_id=row["chunk_id"] or None,
        object_id=row["object_id"] or None,
        relationship_id=row["relationship_id"] or None,
    )
