"""SQL builders and value encoders for the PostgreSQL store: filters, safe ``tsquery``
text, and the checks that keep NUL characters and naive datetimes out of statements."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from kgsearch.errors import InvalidRequest
from kgsearch.store.dialect import Dialect
from kgsearch.store.filters import Condition, FilterWords
from kgsearch.store.values import dumps

__all__ = ["POSTGRES", "clean", "filter_sql", "json_text", "tsquery", "utc"]

# \u0000 in JSON text, not preceded by an escaped backslash
_JSON_NUL = re.compile(r"(?<!\\)(?:\\\\)*\\u0000")


def utc(value: datetime | None) -> datetime | None:
    """A datetime with a time zone (naive values are taken as UTC)."""
    if value is not None and value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    return value


def json_text(value: Any) -> str:
    """Stored JSON; NUL (``\\u0000``) is refused, as ``jsonb`` (used by filters) refuses it.

    Raises:
        InvalidRequest: The value holds a NUL character.
    """
    text = dumps(value)
    if "u0000" in text and _JSON_NUL.search(text):
        raise InvalidRequest("JSON values must not contain NUL (\\u0000) characters")
    return text


def clean(value: Any) -> Any:
    """Text for PostgreSQL, which refuses NUL characters in ``text`` and ``json``.

    Raises:
        InvalidRequest: The value is a string holding a NUL character.
    """
    if isinstance(value, str) and "\x00" in value:
        raise InvalidRequest("text must not contain NUL (\\x00) characters")
    return value


def _valid(alias: str, as_of: datetime) -> Condition:
    return (
        f"({alias}.valid_from IS NULL OR {alias}.valid_from <= %s) "
        f"AND ({alias}.valid_to IS NULL OR {alias}.valid_to > %s)",
        [as_of, as_of],
    )


_WORDS = FilterWords(
    types=lambda alias, types: (f"{alias}.type = ANY(%s)", [list(types)]),
    labels=lambda alias, labels: (f"{alias}.labels::jsonb ?| %s", [list(labels)]),
    valid=_valid,
    property=lambda alias, name, value: (
        f"({alias}.properties::jsonb -> %s) = %s::jsonb",
        [name, json.dumps(value)],
    ),
)


filter_sql = _WORDS.conditions


def _quote(lexeme: str) -> str:
    """A lexeme as a quoted ``tsquery`` operand (operators inside lose their meaning)."""
    return "'" + lexeme.replace("\\", "\\\\").replace("'", "''") + "'"


def tsquery(
    lexemes: list[str], *, prefix: set[str] | None = None, conjunction: bool = False
) -> str:
    """``'a' | 'b':*`` text for already-normalised lexemes (cast it with ``::tsquery``)."""
    prefix = prefix or set()
    operands = [_quote(x) + (":*" if x in prefix else "") for x in lexemes]
    return (" & " if conjunction else " | ").join(operands)


def _listed(column: str, values: Sequence[Any]) -> tuple[str, list[Any]]:
    return f"{column} = ANY(?)", [list(values)]


POSTGRES = Dialect(
    name="postgres",
    position="seq",
    greatest="greatest",
    listed=_listed,
    conditions=filter_sql,
    stamp=lambda: datetime.now(UTC),
    time=utc,
    text=clean,
    json=json_text,
    json_mark="?::json",
    words=True,
    serialise="SELECT pg_advisory_xact_lock(hashtext(?))",
    lock=" FOR UPDATE",
    hold=" FOR SHARE",
    as_text="::text",
)
"""The PostgreSQL words of the shared capability SQL: a list is one array parameter."""
