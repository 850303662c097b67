"""The search primitives' shared rules (``SearchIndex``), written once for both stores.

Here live the limits and checks every leg applies, the query words, and the name
lookups' matching and order; the ranking itself is the backend's own, behind two
hooks that take one value each: ``_nearest`` (SQLite scans in memory or walks its HNSW
graph, PostgreSQL asks pgvector) and ``_matching`` (FTS5 BM25, or BM25 over
``tsvector``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, NamedTuple

import numpy as np
import numpy.typing as npt

from kgsearch.errors import DimensionMismatch, InvalidRequest
from kgsearch.model import Filters, Kind
from kgsearch.store.dialect import Slice
from kgsearch.store.tracing import Trace, traced
from kgsearch.store.values import query_terms

__all__ = ["MAX_LIMIT", "SearchCore", "TextLeg", "VectorLeg", "check_dims"]

# The most hits one leg returns.
MAX_LIMIT = 1000


class VectorLeg(NamedTuple):
    """One vector leg: the query vector (flat float32) and what restricts the rows."""

    project: str
    kind: Kind
    query: npt.NDArray[np.float32]
    limit: int
    filters: Filters | None
    ids: Sequence[str] | None


class TextLeg(NamedTuple):
    """One lexical leg: the query's words (never empty) and what restricts the rows."""

    project: str
    kind: Kind
    terms: list[str]
    limit: int
    filters: Filters | None
    prefix: bool


def check_dims(query: npt.NDArray[np.float32], dims: int) -> None:
    """Refuse a query vector of other dimensions than the stored vectors'.

    Raises:
        DimensionMismatch: They differ.
    """
    if query.shape[0] != dims:
        raise DimensionMismatch(
            f"query vector has {query.shape[0]} dims; the store's vectors have {dims}",
            details={"query_dims": int(query.shape[0]), "store_dims": int(dims)},
        )


def _check_limit(limit: int) -> None:
    if not 1 <= limit <= MAX_LIMIT:
        raise InvalidRequest(f"limit must be between 1 and {MAX_LIMIT}")


class SearchCore(Slice):
    """``SearchIndex``'s searches over a backend's ranking hooks (declared below)."""

    if TYPE_CHECKING:

        def _nearest(self, leg: VectorLeg) -> list[tuple[str, float]]:
            """Top ``leg.limit`` rows by cosine similarity (checked dims, the index's
            or an exact scan)."""

        def _matching(self, leg: TextLeg) -> list[tuple[str, float]]:
            """Top ``leg.limit`` rows by BM25 over their text, higher better."""

        def _named(
            self, project: str, names: list[str], filters: Filters | None
        ) -> list[tuple[str, str, str, str]]:
            """(name, type, id, key as stored) of each live object whose key is one of
            ``names`` (distinct, NUL-free) ignoring case as the store compares keys,
            once per name it matches, filters applied. The store matches each name
            itself: a name folded in Python can differ from the key folded by the
            database ("İstanbul", a final sigma), and then the key spelt exactly as
            asked would not be found."""

    @traced
    def vector_search(
        self,
        project: str,
        kind: Kind,
        vector: npt.NDArray[np.float32],
        *,
        limit: int,
        filters: Filters | None = None,
        ids: Sequence[str] | None = None,
        trace: Trace | None = None,
    ) -> list[tuple[str, float]]:
        _check_limit(limit)
        query = np.asarray(vector, dtype=np.float32).reshape(-1)
        return self._nearest(VectorLeg(project, kind, query, limit, filters, ids))

    @traced
    def text_search(
        self,
        project: str,
        kind: Kind,
        query: str,
        *,
        limit: int,
        filters: Filters | None = None,
        prefix: bool = False,
        trace: Trace | None = None,
    ) -> list[tuple[str, float]]:
        _check_limit(limit)
        terms = query_terms(query)
        if not terms:
            return []
        return self._matching(TextLeg(project, kind, terms, limit, filters, prefix))

    @traced
    def objects_named(
        self,
        project: str,
        name: str,
        *,
        limit: int,
        filters: Filters | None = None,
        trace: Trace | None = None,
    ) -> list[tuple[str, float]]:
        if "\x00" in name:
            return []  # no stored key holds NUL
        # sorted here, so that no plan walks an index in (type, id) order instead of
        # looking the key up
        rows = self._named(project, [name], filters)
        return [(i, 1.0) for _, i in sorted((type_, id) for _, type_, id, _ in rows)[:limit]]

    @traced
    def objects_named_many(
        self,
        project: str,
        names: Sequence[str],
        *,
        limit: int,
        trace: Trace | None = None,
    ) -> dict[str, list[str]]:
        found = self.named_objects(project, names)
        return {n: [i for _, i, _ in rows[:limit]] for n, rows in found.items()}

    @traced
    def named_objects(
        self, project: str, names: Sequence[str], *, trace: Trace | None = None
    ) -> dict[str, list[tuple[str, str, str]]]:
        wanted = [n for n in dict.fromkeys(names) if n and "\x00" not in n]
        if not wanted:
            return {}
        found: dict[str, list[tuple[str, str, str]]] = {}
        for name, type_, id, key in self._named(project, wanted, None):
            found.setdefault(name, []).append((type_, id, key))
        return {n: sorted(set(rows)) for n, rows in found.items()}
