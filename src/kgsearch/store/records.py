"""The plain records a store exchanges with its callers.

Rows ready to write (:class:`ObjectRow`, :class:`RelationshipRow`), what reads hand
back besides the public model types (:class:`Endpoint`, :class:`Neighbor`), the
embedding queue's claims and results, and the generic task queue's items and claims.
They carry no behaviour beyond a derived field or two and know nothing of SQL; the
capability protocols in :mod:`kgsearch.store.base` are written in terms of them.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, NamedTuple

import numpy as np
import numpy.typing as npt

from kgsearch.model import Kind, display_name

__all__ = [
    "TASK_STATUSES",
    "Claim",
    "Direction",
    "EdgeRow",
    "EdgeTable",
    "EmbeddableRow",
    "EmbeddingCounts",
    "EmbeddingResult",
    "Endpoint",
    "Neighbor",
    "ObjectRow",
    "RelationshipRow",
    "RowKind",
    "StoreInfo",
    "Task",
    "TaskIn",
    "TaskState",
    "TextUpdate",
]

Direction = Literal["out", "in", "both"]
RowKind = Literal["object", "relationship", "chunk", "source"]

# Every state of a task, in the order of its life (``task_counts`` reports them so).
TASK_STATUSES = ("pending", "running", "done", "failed", "dead")


@dataclass(frozen=True)
class StoreInfo:
    """What a store was built with, read from its metadata table."""

    url: str
    schema_version: int
    migrations: tuple[str, ...]
    embedding_model: str | None
    dims: int | None
    distance: str = "cosine"


@dataclass(frozen=True, kw_only=True)
class EmbeddableRow:
    """What every embeddable row carries to the store besides its own fields: the text
    to embed, its hash and the text rules' version, and its times (kept when given, as
    a migration carries them over; the store's clock otherwise)."""

    text: str
    text_hash: str
    text_version: int
    created_at: datetime | None = None
    updated_at: datetime | None = None


@dataclass(frozen=True)
class ObjectRow(EmbeddableRow):
    """An object ready to write: input fields plus the text to embed and its hash."""

    id: str
    type: str
    key: str
    tags: Sequence[str]
    properties: dict[str, Any]
    labels: Sequence[str]


@dataclass(frozen=True)
class RelationshipRow(EmbeddableRow):
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


class EdgeRow(NamedTuple):
    """One live relationship as a typed edge (``GraphReads.edge_table``)."""

    id: str
    source_id: str
    target_id: str
    type: str
    valid_from: datetime | None = None
    valid_to: datetime | None = None


@dataclass(frozen=True)
class EdgeTable:
    """A project's whole graph as plain rows: every live relationship as an edge, in
    insertion order, and the type of every live object by id."""

    edges: list[EdgeRow]
    object_types: dict[str, str]


@dataclass(frozen=True)
class TaskIn:
    """One unit of work to queue for a job, keyed by the row it is about.

    ``input_hash`` identifies the input the work depends on (e.g. a digest of a
    chunk's text, the prompt version and the model): queueing the same hash again
    never re-runs a task, and another hash makes it pending again.
    """

    row_id: str
    input_hash: str
    payload: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Task:
    """A task claimed by a runner: what to work on and how often it failed before.

    Hand it back to ``complete_tasks`` or ``fail_tasks``; both act only while the
    task still holds the claimed ``input_hash``.
    """

    project: str
    row_id: str
    input_hash: str
    attempts: int
    payload: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class TaskState:
    """A task as stored, for status reports and retries: its state, the last error in
    full, when it may run again, and the result its runner recorded."""

    project: str
    row_id: str
    input_hash: str
    status: str
    attempts: int
    last_error: str | None
    next_attempt_at: float
    claimed_until: float
    payload: dict[str, Any] = field(default_factory=dict)
    result: dict[str, Any] | None = None
