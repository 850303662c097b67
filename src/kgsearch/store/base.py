"""The store's seam: one small protocol per capability, and ``Store`` as their union.

A store persists projects' objects, relationships, sources, chunks and mentions, keeps a
lexical index in step with them inside the same transaction, holds each embeddable row's
embedding state and vector, queues generic tasks for jobs, caches values, and offers search
primitives that return ranked ``(id, score)`` lists with higher scores better. Functions
take the narrowest capability they need (:class:`GraphReads`, :class:`SearchIndex`,
:class:`TaskQueue`…); the engine and the backends use :class:`Store`. Every method takes the
project explicitly (where rows belong to one) and never returns rows of another project;
soft-deleted rows are invisible to every read. No SQL lives here, and the records these
protocols exchange live in :mod:`kgsearch.store.records` (re-exported here).

The reads a search makes accept ``trace``: a :data:`Trace` called with every SQL statement
the call runs and its parameters (see :mod:`kgsearch.store.tracing`), so that ``explain``
can show each leg's work; without one a call reports nothing.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Any, Literal, Protocol

import numpy as np
import numpy.typing as npt

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
)
from kgsearch.store.community_base import CommunityStore
from kgsearch.store.keys_base import Cache, KeyStore
from kgsearch.store.records import (
    TASK_STATUSES,
    Claim,
    Direction,
    EdgeTable,
    EmbeddingCounts,
    EmbeddingResult,
    Endpoint,
    Neighbor,
    ObjectRow,
    RelationshipRow,
    RowKind,
    StoreInfo,
    Task,
    TaskIn,
    TaskState,
    TextUpdate,
)
from kgsearch.store.tracing import Trace
from kgsearch.store.usage import UsageLedger, UsageTotals

__all__ = [
    "TASK_STATUSES",
    "Cache",
    "Claim",
    "CommunityStore",
    "Direction",
    "EdgeTable",
    "EmbeddingCounts",
    "EmbeddingQueue",
    "EmbeddingResult",
    "Endpoint",
    "GraphReads",
    "GraphWrites",
    "KeyStore",
    "Lifecycle",
    "Neighbor",
    "ObjectRow",
    "RelationshipRow",
    "RowKind",
    "SearchIndex",
    "Store",
    "StoreInfo",
    "Task",
    "TaskIn",
    "TaskQueue",
    "TaskState",
    "TextUpdate",
    "Trace",
    "UsageLedger",
    "UsageTotals",
]


class Lifecycle(Protocol):
    """Opening, migrating, transactions and the store's own metadata."""

    url: str
    server_reads: bool  # reads are round trips to a server (PostgreSQL): off the event loop

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

    def write_run(self) -> AbstractContextManager[None]:
        """Many write transactions in a row (an extraction run; nested runs join the
        outer one): the store may leave some per-row index upkeep to the run's end
        (SQLite re-indexes each changed object's full text once, then), so until then a
        lexical search may find a changed object by its old text. Rows are committed
        and read back as usual."""
        ...

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


class GraphWrites(Protocol):
    """Writing graph rows: upserts, mention links, soft delete and purge."""

    def upsert_objects(
        self, project: str, rows: Sequence[ObjectRow], *, return_ids: bool = True
    ) -> list[str]:
        """Insert or update by (project, type, key); return the stored ids in order."""
        ...

    def upsert_relationships(
        self, project: str, rows: Sequence[RelationshipRow], *, endpoints_checked: bool = False
    ) -> list[str]:
        """Insert or update by id; endpoints must be live objects of the project (checked
        here unless the caller already resolved them in this transaction:
        ``endpoints_checked``).

        Raises:
            NotFound: An endpoint is not a live object of the project.
        """
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

    def delete(self, project: str, kind: RowKind, ids: Sequence[str]) -> int:
        """Soft-delete rows (objects take their relationships with them); return count."""
        ...

    def delete_mentions(
        self, project: str, chunk_ids: Sequence[str], *, object_id: str | None = None
    ) -> int:
        """Remove the mention links of these chunks (only those naming ``object_id``
        when given) for good; return how many."""
        ...

    def purge(self, project: str) -> int:
        """Remove soft-deleted rows for good, with their mentions and dangling edges."""
        ...


