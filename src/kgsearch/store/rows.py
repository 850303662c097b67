"""Decoding stored rows (SQLite or PostgreSQL) into the public model types.

A row is anything indexable by column name. JSON columns may arrive as text (SQLite)
or already decoded (PostgreSQL ``json``); timestamps as ISO text or ``datetime``.

Objects, relationships and chunks (and their embedding state) are built without
pydantic's validation (:func:`built`, what ``model_construct`` makes, every field given),
each column converted to its field's type here: the store wrote these rows through
validated models, and a search decodes dozens of them (validation was about half the
cost of decoding a row, ``model_construct``'s per-field look-ups half the rest). An empty
JSON object or list, the usual ``tags``, ``labels`` or ``source_chunks``, skips the parser.
"""

from __future__ import annotations

import json
from typing import Any, TypeVar

from pydantic import BaseModel

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
    "built",
    "to_chunk",
    "to_mention",
    "to_object",
    "to_relationship",
    "to_source",
]


_M = TypeVar("_M", bound=BaseModel)
_set = object.__setattr__
_STATUS = {s.value: s for s in EmbeddingStatus}


def built(cls: type[_M], values: dict[str, Any]) -> _M:
    """A model from trusted values for every one of its fields, in field order: what
    ``cls.model_construct(**values)`` makes (no defaults to fill, no validation), without
    its per-field alias and default look-ups (a search decodes dozens of rows)."""
    model = cls.__new__(cls)
    _set(model, "__dict__", values)
    _set(model, "__pydantic_fields_set__", set(values))
    _set(model, "__pydantic_extra__", None)
    _set(model, "__pydantic_private__", None)
    return model


def _state(row: Any) -> EmbeddingState:
    embedded_text = row["embedded_text"]
    dims = row["dims"]
    return built(
        EmbeddingState,
        {
            "status": _STATUS[row["status"]],
            "text": row["text"],
            "text_hash": row["text_hash"],
            "embedded_text": embedded_text,
            "attempts": int(row["attempts"]),
            "last_error": row["last_error"],
            "model": row["model"],
            "dims": None if dims is None else int(dims),
            "text_version": None if embedded_text is None else int(row["text_version"]),
            "embedded_at": parse_dt(row["embedded_at"]),
        },
    )


def _json(value: Any) -> Any:
    """A JSON column's value (an empty object or list, the common case, without the
    parser; a fresh one each time)."""
    if value == "{}":
        return {}
    if value == "[]":
        return []
    return json.loads(value) if isinstance(value, str | bytes) else value


def _fields(row: Any, plain: tuple[str, ...], json_columns: tuple[str, ...] = ()) -> dict[str, Any]:
    """``id``, ``project`` and ``created_at`` of any row, then ``plain`` columns as stored
    and ``json_columns`` decoded."""
    fields = {c: row[c] for c in ("id", "project", *plain)}
    fields.update((c, _json(row[c])) for c in json_columns)
    fields["created_at"] = parse_dt(row["created_at"])
    return fields


def to_object(row: Any) -> GraphObject:
    """Decode an ``objects`` row."""
    return built(
        GraphObject,
        {
            "id": row["id"],
            "project": row["project"],
            "type": row["type"],
            "key": row["key"],
            "tags": _json(row["tags"]),
            "properties": _json(row["properties"]),
            "labels": _json(row["labels"]),
            "created_at": parse_dt(row["created_at"]),
            "updated_at": parse_dt(row["updated_at"]),
            "embedding": _state(row),
        },
    )


def to_relationship(row: Any) -> Relationship:
    """Decode a ``relationships`` row."""
    return built(
        Relationship,
        {
            "id": row["id"],
            "project": row["project"],
            "type": row["type"],
            "source_id": row["source_id"],
            "target_id": row["target_id"],
            "label": row["label"],
            "properties": _json(row["properties"]),
            "weight": float(row["weight"]),
            "valid_from": parse_dt(row["valid_from"]),
            "valid_to": parse_dt(row["valid_to"]),
            "description": row["description"],
            "source_chunks": _json(row["source_chunks"]),
            "created_at": parse_dt(row["created_at"]),
            "updated_at": parse_dt(row["updated_at"]),
            "embedding": _state(row),
        },
    )


def to_chunk(row: Any) -> Chunk:
    """Decode a ``chunks`` row (its text is the ``body`` column)."""
    return built(
        Chunk,
        {
            "id": row["id"],
            "project": row["project"],
            "text": row["body"],
            "source_id": row["source_id"],
            "position": int(row["position"]),
            "metadata": _json(row["metadata"]),
            "created_at": parse_dt(row["created_at"]),
            "updated_at": parse_dt(row["updated_at"]),
            "embedding": _state(row),
        },
    )


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
