"""Decoding stored rows (SQLite or PostgreSQL) into the public model types.

A row is anything indexable by column name. JSON columns may arrive as text (SQLite)
or already decoded (PostgreSQL ``json``); timestamps as ISO text or ``datetime``.
"""

from __future__ import annotations

import json
from typing import Any

from kgsearch.model import (
    Chunk,
    EmbeddingState,
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


def _state(row: Any) -> EmbeddingState:
    return EmbeddingState(
        status=row["status"],
        text=row["text"],
        text_hash=row["text_hash"],
        embedded_text=row["embedded_text"],
        attempts=row["attempts"],
        last_error=row["last_error"],
        model=row["model"],
        dims=row["dims"],
        text_version=row["text_version"] if row["embedded_text"] is not None else None,
        embedded_at=parse_dt(row["embedded_at"]),
    )


def _json(value: Any) -> Any:
    return json.loads(value) if isinstance(value, str | bytes) else value


def to_object(row: Any) -> GraphObject:
    """Decode an ``objects`` row."""
    return GraphObject(
        id=row["id"],
        project=row["project"],
        type=row["type"],
        key=row["key"],
        tags=_json(row["tags"]),
        properties=_json(row["properties"]),
        labels=_json(row["labels"]),
        created_at=parse_dt(row["created_at"]),
        updated_at=parse_dt(row["updated_at"]),
        embedding=_state(row),
    )


def to_relationship(row: Any) -> Relationship:
    """Decode a ``relationships`` row."""
    return Relationship(
        id=row["id"],
        project=row["project"],
        type=row["type"],
        source_id=row["source_id"],
        target_id=row["target_id"],
        label=row["label"],
        properties=_json(row["properties"]),
        weight=row["weight"],
        valid_from=parse_dt(row["valid_from"]),
        valid_to=parse_dt(row["valid_to"]),
        description=row["description"],
        source_chunks=_json(row["source_chunks"]),
        created_at=parse_dt(row["created_at"]),
        updated_at=parse_dt(row["updated_at"]),
        embedding=_state(row),
    )


def to_chunk(row: Any) -> Chunk:
    """Decode a ``chunks`` row."""
    return Chunk(
        id=row["id"],
        project=row["project"],
        text=row["body"],
        source_id=row["source_id"],
        position=row["position"],
        metadata=_json(row["metadata"]),
        created_at=parse_dt(row["created_at"]),
        updated_at=parse_dt(row["updated_at"]),
        embedding=_state(row),
    )


def to_source(row: Any) -> Source:
    """Decode a ``sources`` row."""
    return Source(
        id=row["id"],
        project=row["project"],
        title=row["title"],
        uri=row["uri"],
        metadata=_json(row["metadata"]),
        created_at=parse_dt(row["created_at"]),
    )


def to_mention(row: Any) -> Mention:
    """Decode a ``mentions`` row (empty strings back to None)."""
    return Mention(
        project=row["project"],
        source_id=row["source_id"] or None,
        chunk_id=row["chunk_id"] or None,
        object_id=row["object_id"] or None,
        relationship_id=row["relationship_id"] or None,
    )
