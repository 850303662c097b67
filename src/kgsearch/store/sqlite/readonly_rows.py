"""Objects and relationships of a SQLite store read through a read-only connection:
``kgsearch objects get/list`` and ``kgsearch relationships get/list`` without the
engine.

Standard library only (``sqlite3``, ``json``, ``datetime``): no pydantic, no numpy, no
model. A row comes out as ``GraphObject`` or ``Relationship`` would dump it as JSON
(``model_dump(mode="json")``), read with the store's own statements
(:mod:`kgsearch.store.rowsql`). Only rows whose values the model would take as they
are come out this way; anything else (a value of an unexpected type, a non-finite
number, a status the model does not know, a timestamp that is not UTC) raises
:class:`Unreadable`, and the caller takes the engine's path, which decodes (or
refuses) it as it always has. :meth:`ReadOnlyRows.open` returns None for any file
that is not a current kgsearch store.
"""

from __future__ import annotations

import json
import math
import sqlite3
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from typing import Any, TypeVar

from kgsearch.store.rowsql import (
    OBJECT_COLUMNS,
    RELATIONSHIP_COLUMNS,
    by_id_sql,
    labels_sql,
    page_sql,
    page_start,
    resolve_sql,
    type_in_sql,
)
from kgsearch.store.sqlite.readonly import ReadOnlyConnection

__all__ = ["ReadOnlyRows", "Unreadable"]

T = TypeVar("T")

_STATUSES = frozenset({"pending", "embedded", "failed", "dead", "skipped"})
"""The values of ``EmbeddingStatus``."""


class Unreadable(Exception):
    """A row the read-only path does not decode exactly as the model would."""


class ReadOnlyRows(ReadOnlyConnection):
    """Objects and relationships of a current SQLite store, as JSON values."""

    def object_id(self, project: str, type_: str, key: str) -> str | None:
        """The id of the live object ``type_/key`` (as the store's ``resolve``)."""
        rows = self.db.execute(resolve_sql(1), (type_, key, project)).fetchall()
        return None if not rows else str(rows[0]["id"])

    def get_object(self, project: str, id: str) -> dict[str, Any] | None:
        """One live object by id as JSON, or None when the project has none.

        Raises:
            Unreadable: The row holds a value the model would convert or refuse.
        """
        rows = self.db.execute(by_id_sql("objects", OBJECT_COLUMNS, 1), (project, id)).fetchall()
        return _object(rows[0]) if rows else None

    def get_relationship(self, project: str, id: str) -> dict[str, Any] | None:
        """One live relationship by id as JSON, or None when the project has none.

        Raises:
            Unreadable: The row holds a value the model would convert or refuse.
        """
        sql = by_id_sql("relationships", RELATIONSHIP_COLUMNS, 1)
        rows = self.db.execute(sql, (project, id)).fetchall()
        return _relationship(rows[0]) if rows else None

    def list_objects(
        self,
        project: str,
        *,
        limit: int,
        cursor: str | None,
        types: Sequence[str] = (),
        labels: Sequence[str] = (),
    ) -> dict[str, Any]:
        """One page of live objects (``Page`` as JSON), oldest first.

        Raises:
            InvalidRequest: The limit or the cursor is out of range (as the store).
            Unreadable: A row holds a value the model would convert or refuse.
        """
        where, params = _conditions(types, labels)
        return self._page("objects", OBJECT_COLUMNS, _object, project, limit, cursor, where, params)

    def list_relationships(
        self, project: str, *, limit: int, cursor: str | None, types: Sequence[str] = ()
    ) -> dict[str, Any]:
        """One page of live relationships (``Page`` as JSON), oldest first, whether
        valid now or not (as the store lists them).

        Raises:
            InvalidRequest: The limit or the cursor is out of range (as the store).
            Unreadable: A row holds a value the model would convert or refuse.
        """
        where, params = _conditions(types, ())
        return self._page(
            "relationships",
            RELATIONSHIP_COLUMNS,
            _relationship,
            project,
            limit,
            cursor,
            where,
            params,
        )

    def _page(
        self,
        table: str,
        columns: str,
        decode: Callable[[sqlite3.Row], dict[str, Any]],
        project: str,
        limit: int,
        cursor: str | None,
        where: str,
        params: list[str],
    ) -> dict[str, Any]:
        after = page_start(limit, cursor)
        rows = self.db.execute(
            page_sql(table, columns, where), (project, after, *params, limit + 1)
        ).fetchall()
        items = [decode(r) for r in rows[:limit]]
        next_cursor = str(rows[limit - 1]["_pos"]) if len(rows) > limit else None
        return {"items": items, "next_cursor": next_cursor}


# decoding, as the model would dump it (``model_dump(mode="json")``) ----------------


def _str(value: Any) -> str:
    if not isinstance(value, str):
        raise Unreadable(value)
    return value


def _opt_str(value: Any) -> str | None:
    return None if value is None else _str(value)


