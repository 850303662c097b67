"""The rows one search has read, so that no stage reads the same row twice.

Graph legs read rows to pick seeds and to apply filters; hydration needs rows for the
whole fused pool. Both go through one :class:`Rows` per search, and so do the name
look-ups (the name leg's and the anchored leg's span linking: :meth:`Rows.named`). Each
request for rows is exactly one batched store call, for the ids not read yet (possibly
none: a stage's number of store calls then follows from the plan alone, never from the
data), and ids the store did not return (deleted, other project) are remembered as
missing."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Protocol, TypeVar

from kgsearch.model import Chunk, GraphObject, Kind, Relationship
from kgsearch.store.base import GraphReads, SearchIndex, Trace

__all__ = ["Row", "Rows"]

Row = GraphObject | Relationship | Chunk
_R = TypeVar("_R", GraphObject, Relationship, Chunk)


class RowReads(GraphReads, SearchIndex, Protocol):
    """What :class:`Rows` reads: rows by id, and objects by name."""


class Rows:
    """Live rows by kind and id, each id read from the store at most once.

    Args:
        store: The store to read from.
        project: The project searched.
    """

    def __init__(self, store: RowReads, project: str) -> None:
        self.store = store
        self.project = project
        self._named: dict[str, list[tuple[str, str, str]]] = {}
        self._objects: dict[str, GraphObject | None] = {}
        self._relationships: dict[str, Relationship | None] = {}
        self._chunks: dict[str, Chunk | None] = {}

    def objects(self, ids: Iterable[str], trace: Trace | None = None) -> dict[str, GraphObject]:
        """Live objects among ``ids``, by id (one store call, for the unread ids; its
        statements go to ``trace``)."""
        return _read(
            self._objects, ids, lambda i: self.store.get_objects(self.project, i, trace=trace)
        )

    def relationships(
        self, ids: Iterable[str], trace: Trace | None = None
    ) -> dict[str, Relationship]:
        """Live relationships among ``ids``, by id (one store call, for the unread ids)."""
        return _read(
            self._relationships,
            ids,
            lambda i: self.store.get_relationships(self.project, i, trace=trace),
        )

    def chunks(self, ids: Iterable[str], trace: Trace | None = None) -> dict[str, Chunk]:
        """Live chunks among ``ids``, by id (one store call, for the unread ids)."""
        return _read(
            self._chunks, ids, lambda i: self.store.get_chunks(self.project, i, trace=trace)
        )

    def named(
        self, names: Iterable[str], trace: Trace | None = None
    ) -> dict[str, list[tuple[str, str, str]]]:
        """Each of ``names`` → the live objects whose key it is, ignoring case, as
        (type, id, key) ordered by type then id (empty when none): one store call
        (:meth:`~kgsearch.store.base.SearchIndex.named_objects`) for the names not looked
        up yet, none when every name was. A search asks for all its names first, so the
        name leg and the anchored leg share one look-up."""
        wanted = list(dict.fromkeys(names))
        missing = [n for n in wanted if n not in self._named]
        if missing:
            found = self.store.named_objects(self.project, missing, trace=trace)
            self._named.update({n: found.get(n, []) for n in missing})
        return {n: self._named[n] for n in wanted}

    def by_key(self, keys: Iterable[str]) -> dict[str, Row]:
        """Rows already read for fusion keys (``kind:id``); unread or missing keys are left
        out."""
        out: dict[str, Row] = {}
        for value in keys:
            kind, _, id = value.partition(":")
            row: Row | None
            if kind == Kind.OBJECT.value:
                row = self._objects.get(id)
            elif kind == Kind.RELATIONSHIP.value:
                row = self._relationships.get(id)
            else:
                row = self._chunks.get(id)
            if row is not None:
                out[value] = row
        return out


def _read(
    seen: dict[str, _R | None],
    ids: Iterable[str],
    fetch: Callable[[Sequence[str]], Sequence[_R]],
) -> dict[str, _R]:
    """One ``fetch`` of the ids not in ``seen``; the live rows among ``ids``."""
    wanted = list(dict.fromkeys(ids))
    missing = [i for i in wanted if i not in seen]
    fetched = fetch(missing)
    seen.update(dict.fromkeys(missing))
    seen.update((row.id, row) for row in fetched)
    return {i: row for i in wanted if (row := seen[i]) is not None}
