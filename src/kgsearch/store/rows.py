"""Decoding stored rows (SQLite or PostgreSQL) into the public model types.

A row is a tuple of exactly the kind's read columns (``kgsearch.store.rowsql``, in
that order: what the SQLite store's reads by id fetch), or anything indexable by column
name. JSON columns may arrive as text (SQLite) or already decoded (PostgreSQL
``json``); timestamps as ISO text or ``datetime``.

Objects, relationships and chunks (and their embedding state) are built without
pydantic's validation (:func:`built`, what ``model_construct`` makes, every field given),
each column converted to its field's type here: the store wrote these rows through
validated models, and a search decodes dozens of them (validation was about half the
cost of decoding a row, ``model_construct``'s per-field look-ups half the rest). An empty
JSON object or list, the usual ``tags``, ``labels`` or ``source_chunks``, skips the parser.
Values are taken by position from a tuple: a ``sqlite3.Row`` looks a name up by a
case-insensitive scan of its columns, and the 24 look-ups of a relationship were more
than half the cost of decoding it (16 us of 25 a row, ``scripts/bench_stages.py``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
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
# BaseModel's slots, set through their descriptors: a third cheaper than
# ``object.__setattr__`` by name (0.52 us a model against 0.88, in one process)
_SLOTS = vars(BaseModel)
_set_dict = _SLOTS["__dict__"].__set__
_set_fields = _SLOTS["__pydantic_fields_set__"].__set__
_set_extra = _SLOTS["__pydantic_extra__"].__set__
_set_private = _SLOTS["__pydantic_private__"].__set__
_STATUS = {s.value: s for s in EmbeddingStatus}


_FIELDS: dict[type[BaseModel], tuple[set[str], Any]] = {}
"""Each class's field names (the fields set of every model :func:`built` makes of it)
and its ``__new__``, looked up once."""


def built(cls: type[_M], values: dict[str, Any]) -> _M:
    """A frozen model from trusted values for every one of its fields, in field order:
    what ``cls.model_construct(**values)`` makes (no defaults to fill, no validation),
    without its per-field alias and default look-ups (a search decodes dozens of rows).

    Every model of a class shares one fields set (all its fields), instead of a new set
    each (1 us, and one more object for the collector, per model): pydantic changes a
    model's set in place only in ``__setattr__``, which a frozen model refuses first,
    and ``model_copy`` copies the set before it adds to it."""
    known = _FIELDS.get(cls)
    if known is None:
        known = _FIELDS[cls] = (set(cls.model_fields), cls.__new__)
    fields, new = known
    model: _M = new(cls)
    _set_dict(model, values)
    _set_fields(model, fields)
    _set_extra(model, None)
    _set_private(model, None)
    return model


def _names(columns: str) -> tuple[str, ...]:
    return tuple(c.strip() for c in columns.split(","))


_OBJECT_NAMES = _names(OBJECT_COLUMNS)
_RELATIONSHIP_NAMES = _names(RELATIONSHIP_COLUMNS)
_CHUNK_NAMES = _names(CHUNK_COLUMNS)


def _values(row: Any, names: tuple[str, ...]) -> Sequence[Any]:
    """A row's values in the order of ``names``: a tuple as it is (a read of exactly
    those columns), any other row by column name (a dict, or a row with more columns)."""
    return row if type(row) is tuple else tuple(row[c] for c in names)


def _state(values: Sequence[Any]) -> EmbeddingState:
    """The embedding state from the last ten values of a row (``rowsql._STATE``)."""
    (status, text, text_hash, embedded_text, attempts, last_error, model, dims, version, at) = (
        values[-10:]
    )
    return built(
        EmbeddingState,
        {
            "status": _STATUS[status],
            "text": text,
            "text_hash": text_hash,
            "embedded_text": embedded_text,
            "attempts": int(attempts),
            "last_error": last_error,
            "model": model,
            "dims": None if dims is None else int(dims),
            "text_version": None if embedded_text is None else int(version),
            "embedded_at": parse_dt(at),
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
    """Decode an ``objects`` row (a tuple of :data:`OBJECT_COLUMNS`, or any row by name)."""
    values = _values(row, _OBJECT_NAMES)
    id, project, type, key, tags, properties, labels, created_at, updated_at = values[:9]
    return built(
        GraphObject,
        {
            "id": id,
            "project": project,
            "type": type,
            "key": key,
            "tags": _json(tags),
            "properties": _json(properties),
            "labels": _json(labels),
            "created_at": parse_dt(created_at),
            "updated_at": parse_dt(updated_at),
            "embedding": _state(values),
        },
    )


def to_relationship(row: Any) -> Relationship:
    """Decode a ``relationships`` row (a tuple of :data:`RELATIONSHIP_COLUMNS`, or any
    row by name)."""
    values = _values(row, _RELATIONSHIP_NAMES)
    (id, project, type, source_id, target_id, label, properties, weight, valid_from, valid_to) = (
        values[:10]
    )
    description, source_chunks, created_at, updated_at = values[10:14]
    return built(
        Relationship,
        {
            "id": id,
            "project": project,
            "type": type,
            "source_id": source_id,
            "target_id": target_id,
            "label": label,
            "properties": _json(properties),
            "weight": float(weight),
            "valid_from": parse_dt(valid_from),
            "valid_to": parse_dt(valid_to),
            "description": description,
            "source_chunks": _json(source_chunks),
            "created_at": parse_dt(created_at),
            "updated_at": parse_dt(updated_at),
            "embedding": _state(values),
        },
    )


def to_chunk(row: Any) -> Chunk:
    """Decode a ``chunks`` row, its text the ``body`` column (a tuple of
    :data:`CHUNK_COLUMNS`, or any row by name)."""
    values = _values(row, _CHUNK_NAMES)
    id, project, body, source_id, position, metadata, created_at, updated_at = values[:8]
    return built(
        Chunk,
        {
            "id": id,
            "project": project,
            "text": body,
            "source_id": source_id,
            "position": int(position),
            "metadata": _json(metadata),
            "created_at": parse_dt(created_at),
            "updated_at": parse_dt(updated_at),
            "embedding": _state(values),
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
