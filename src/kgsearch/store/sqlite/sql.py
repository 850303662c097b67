"""Pure SQL builders for the SQLite store: filters, FTS5 queries (value encoding shared
with the other stores lives in :mod:`kgsearch.store.values` and is re-exported here)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from kgsearch.errors import InvalidRequest
from kgsearch.model import Filters, Kind
from kgsearch.store.dialect import Dialect
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


def filter_sql(
    kind: Kind, filters: Filters | None, alias: str = "t", *, current_only: bool = True
) -> tuple[str, list[Any]]:
    """SQL conditions (joined with AND, starting with `` AND``) for a kind's filters.

    Filters that do not apply to a kind are ignored for it (object types do not
    restrict chunks), so one request can carry filters for every leg.
    """
    if filters is None:
        filters = Filters()
    parts: list[str] = []
    params: list[Any] = []
    if kind is Kind.OBJECT:
        if filters.object_types:
            parts.append(type_in_sql(alias, len(filters.object_types)))
            params.extend(filters.object_types)
        if filters.labels:
            parts.append(labels_sql(alias, len(filters.labels)))
            params.extend(filters.labels)
    if kind is Kind.RELATIONSHIP:
        if filters.relationship_types:
            parts.append(type_in_sql(alias, len(filters.relationship_types)))
            params.extend(filters.relationship_types)
        as_of = iso(filters.as_of) or (now_iso() if current_only else None)
        if as_of is not None:
            parts.append(
                f"({alias}.valid_from IS NULL OR {alias}.valid_from <= ?) "
                f"AND ({alias}.valid_to IS NULL OR {alias}.valid_to > ?)"
            )
            params.extend([as_of, as_of])
    if filters.properties and kind is not Kind.CHUNK:
        for name, value in sorted(filters.properties.items()):
            parts.append(f"json_extract({alias}.properties, ?) = ?")
            params.extend([_json_path(name), value])
    if filters.embedded_only:
        parts.append(f"{alias}.status = 'embedded'")
    sql = "".join(f" AND {p}" for p in parts)
    return sql, params


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
    fold=nocase,
    stamp=now_iso,
    time=iso,
    text=lambda value: value,
    json=dumps,
)
"""The SQLite words of the shared capability SQL: a list is one JSON parameter."""