def _opt_int(value: Any) -> int | None:
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool):
        raise Unreadable(value)
    return value


def _float(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise Unreadable(value)
    if not math.isfinite(value):
        raise Unreadable(value)
    return float(value)


def _plain(value: Any, depth: int = 0) -> Any:
    """A JSON value as the model keeps it (``Any``): finite numbers only (the model
    dumps infinities as null), strings, booleans, null, lists and objects."""
    if depth > 64:
        raise Unreadable("too deep")
    if value is None or isinstance(value, str | bool | int):
        return value
    if isinstance(value, float):
        return _float(value)
    if isinstance(value, list):
        return [_plain(v, depth + 1) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v, depth + 1) for k, v in value.items()}
    raise Unreadable(value)


def _parsed(value: Any, parse: Callable[[str], T]) -> T:
    """A stored text column read by ``parse`` (JSON, a timestamp); anything else, or a
    text it refuses, is unreadable."""
    if not isinstance(value, str):
        raise Unreadable(value)
    try:
        return parse(value)
    except ValueError:
        raise Unreadable(value) from None


def _json(value: Any, kind: type) -> Any:
    """A stored JSON column (text) of ``kind`` (list or dict)."""
    found = _parsed(value, json.loads)
    if not isinstance(found, kind):
        raise Unreadable(value)
    return _plain(found)


def _strings(value: Any) -> list[str]:
    found = _json(value, list)
    return [_str(v) for v in found]


_UTC = timedelta(0)


def _time(value: Any) -> str | None:
    """A stored ISO-8601 timestamp as the model dumps it: UTC ends in ``Z``."""
    if value is None or value == "":
        return None
    parsed = _parsed(value, datetime.fromisoformat)
    if parsed.utcoffset() != _UTC:  # naive or another offset: the model's own rules
        raise Unreadable(value)
    return parsed.replace(tzinfo=None).isoformat() + "Z"


def _required_time(value: Any) -> str:
    found = _time(value)
    if found is None:
        raise Unreadable(value)
    return found


def _state(row: sqlite3.Row) -> dict[str, Any]:
    status = row["status"]
    if status not in _STATUSES:
        raise Unreadable(status)
    attempts = _opt_int(row["attempts"])
    if attempts is None:
        raise Unreadable(attempts)
    embedded_text = _opt_str(row["embedded_text"])
    return {
        "status": status,
        "text": _opt_str(row["text"]),
        "text_hash": _opt_str(row["text_hash"]),
        "embedded_text": embedded_text,
        "attempts": attempts,
        "last_error": _opt_str(row["last_error"]),
        "model": _opt_str(row["model"]),
        "dims": _opt_int(row["dims"]),
        "text_version": _opt_int(row["text_version"]) if embedded_text is not None else None,
        "embedded_at": _time(row["embedded_at"]),
    }


def _conditions(types: Sequence[str], labels: Sequence[str]) -> tuple[str, list[str]]:
    """The listing's conditions on its rows' types and labels, as the store writes them."""
    parts: list[str] = []
    if types:
        parts.append(type_in_sql("t", len(types)))
    if labels:
        parts.append(labels_sql("t", len(labels)))
    return "".join(f" AND {p}" for p in parts), [*types, *labels]


def _dict(value: Any) -> Any:
    return _json(value, dict)


# Each model's fields in its dump order, and how each column is read (``embedding``,
# the state, comes last).
_OBJECT_FIELDS: dict[str, Callable[[Any], Any]] = {
    "id": _str,
    "project": _str,
    "type": _str,
    "key": _str,
    "tags": _strings,
    "properties": _dict,
    "labels": _strings,
    "created_at": _required_time,
    "updated_at": _required_time,
}
_RELATIONSHIP_FIELDS: dict[str, Callable[[Any], Any]] = {
    "id": _str,
    "project": _str,
    "type": _str,
    "source_id": _str,
    "target_id": _str,
    "label": _opt_str,
    "properties": _dict,
    "weight": _float,
    "valid_from": _time,
    "valid_to": _time,
    "description": _opt_str,
    "source_chunks": _strings,
    "created_at": _required_time,
    "updated_at": _required_time,
}


def _dumped(row: sqlite3.Row, fields: dict[str, Callable[[Any], Any]]) -> dict[str, Any]:
    """A row as its model dumps it: ``fields`` read in order, then the state."""
    return {**{name: read(row[name]) for name, read in fields.items()}, "embedding": _state(row)}


def _object(row: sqlite3.Row) -> dict[str, Any]:
    """An ``objects`` row as ``GraphObject`` dumps it."""
    return _dumped(row, _OBJECT_FIELDS)


def _relationship(row: sqlite3.Row) -> dict[str, Any]:
    """A ``relationships`` row as ``Relationship`` dumps it."""
    return _dumped(row, _RELATIONSHIP_FIELDS)