class GraphReads(Protocol):
    """Reading live graph rows: by id or reference, page by page, and by traversal."""

    def resolve(self, project: str, refs: Sequence[ObjectRef]) -> dict[ObjectRef, Endpoint]:
        """Resolve natural references to live objects (missing refs are absent)."""
        ...

    def endpoints(self, project: str, ids: Sequence[str]) -> dict[str, Endpoint]:
        """Live objects by id, as endpoints."""
        ...

    def get_objects(
        self, project: str, ids: Sequence[str], *, trace: Trace | None = None
    ) -> list[GraphObject]:
        """Live objects by id, in the order asked (missing ids skipped)."""
        ...

    def get_relationships(
        self, project: str, ids: Sequence[str], *, trace: Trace | None = None
    ) -> list[Relationship]:
        """Live relationships by id, in the order asked."""
        ...

    def get_chunks(
        self, project: str, ids: Sequence[str], *, trace: Trace | None = None
    ) -> list[Chunk]:
        """Live chunks by id, in the order asked."""
        ...

    def get_sources(
        self, project: str, ids: Sequence[str], *, trace: Trace | None = None
    ) -> list[Source]:
        """Live sources by id, in the order asked."""
        ...

    def list_rows(
        self,
        project: str,
        kind: RowKind,
        *,
        limit: int = 100,
        cursor: str | None = None,
        filters: Filters | None = None,
    ) -> Page:
        """One page of live rows ordered by insertion; ``cursor`` continues a listing."""
        ...

    def counts(self, project: str) -> dict[str, int]:
        """Live rows per kind (objects, relationships, chunks, sources, mentions)."""
        ...

    def iter_rows(
        self, project: str, kind: Literal["object", "relationship", "chunk", "source", "mention"]
    ) -> Iterator[Any]:
        """Stream every live row of a kind (used by export and migration)."""
        ...

    def relationships_touching(self, project: str, object_ids: Sequence[str]) -> list[Relationship]:
        """Live relationships with either endpoint in ``object_ids``."""
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
        trace: Trace | None = None,
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
        trace: Trace | None = None,
    ) -> list[tuple[str, str, str, float]]:
        """(relationship id, source id, target id, weight) of live edges touching the ids."""
        ...

    def typed_edges(
        self,
        project: str,
        object_ids: Sequence[str],
        *,
        limit: int,
        among: bool = False,
        as_of: datetime | None = None,
        trace: Trace | None = None,
    ) -> list[tuple[str, str, str, str]]:
        """(relationship id, source id, target id, type) of live edges touching the ids:
        at most ``limit`` edges out of and ``limit`` edges into each object, oldest first,
        so a hub costs no more than any other object. Set-based: a few statements
        whatever the number of ids, never one per object.

        Edges come per object in the order asked, out before in, oldest first, each edge
        once. With ``among``, only the edges whose two ends are both among the ids (the
        same list with the others left out: the cap still counts every edge)."""
        ...

    def edge_table(self, project: str) -> EdgeTable:
        """Every live relationship of the project as a typed edge (validity bounds
        included, not applied), in insertion order, and every live object's type: the
        whole graph in a few paged statements, for an adjacency held in memory
        (``search/path_graph.py``)."""
        ...

    def mention_pairs(self, project: str) -> list[tuple[str, str]]:
        """(object id, live chunk id) of each mention link naming both, in insertion order."""

    def chunk_ids_of(self, project: str, source_ids: Sequence[str]) -> list[str]:
        """Ids of the live chunks of these sources, in insertion order."""
        ...

    def mentions(
        self,
        project: str,
        *,
        source_ids: Sequence[str] = (),
        chunk_ids: Sequence[str] = (),
        object_ids: Sequence[str] = (),
        relationship_ids: Sequence[str] = (),
        trace: Trace | None = None,
    ) -> list[Mention]:
        """Mention links matching any of the given ids."""
        ...


class EmbeddingQueue(Protocol):
    """The embedding lifecycle of embeddable rows: texts, claims, vectors, failures."""

    def set_texts(self, project: str, kind: Kind, updates: Sequence[TextUpdate]) -> int:
        """Store recomputed texts; rows whose hash changed become pending. Return changed."""
        ...

    def iter_text_rows(self, project: str, kind: Kind) -> Iterator[list[Any]]:
        """Batches of live rows with what text builders need, to refresh texts."""
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

    def set_skipped(self, project: str, kind: Kind, ids: Sequence[str], *, skipped: bool) -> int:
        """Pending or failed ``ids`` → skipped, or skipped ``ids`` → pending; return count."""

    def next_retry_at(self, kind: Kind, *, project: str | None) -> float | None:
        """When the earliest failed row becomes due for another attempt."""
        ...

    def embedding_counts(self, project: str | None) -> list[EmbeddingCounts]:
        """Counts by status per project and kind."""
        ...

    def not_embedded(self, project: str) -> int:
        """Live rows of the project without a vector (pending, failed or dead), of
        every kind: cheap when there are few (a search's warning reads it)."""
        ...

    def embedding_latency(self) -> tuple[int, float]:
        """(texts embedded, total milliseconds) recorded by :meth:`complete`."""
        ...


