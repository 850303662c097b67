"""Pure SQL builders for the SQLite store: filters, FTS5 queries (value encoding shared
with the other stores lives in :mod:`kgsearch.store.values` and is re-exported here)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import datetime
from typing import Any

from kgsearch.errors import InvalidRequest
from kgsearch.store.dialect import Dialect
from kgsearch.store.filters import Condition, FilterWords
from kgsearch.store.rowsql import labels_sql, placeholders, type_in_sql
from kgsearch.store.values import dumps, iso, now_iso, parse_dt, query_terms

__all__ = [
    "SQLITE",
    "chunked",
    "dumps",
    "filter_sql",
    "fts_query",
    "iso",
    "now_iso",
    "parse_dt",
    "placeholders",
    "query_terms",
]


# SQLite's default limit on bound parameters is 32766; stay far below it per statement.
MAX_PARAMS = 500


def chunked(items: Sequence[Any], size: int = MAX_PARAMS) -> Iterator[Sequence[Any]]:
    """Slices of at most ``size`` items, to keep statements under the parameter limit."""
    for start in range(0, len(items), size):
        yield items[start : start + size]


def fts_query(
    query: str | list[str],
    *,
    prefix: bool = False,
    required: list[str] | None = None,
    conjunction: bool = False,
) -> str | None:
    """Turn any user string (or its terms) into a safe FTS5 query.

    Every term is emitted as a double-quoted string, so quotes, operators and column
    filters in the input lose their meaning. Terms are joined by OR; with
    ``required`` the match must also contain one of those (selective) terms, and with
    ``conjunction`` every term. Returns None when no searchable term is left.
    """
    terms = query_terms(query) if isinstance(query, str) else query
    if not terms:
        return None
    quoted = [f'"{t}"' for t in terms]
    if prefix:
        quoted[-1] += "*"
    if conjunction:
        return " AND ".join(quoted)
    anyof = " OR ".join(quoted)
    if required:
        return "(" + " OR ".join(f'"{t}"' for t in required) + ") AND (" + anyof + ")"
    return anyof


def _json_path(name: str) -> str:
    if not name or '"' in name or "\\" in name:
        raise InvalidRequest(f"invalid property name in filter: {name!r}")
    return f'$."{name}"'


def _valid(alias: str, as_of: datetime) -> Condition:
    when = iso(as_of)
    return (
        f"({alias}.valid_from IS NULL OR {alias}.valid_from <= ?) "
        f"AND ({alias}.valid_to IS NULL OR {alias}.valid_to > ?)",
        [when, when],
    )


_WORDS = FilterWords(
    types=lambda alias, types: (type_in_sql(alias, len(types)), list(types)),
    labels=lambda alias, labels: (labels_sql(alias, len(labels)), list(labels)),
    valid=_valid,
    property=lambda alias, name, value: (
        f"json_extract({alias}.properties, ?) = ?",
        [_json_path(name), value],
    ),
)


filter_sql = _WORDS.conditions


_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def nocase(key: str) -> str:
    """A key as NOCASE compares it: ASCII letters lowered, every other character kept."""
    return key.translate(_ASCII_LOWER)


def _listed(column: str, values: Sequence[Any]) -> tuple[str, list[Any]]:
    return f"{column} IN (SELECT value FROM json_each(?))", [dumps(list(values))]


SQLITE = Dialect(
    name="sqlite",
    position="rowid",
    greatest="max",
    listed=_listed,
    conditions=filter_sql,
    stamp=now_iso,
    time=iso,
    text=lambda value: value,
    json=dumps,
)
"""The SQLite words of the shared capability SQL: a list is one JSON parameter."""
