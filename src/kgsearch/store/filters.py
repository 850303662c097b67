"""Search and listing filters as SQL conditions, one builder for both stores.

Which filter applies to which kind, the default of relationships valid now, and the
order of the conditions are decided here; a backend's :class:`FilterWords` writes each
condition in its SQL (SQLite: placeholders, ``json_each``, ``json_extract``;
PostgreSQL: arrays and ``jsonb`` operators), and the backend's ``filter_sql`` is that
value's :meth:`FilterWords.conditions`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any, NamedTuple

from kgsearch.model import Filters, Kind

__all__ = ["Condition", "FilterWords"]

Condition = tuple[str, list[Any]]
"""One condition (without the leading `` AND``) and its parameters."""


class FilterWords(NamedTuple):
    """How a backend words each condition, given the table alias.

    Args:
        types: Rows whose ``type`` is one of the values.
        labels: Objects carrying any of the labels.
        valid: Relationships valid at a time (timezone-aware).
        property: Rows whose property ``name`` equals a JSON value.
    """

    types: Callable[[str, Sequence[str]], Condition]
    labels: Callable[[str, Sequence[str]], Condition]
    valid: Callable[[str, datetime], Condition]
    property: Callable[[str, str, Any], Condition]

    def conditions(
        self, kind: Kind, filters: Filters | None, alias: str = "t", *, current_only: bool = True
    ) -> tuple[str, list[Any]]:
        """Conditions (each starting with `` AND``) for a kind's filters, with parameters.

        Filters that do not apply to a kind are ignored for it, so one request can carry
        filters for every leg; relationships default to those valid now unless
        ``current_only`` is False.
        """
        filters = filters or Filters()
        conditions: list[Condition] = []
        if kind is Kind.OBJECT:
            if filters.object_types:
                conditions.append(self.types(alias, filters.object_types))
            if filters.labels:
                conditions.append(self.labels(alias, filters.labels))
        if kind is Kind.RELATIONSHIP:
            if filters.relationship_types:
                conditions.append(self.types(alias, filters.relationship_types))
            as_of = filters.as_of or (datetime.now(UTC) if current_only else None)
            if as_of is not None:
                conditions.append(self.valid(alias, as_of.replace(tzinfo=as_of.tzinfo or UTC)))
        if filters.properties and kind is not Kind.CHUNK:
            for name, value in sorted(filters.properties.items()):
                conditions.append(self.property(alias, name, value))
        if filters.embedded_only:
            conditions.append((f"{alias}.status = 'embedded'", []))
        return "".join(f" AND {sql}" for sql, _ in conditions), [
            p for _, params in conditions for p in params
        ]