class SearchIndex(Protocol):
    """Search primitives over embedded and indexed rows, each a ranked ``(id, score)``
    list with higher scores better, plus the upkeep of persistent vector indexes."""

    # Whether one search's vector legs should run side by side. True where each leg is
    # a query to a database server (on a connection of its own, so the server works on
    # them at once); False for an in-process scan, which is bound by memory bandwidth
    # and the GIL, so that running two at once only adds contention on a small machine.
    parallel_vector_legs: bool

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
        trace: Trace | None = None,
    ) -> list[tuple[str, float]]:
        """Top-``limit`` rows by BM25 over their text; any query string is safe."""
        ...

    def objects_named(
        self,
        project: str,
        name: str,
        *,
        limit: int,
        filters: Filters | None = None,
        trace: Trace | None = None,
    ) -> list[tuple[str, float]]:
        """Live objects whose key equals ``name`` ignoring case (ASCII case on SQLite),
        filters applied, ordered by type then id; each with score 1.0."""
        ...

    def objects_named_many(
        self,
        project: str,
        names: Sequence[str],
        *,
        limit: int,
        trace: Trace | None = None,
    ) -> dict[str, list[str]]:
        """:meth:`objects_named` for many names in one call: each given name that some
        live object's key equals (ignoring case as there) → at most ``limit`` object
        ids, ordered by type then id. Names nothing matches are left out."""
        ...

    def named_objects(
        self, project: str, names: Sequence[str], *, trace: Trace | None = None
    ) -> dict[str, list[tuple[str, str, str]]]:
        """Every live object whose key equals a given name ignoring case (as
        :meth:`objects_named`), unfiltered and unlimited, as (type, id, key as stored)
        ordered by type then id, per name; names nothing matches are left out. A search
        looks all its names up in this one call (the name leg and the anchored leg's
        span linking)."""
        ...

    def object_types(self, project: str, *, trace: Trace | None = None) -> list[str]:
        """Distinct types of the project's live objects."""
        ...

    def vectors(
        self, project: str, kind: Kind, ids: Sequence[str], *, trace: Trace | None = None
    ) -> dict[str, npt.NDArray[np.float32]]:
        """Stored vectors of the given rows (for MMR)."""
        ...

    def build_indexes(self) -> list[str]:
        """Build persistent vector indexes that are due (after bulk loads and embedding
        runs); return the kinds indexed now. Stores with in-memory indexes return []."""
        ...


class TaskQueue(Protocol):
    """Generic per-row tasks of named jobs (extraction, summaries…), keyed by
    (project, job, row id), with the embedding queue's rules: claim under a lease,
    work outside any transaction, complete or fail; exponential backoff, then
    ``dead`` after ``max_attempts``. A task whose ``input_hash`` is unchanged is
    never run again; concurrent claimers never get the same task."""

    def enqueue_tasks(self, project: str, job: str, items: Sequence[TaskIn]) -> int:
        """Queue tasks; an unchanged ``input_hash`` keeps the task as it is (done stays
        done), a new one makes it pending with attempts reset. Return tasks made pending."""
        ...

    def claim_tasks(
        self,
        job: str,
        *,
        project: str | None,
        limit: int,
        now: float,
        lease_seconds: float = 300.0,
        row_ids: Sequence[str] | None = None,
    ) -> list[Task]:
        """Claim up to ``limit`` due tasks (pending, failed past backoff, or running
        with an expired lease) in queueing order, only those of ``row_ids`` when given;
        they become ``running``."""
        ...

    def complete_tasks(
        self,
        job: str,
        tasks: Sequence[Task],
        *,
        results: Sequence[dict[str, Any] | None] | None = None,
    ) -> int:
        """Mark claimed tasks done, each with its result (``results`` runs parallel to
        ``tasks``; None: no results), unless re-queued with another input since the
        claim, which stay pending; return how many are done."""
        ...

    def fail_tasks(
        self,
        job: str,
        tasks: Sequence[Task],
        error: str,
        *,
        now: float,
        max_attempts: int,
        backoff_seconds: float,
    ) -> None:
        """Record a failed attempt and the whole error; past ``max_attempts``, dead."""
        ...

    def requeue_tasks(self, job: str, *, project: str | None, statuses: Sequence[str]) -> int:
        """Make tasks in ``statuses`` pending with attempts reset; return count."""
        ...

    def release_tasks(self, job: str, tasks: Sequence[Task]) -> int:
        """Give claims back unfinished: tasks still ``running`` with the claimed input
        become claimable at once (``failed`` if they had failed before, else
        ``pending``), attempts unchanged; return how many."""
        ...

    def list_tasks(
        self, job: str, *, project: str | None, statuses: Sequence[str] = (), limit: int = 100
    ) -> list[TaskState]:
        """Up to ``limit`` tasks in queueing order, of ``statuses`` (all when empty)."""
        ...

    def get_tasks(self, project: str, job: str, row_ids: Sequence[str]) -> list[TaskState]:
        """The tasks of these rows that exist, in the order of ``row_ids``."""
        ...

    def task_counts(self, job: str, *, project: str | None) -> dict[str, int]:
        """Tasks per status, every status present (see ``TASK_STATUSES``)."""
        ...

    def next_task_retry_at(self, job: str, *, project: str | None) -> float | None:
        """When the next unfinished task becomes claimable (None: none left)."""
        ...

    def delete_tasks(self, project: str, job: str, row_ids: Sequence[str]) -> int:
        """Forget the tasks of these rows; return how many were removed."""
        ...


class Store(
    Lifecycle,
    GraphWrites,
    GraphReads,
    EmbeddingQueue,
    SearchIndex,
    KeyStore,
    TaskQueue,
    Cache,
    CommunityStore,
    UsageLedger,
    Protocol,
):
    """Everything a backend implements: the union of the capability protocols."""
