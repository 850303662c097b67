"""The Store protocol every backend implements, and the plain records it exchanges.

A store persists projects' objects, relationships, sources, chunks and mentions,
keeps a lexical index in step with them inside the same transaction, holds each
embeddable row's embedding state and vector, and offers search primitives that
return ranked ``(id, score)`` lists with higher scores better. Search strategies
live in :mod:`kgsearch.search`, built from these primitives; no SQL lives here.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, Protocol

import numpy as np
import numpy.typing as npt

from kgsearch.keys import ApiKey
from kgsearch.model import (
    Chunk,
    Filters,
    GraphObject,
    Kind,
    Mention,
    ObjectRef,
    Page,
    Relationship,
    Source,
    display_name,
)

__all__ = [
    "Claim",
    "Direction",
    "EmbeddingCounts",
    "EmbeddingResult",
    "Endpoint",
    "Neighbor",
    "ObjectRow",
    "RelationshipRow",
    "Store",
    "StoreInfo",
    "TextUpdate",
]

Direction = Literal["out", "in", "both"]


@dataclass(frozen=True)
class StoreInfo:
    """What a store was built with, read from its metadata table."""

    url: str
    schema_version: int
    migrations: tuple[str, ...]
    embedding_model: str | None
    dims: int | None
    distance: str = "cosine"


@dataclass(frozen=True)
class ObjectRow:
    """An object ready to write: input fields plus the text to embed and its hash."""

    id: str
    type: str
    key: str
    tags: Sequence[str]
    properties: dict[str, Any]
    labels: Sequence[str]
    text: str
    text_hash: str
    text_version: int
    # Kept when given (a migration carries them over); the store's clock otherwise.
    created_at: datetime | None = None
    updated_at: datetime | None = None


@dataclass(frozen=True)
class RelationshipRow:
    """A relationship ready to write, endpoints resolved to object ids."""

    id: str
    type: str
    source_id: str
    target_id: str
    label: str | None
    properties: dict[str, Any]
    weight: float
    valid_from: datetime | None
    valid_to: datetime | None
    description: str | None
    source_chunks: Sequence[str]
    text: str
    text_hash: str
    text_version: int
    created_at: datetime | None = None
    updated_at: datetime | None = None


@dataclass(frozen=True)
class Endpoint:
    """A resolved object reference: id plus what text builders need."""

    id: str
    type: str
    key: str
    properties: dict[str, Any]

    @functools.cached_property
    def name(self) -> str:
        """Display name (see :func:`kgsearch.text.display_name`), computed once."""
        return display_name(self.properties, self.key, self.id)


@dataclass(frozen=True)
class TextUpdate:
    """A recomputed embedding text for one row."""

    id: str
    text: str
    text_hash: str
    text_version: int


@dataclass(frozen=True)
class Claim:
    """A row claimed for embedding."""

    project: str
    id: str
    text: str
    text_hash: str
    attempts: int


@dataclass(frozen=True)
class EmbeddingResult:
    """A successfully embedded row, as written back by the lifecycle."""

    project: str
    id: str
    text: str
    text_hash: str
    vector: npt.NDArray[np.float32]


@dataclass
class EmbeddingCounts:
    """Per project and kind: rows by status, stale rows, latency totals."""

    project: str
    kind: Kind
    by_status: dict[str, int] = field(default_factory=dict)
    stale: int = 0

    @property
    def total(self) -> int:
        """All live rows of this kind."""
        return sum(self.by_status.values())


@dataclass(frozen=True)
class Neighbor:
    """An object reached by traversal: its id, hop count and the edge that reached it."""

    id: str
    depth: int
    via: str


class Store(Protocol):
    """Persistence and search primitives; see module docstring.

    Every method takes the project explicitly and never returns rows of another
    project. Soft-deleted rows are invisible to every read.
    """

    url: str
    # Whether one search's vector legs should run side by side. True where each leg is
    # a query to a database server (on a connection of its own, so the server works on
    # them at once); False for an in-process scan, which is bound by memory bandwidth
    # and the GIL, so that running two at once only adds contention on a small machine.
    parallel_vector_legs: bool

    # lifecycle -----------------------------------------------------------
    def migrate(self) -> list[str]:
        """Apply pending named migrations; return the names applied."""
        ...

    def close(self) -> None:
        """Release connections and caches."""
        ...

    def transaction(self) -> AbstractContextManager[None]:
        """A write transaction; nested calls join the outer one."""
        ...

    @property
    def in_transaction(self) -> bool:
        """Whether the calling thread is inside :meth:`transaction` (its reads then see
        its own uncommitted writes, which other threads cannot)."""
        ...

    def bulk_load(self) -> AbstractContextManager[None]:
        """A write transaction tuned for loading many rows (indexes rebuilt at the end)."""
        ...

    # metadata ------------------------------------------------------------
    def info(self) -> StoreInfo:
        """Schema version, migrations, embedding model and dims."""
        ...

    def set_embedding_model(self, model: str, dims: int, *, replace: bool = False) -> None:
        """Record the model/dims the vectors are built with; mismatch raises."""
        ...

    def get_meta(self, key: str) -> str | None:
        """A value from the store's metadata table."""
        ...

    def set_meta(self, key: str, value: str) -> None:
        """Set a metadata value."""
        ...

    def projects(self) -> list[str]:
        """Projects that hold any live row."""
        ...

    # writes --------------------------------------------------------------
    def upsert_objects(
        self, project: str, rows: Sequence[ObjectRow], *, return_ids: bool = True
    ) -> list[str]:
        """Insert or update by (project, type, key); return the stored ids in order."""
        ...

    def upsert_relationships(
        self, project: str, rows: Sequence[RelationshipRow], *, endpoints_checked: bool = False
    ) -> list[str]:
        """Insert or update by id; endpoints must be live objects of the project."""
        ...

    def upsert_sources(self, project: str, sources: Sequence[Source]) -> None:
        """Insert or update sources by id."""
        ...

    def upsert_chunks(self, project: str, rows: Sequence[tuple[Chunk, str, str, int]]) -> None:
        """Insert or update chunks by id with (chunk, text, text_hash, text_version)."""
        ...

    def add_mentions(self, project: str, mentions: Sequence[Mention]) -> None:
        """Add mention links (duplicates ignored)."""
        ...

    def delete(
        self,
        project: str,
        kind: Literal["object", "relationship", "chunk", "source"],
        ids: Sequence[str],
    ) -> int:
        """Soft-delete rows (objects take their relationships with them); return count."""
        ...

    def purge(self, project: str) -> int:
        """Remove soft-deleted rows for good, with their mentions and dangling edges."""
        ...

    # reads ---------------------------------------------------------------
    def resolve(self, project: str, refs: Sequence[ObjectRef]) -> dict[ObjectRef, Endpoint]:
        """Resolve natural references to live objects (missing refs are absent)."""
        ...

    def endpoints(self, project: str, ids: Sequence[str]) -> dict[str, Endpoint]:
        """Live objects by id, as endpoints."""
        ...

    def get_objects(self, project: str, ids: Sequence[str]) -> list[GraphObject]:
        """Live objects by id, in the order asked (missing ids skipped)."""
        ...

    def get_relationships(self, project: str, ids: Sequence[str]) -> list[Relationship]:
        """Live relationships by id, in the order asked."""
        ...

    def get_chunks(self, project: str, ids: Sequence[str]) -> list[Chunk]:
        """Live chunks by id, in the order asked."""
        ...

    def get_sources(self, project: str, ids: Sequence[str]) -> list[Source]:
        """Live sources by id, in the order asked."""
        ...

    def list_rows(
        self,
        project: str,
        kind: Literal["object", "relationship", "chunk", "source"],
        *,
        limit: int = 100,
        cursor: str | None = None,
        filters: Filters | None = None,
    ) -> Page:
        """One page of live rows ordered by insertion; ``cursor`` continues a listing."""
        ...

    def relationships_touching(self, project: str, object_ids: Sequence[str]) -> list[Relationship]:
        """Live relationships with either endpoint in ``object_ids``."""
        ...

    def objects_named(
        self, project: str, name: str, *, limit: int, filters: Filters | None = None
    ) -> list[tuple[str, float]]:
        """Live objects whose key equals ``name`` ignoring case (ASCII case on SQLite),
        filters applied, ordered by type then id; each with score 1.0."""
        ...

    def object_types(self, project: str) -> list[str]:
        """Distinct types of the project's live objects."""
        ...

    def neighbors(
        self,
        project: str,
        ids: Sequence[str],
        *,
        depth: int = 1,
        direction: Direction = "both",
        relationship_types: Sequence[str] | None = None,
        as_of: datetime | None = None,
    ) -> list[Neighbor]:
        """Objects within ``depth`` hops (BFS), excluding the start ids."""
        ...

    def edges_among(
        self,
        project: str,
        object_ids: Sequence[str],
        *,
        relationship_types: Sequence[str] | None = None,
        as_of: datetime | None = None,
    ) -> list[tuple[str, str, str, float]]:
        """(relationship id, source id, target id, weight) of live edges touching the ids."""
        ...

    def mentions(
        self,
        project: str,
        *,
        source_ids: Sequence[str] = (),
        chunk_ids: Sequence[str] = (),
        object_ids: Sequence[str] = (),
        relationship_ids: Sequence[str] = (),
    ) -> list[Mention]:
        """Mention links matching any of the given ids."""
        ...

    def counts(self, project: str) -> dict[str, int]:
        """Live rows per kind (objects, relationships, chunks, sources, mentions)."""
        ...

    def iter_rows(
        self, project: str, kind: Literal["object", "relationship", "chunk", "source", "mention"]
    ) -> Iterator[Any]:
        """Stream every live row of a kind (used by export and migration)."""
        ...

    # embedding lifecycle -------------------------------------------------
    def set_texts(self, project: str, kind: Kind, updates: Sequence[TextUpdate]) -> int:
        """Store recomputed texts; rows whose hash changed become pending. Return changed."""
        ...

    def claim(
        self,
        kind: Kind,
        *,
        project: str | None,
        limit: int,
        now: float,
        lease_seconds: float = 300.0,
    ) -> list[Claim]:
        """Claim up to ``limit`` rows due for embedding (pending, or failed past backoff)."""
        ...

    def complete(
        self,
        kind: Kind,
        results: Sequence[EmbeddingResult],
        *,
        model: str,
        dims: int,
        text_version: int,
        elapsed_ms: float,
        record_stats: bool = True,
    ) -> int:
        """Write vectors; rows whose text changed since the claim stay pending.
        ``record_stats=False`` (vectors copied, not computed) leaves latency stats alone."""
        ...

    def fail(
        self,
        kind: Kind,
        claims: Sequence[Claim],
        error: str,
        *,
        now: float,
        max_attempts: int,
        backoff_seconds: float,
    ) -> None:
        """Record a failed attempt; rows past ``max_attempts`` become dead."""
        ...

    def requeue(self, kind: Kind, *, project: str | None, statuses: Sequence[str]) -> int:
        """Make rows in ``statuses`` pending again with attempts reset; return count."""
        ...

    def next_retry_at(self, kind: Kind, *, project: str | None) -> float | None:
        """When the earliest failed row becomes due for another attempt."""
        ...

    def embedding_counts(self, project: str | None) -> list[EmbeddingCounts]:
        """Counts by status per project and kind."""
        ...

    def embedding_latency(self) -> tuple[int, float]:
        """(texts embedded, total milliseconds) recorded by :meth:`complete`."""
        ...

    def iter_text_rows(self, project: str, kind: Kind) -> Iterator[list[Any]]:
        """Batches of live rows with what text builders need, to refresh texts."""
        ...

    def build_indexes(self) -> list[str]:
        """Build persistent vector indexes that are due (after bulk loads and embedding
        runs); return the kinds indexed now. Stores with in-memory indexes return []."""
        ...

    # search primitives ---------------------------------------------------
    def vector_search(
        self,
        project: str,
        kind: Kind,
        vector: npt.NDArray[np.float32],
        *,
        limit: int,
        filters: Filters | None = None,
        ids: Sequence[str] | None = None,
    ) -> list[tuple[str, float]]:
        """Top-``limit`` embedded rows by cosine similarity, filters applied inside."""
        ...

    def text_search(
        self,
        project: str,
        kind: Kind,
        query: str,
        *,
        limit: int,
        filters: Filters | None = None,
        prefix: bool = False,
    ) -> list[tuple[str, float]]:
        """Top-``limit`` rows by BM25 over their text; any query string is safe."""
        ...

    def vectors(
        self, project: str, kind: Kind, ids: Sequence[str]
    ) -> dict[str, npt.NDArray[np.float32]]:
        """Stored vectors of the given rows (for MMR)."""
        ...

    # api keys (used by the REST/MCP servers) ------------------------------
    def create_api_key(self, key: ApiKey, key_hash: str) -> None:
        """Store a new API key record with the digest of its secret."""
        ...

    def api_keys(self, project: str | None = None) -> list[ApiKey]:
        """API key records (never secrets), of one project or all, oldest first."""
        ...

    def find_api_key(self, key_id: str) -> tuple[ApiKey, str] | None:
        """The key record with this id and its stored digest (None when unknown)."""
        ...

    def revoke_api_key(self, key_id: str) -> bool:
        """Revoke a key; False when no active key has this id."""
        ...
