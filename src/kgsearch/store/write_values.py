"""The values of an object or relationship upsert, built once for both stores.

Each backend keeps its own statement (conflict rules, how a batch reaches the server:
``executemany`` on SQLite, a staged ``COPY`` on PostgreSQL); the row's values come from
here, encoded by the store's :class:`~kgsearch.store.dialect.Dialect` (text checks, JSON,
times) in the column order of ``OBJECT_COLUMNS`` and ``RELATIONSHIP_COLUMNS``, plus a
``words`` column where the dialect keeps one (PostgreSQL's lexical column).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kgsearch.errors import NotFound
from kgsearch.store.dialect import Dialect
from kgsearch.store.records import EmbeddableRow, ObjectRow, RelationshipRow
from kgsearch.store.values import words

__all__ = [
    "OBJECT_COLUMNS",
    "RELATIONSHIP_COLUMNS",
    "object_values",
    "refuse_missing",
    "relationship_values",
]

OBJECT_COLUMNS = (
    "id, project, type, key, tags, properties, labels, created_at, updated_at, "
    "text, text_hash, text_version"
)
RELATIONSHIP_COLUMNS = (
    "id, project, type, source_id, target_id, label, properties, weight, valid_from, "
    "valid_to, description, source_chunks, created_at, updated_at, text, text_hash, "
    "text_version"
)


def object_values(d: Dialect, project: str, rows: Sequence[ObjectRow]) -> list[tuple[Any, ...]]:
    """One tuple of upsert values per object row."""
    now = d.stamp()
    return [
        (
            r.id,
            project,
            d.text(r.type),
            d.text(r.key),
            d.json(list(r.tags)),
            d.json(r.properties),
            d.json(list(r.labels)),
            *_embeddable(d, r, now),
        )
        for r in rows
    ]


def relationship_values(
    d: Dialect, project: str, rows: Sequence[RelationshipRow]
) -> list[tuple[Any, ...]]:
    """One tuple of upsert values per relationship row."""
    now = d.stamp()
    return [
        (
            r.id,
            project,
            d.text(r.type),
            r.source_id,
            r.target_id,
            d.text(r.label),
            d.json(r.properties),
            r.weight,
            d.time(r.valid_from),
            d.time(r.valid_to),
            d.text(r.description),
            d.json(list(r.source_chunks)),
            *_embeddable(d, r, now),
        )
        for r in rows
    ]


def _embeddable(d: Dialect, r: EmbeddableRow, now: Any) -> tuple[Any, ...]:
    """The columns every embeddable row ends with: times, text, and words where kept."""
    return (
        d.time(r.created_at) or now,
        d.time(r.updated_at) or now,
        d.text(r.text),
        r.text_hash,
        r.text_version,
        *((words(r.text),) if d.words else ()),
    )


def refuse_missing(project: str, absent: Sequence[str]) -> None:
    """Refuse relationships whose endpoints are not live objects of the project.

    Raises:
        NotFound: ``absent`` is not empty.
    """
    if absent:
        raise NotFound(
            f"relationship endpoint(s) are not live objects of project {project!r}: "
            f"{', '.join(absent[:10])}",
            details={"missing": list(absent)},
        )
