"""Public value types: graph rows, their inputs, embedding state, search hits, lookups
(mentions, neighbourhoods) and the engine's reports (stats, stored text, previews,
embedding status and runs).

All models are frozen pydantic v2 models that reject unknown fields, so the same
classes serve as library return values, REST bodies and MCP tool schemas; their JSON
(``model_dump(mode="json")``) is the wire format of every adapter.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    field_serializer,
    field_validator,
    model_serializer,
)

from kgsearch.json_limits import check_json

__all__ = [
    "MAX_ID_BYTES",
    "Chunk",
    "ChunkIn",
    "EmbedReport",
    "EmbeddingState",
    "EmbeddingStatus",
    "EmbeddingStatusReport",
    "EmbeddingStatusRow",
    "EmbeddingTodo",
    "Filters",
    "GraphObject",
    "Hit",
    "Id",
    "Instant",
    "Kind",
    "LegHit",
    "Mention",
    "MentionIn",
    "Mentioned",
    "NeighborObject",
    "Neighborhood",
    "ObjectIn",
    "ObjectRef",
    "Page",
    "Preview",
    "Relationship",
    "RelationshipIn",
    "Source",
    "SourceIn",
    "SourceMentions",
    "Stats",
    "TextAdded",
    "check_json",
    "display_name",
]

DEFAULT_PROJECT = "default"


def display_name(properties: Mapping[str, Any], key: str | None, id: str) -> str:
    """Return the name an object is shown and embedded under.

    Args:
        properties: The object's properties.
        key: The object's key, if any.
        id: The object's id, the last resort.

    Returns:
        ``properties["name"]`` if it is a string that is not blank, else ``key`` if not
        blank, else ``id`` (names and keys are stripped).
    """
    name = properties.get("name")
    if isinstance(name, str) and name.strip():
        return name.strip()
    if key is not None and key.strip():
        return key.strip()
    return id


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


def _in_range(value: datetime) -> datetime:
    """``value`` in UTC (naive ones are UTC), refused when that leaves years 1-9999."""
    aware = value if value.tzinfo is not None else value.replace(tzinfo=UTC)
    try:
        return aware.astimezone(UTC)
    except OverflowError:
        raise ValueError(
            f"{value.isoformat()} is out of range once converted to UTC (years 1-9999)"
        ) from None


Instant = Annotated[datetime, AfterValidator(_in_range)]
"""An input date-time: converted to UTC, refused when that overflows."""


MAX_ID_BYTES = 1024
"""The longest id, key or type an input may give, in UTF-8 bytes. PostgreSQL's unique
indexes hold at most about 2.7 KB per entry (project, type and key of an object; the ids
of a mention), so a longer value would be refused by one backend and kept by the other."""


def _short(value: str) -> str:
    size = len(value.encode("utf-8", "surrogatepass"))
    if size > MAX_ID_BYTES:
        raise ValueError(f"is {size} bytes long; ids, keys and types are at most {MAX_ID_BYTES}")
    return value


Id = Annotated[str, AfterValidator(_short)]
"""An input id, key or type: at most :data:`MAX_ID_BYTES` bytes."""


class _Input(_Frozen):
    """An input model: non-finite numbers are refused."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)


class Kind(StrEnum):
    """The embeddable row kinds."""

    OBJECT = "object"
    RELATIONSHIP = "relationship"
    CHUNK = "chunk"
    COMMUNITY = "community"  # community reports (kgsearch.communities)

    @property
    def table(self) -> str:
        """The plural table name used by stores."""
        return _KIND_TABLES[self.value]


_KIND_TABLES = {
    "object": "objects",
    "relationship": "relationships",
    "chunk": "chunks",
    "community": "community_reports",
}


class EmbeddingStatus(StrEnum):
    """Lifecycle of one row's embedding (pending → embedded | failed → dead), and
    ``skipped``: an object extraction named once, with no relationship, is found by
    full text, its passage and its name until a second passage or a fact makes it
    pending."""

    PENDING = "pending"
    EMBEDDED = "embedded"
    FAILED = "failed"
    DEAD = "dead"
    SKIPPED = "skipped"


class EmbeddingState(_Frozen):
    """What a row's embedding is and how it got there."""

    status: EmbeddingStatus = EmbeddingStatus.PENDING
    text: str | None = None
    text_hash: str | None = None
    embedded_text: str | None = None
    attempts: int = 0
    last_error: str | None = None
    model: str | None = None
    dims: int | None = None
    text_version: int | None = None
    embedded_at: datetime | None = None


class ObjectRef(_Frozen):
    """A natural reference to an object: its type and key within a project."""

    type: Id = Field(min_length=1)
    key: Id = Field(min_length=1)


def _check_name(value: str, what: str) -> str:
    if not value.strip():
        raise ValueError(f"{what} must not be blank")
    return value


class ObjectIn(_Input):
    """An object (graph node) to create or update; upserted by project + type + key."""

    type: Id
    key: Id
    id: Id | None = None
    tags: list[str] = Field(default_factory=list)
    properties: dict[str, Any] = Field(default_factory=dict)
    labels: list[str] = Field(default_factory=list)

    @field_validator("type", "key")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        return _check_name(value, "type and key")

    @field_validator("properties")
    @classmethod
    def _json(cls, value: dict[str, Any]) -> dict[str, Any]:
        check_json(value, "properties")
        return value


class RelationshipIn(_Input):
    """A relationship (edge) to create; endpoints are ids or ``{type, key}`` references.

    Without an ``id`` the relationship is identified by (type, source, target), so a
    re-import updates it instead of adding a duplicate.
    """

    type: Id
    source: Id | ObjectRef
    target: Id | ObjectRef
    id: Id | None = None
    label: str | None = None
    properties: dict[str, Any] = Field(default_factory=dict)
    weight: float = 1.0
    valid_from: Instant | None = None
    valid_to: Instant | None = None
    description: str | None = None
    source_chunks: list[Id] = Field(default_factory=list)

    @field_validator("type")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        return _check_name(value, "type")

    @field_validator("properties")
    @classmethod
    def _json(cls, value: dict[str, Any]) -> dict[str, Any]:
        check_json(value, "properties")
        return value


class SourceIn(_Input):
    """A document or episode that chunks and facts came from."""

    id: Id
    title: str | None = None
    uri: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)

    @field_validator("metadata")
    @classmethod
    def _json(cls, value: dict[str, Any]) -> dict[str, Any]:
        check_json(value, "metadata")
        return value


class ChunkIn(_Input):
    """A span of source text."""

    id: Id
    text: str
    source_id: Id | None = None
    position: int = 0
    metadata: dict[str, Any] = Field(default_factory=dict)

    @field_validator("metadata")
    @classmethod
    def _json(cls, value: dict[str, Any]) -> dict[str, Any]:
        check_json(value, "metadata")
        return value


class MentionIn(_Input):
    """A source or chunk mentions an object or a relationship."""

    source_id: Id | None = None
    chunk_id: Id | None = None
    object: Id | ObjectRef | None = None
    relationship_id: Id | None = None


class GraphObject(_Frozen):
    """A stored object (graph node)."""

    id: str
    project: str
    type: str
    key: str
    tags: list[str] = Field(default_factory=list)
    properties: dict[str, Any] = Field(default_factory=dict)
    labels: list[str] = Field(default_factory=list)
    created_at: datetime
    updated_at: datetime
    embedding: EmbeddingState = Field(default_factory=EmbeddingState)

    @property
    def name(self) -> str:
        """Display name: ``properties.name`` if a non-empty string, else ``key``, else ``id``."""
        return display_name(self.properties, self.key, self.id)


class Relationship(_Frozen):
    """A stored relationship (graph edge)."""

    id: str
    project: str
    type: str
    source_id: str
    target_id: str
    label: str | None = None
    properties: dict[str, Any] = Field(default_factory=dict)
    weight: float = 1.0
    valid_from: datetime | None = None
    valid_to: datetime | None = None
    description: str | None = None
    source_chunks: list[str] = Field(default_factory=list)
    created_at: datetime
    updated_at: datetime
    embedding: EmbeddingState = Field(default_factory=EmbeddingState)


class Source(_Frozen):
    """A stored source document."""

    id: str
    project: str
    title: str | None = None
    uri: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    created_at: datetime


class Chunk(_Frozen):
    """A stored chunk of source text."""

    id: str
    project: str
    text: str
    source_id: str | None = None
    position: int = 0
    metadata: dict[str, Any] = Field(default_factory=dict)
    created_at: datetime
    updated_at: datetime
    embedding: EmbeddingState = Field(default_factory=EmbeddingState)


class Mention(_Frozen):
    """A stored mention link."""

    project: str
    source_id: str | None = None
    chunk_id: str | None = None
    object_id: str | None = None
    relationship_id: str | None = None


class Page(_Frozen):
    """One page of a listing; pass ``next_cursor`` back to get the next page."""

    items: list[Any]
    next_cursor: str | None = None


class LegHit(_Frozen):
    """Where one search leg placed a hit: 1-based rank and the leg's raw score."""

    leg: str
    rank: int
    score: float


class Hit(_Frozen):
    """A fused search hit before hydration: kind, id, fused score and provenance."""

    kind: Literal["object", "relationship", "chunk"]
    id: str
    score: float
    found_by: list[LegHit] = Field(default_factory=list)


class Filters(_Input):
    """Restrictions applied inside every search leg (never after fusion).

    Attributes:
        object_types: Keep objects of these types (and relationships/chunks are unaffected).
        relationship_types: Keep relationships of these types.
        labels: Keep objects carrying any of these labels.
        properties: Keep rows whose ``properties[name]`` equals the given value.
        as_of: Keep relationships valid at this instant (default: valid now).
        embedded_only: Vector legs always are; lexical legs too when set.
    """

    object_types: list[str] | None = None
    relationship_types: list[str] | None = None
    labels: list[str] | None = None
    properties: dict[str, str | int | float | bool] | None = None
    as_of: Instant | None = None
    embedded_only: bool = False


class Mentioned(_Frozen):
    """What some sources or chunks mention (:meth:`kgsearch.Engine.mentioned_by`)."""

    objects: list[GraphObject]
    relationships: list[Relationship]


class SourceMentions(_Frozen):
    """A source and how many of its mention links name what was asked about."""

    source: Source
    mentions: int


class NeighborObject(_Frozen):
    """An object near the centre of a neighbourhood.

    Attributes:
        id: The object's id.
        depth: Hops from the centre.
        via: The relationship that reached it.
        object: The object itself.
    """

    id: str
    depth: int
    via: str
    object: GraphObject


class Neighborhood(_Frozen):
    """An object's neighbours within some hops (:meth:`kgsearch.Engine.neighborhood`)."""

    id: str
    neighbors: list[NeighborObject]


class TextAdded(_Frozen):
    """What :meth:`kgsearch.Engine.add_text` stored: the source and its chunks."""

    source: Source
    chunks: list[Chunk]


class Stats(_Frozen):
    """Row counts of a project and what the store was built with.

    Attributes:
        project: The project counted.
        counts: Live rows per table (``objects``, ``relationships``, ``chunks``, …).
        store: The store's URL.
        schema_version: The store's schema version.
        embedding_model: The model the store's vectors come from (None before any).
        dims: Their dimensions.
        projects: Every project in the store.
    """

    project: str
    counts: dict[str, int]
    store: str
    schema_version: int
    embedding_model: str | None
    dims: int | None
    projects: list[str]


class Preview(_Frozen):
    """The text that is (or would be) embedded for one row, and the row's status.

    ``graph_aware`` is set for objects only (the other kinds' texts do not depend on
    it) and left out of the JSON otherwise.
    """

    kind: Kind
    id: str
    text: str | None
    graph_aware: bool | None = None
    status: EmbeddingStatus

    @model_serializer(mode="wrap")
    def _omit_graph_aware(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        if self.graph_aware is None:
            del data["graph_aware"]
        return data


class EmbeddingStatusRow(_Frozen):
    """Embedding counts of one project and row kind."""

    project: str
    kind: Kind
    total: int
    pending: int
    embedded: int
    failed: int
    dead: int
    stale: int
    percent_embedded: float
    skipped: int = 0


class EmbeddingStatusReport(_Frozen):
    """How much is embedded: counts by status per project and kind, and overall.

    Attributes:
        model: The store's embedding model (None before the first embedding).
        dims: Its dimensions.
        rows: One row per project and kind.
        stale: Rows embedded from a text that has changed since (pending again).
        skipped: Objects not embedded on their own (named once, no relationship).
        percent_embedded: Share of the rows to embed (all but skipped) that are
            embedded, in percent (100 when none).
        failure_rate: Share of rows failed or dead, 0..1.
        mean_latency_ms_per_text: Mean embedder time per text, None before any.
    """

    model: str | None
    dims: int | None
    rows: list[EmbeddingStatusRow]
    total: int
    embedded: int
    pending: int
    failed: int
    dead: int
    stale: int
    percent_embedded: float
    failure_rate: float
    skipped: int = 0
    mean_latency_ms_per_text: float | None


class EmbeddingTodo(_Frozen):
    """Rows due for embedding (pending or failed) per kind, and their total."""

    by_kind: dict[str, int]
    total: int


class EmbedReport(_Frozen):
    """What one embedding run did.

    Attributes:
        processed: Rows claimed and attempted.
        embedded: Rows whose vector was written.
        failed: Failed attempts recorded (a row may fail more than once per run).
        dead: Rows that reached the attempt limit in this run.
        skipped_changed: Rows embedded but not written because their text changed
            meanwhile (they stay pending for the new text).
        batches: Batches claimed.
        seconds: Wall-clock duration (rounded to the millisecond in JSON).
        errors: The first distinct error messages (at most ten).
    """

    processed: int = 0
    embedded: int = 0
    failed: int = 0
    dead: int = 0
    skipped_changed: int = 0
    batches: int = 0
    seconds: float = 0.0
    errors: list[str] = Field(default_factory=list)

    @field_serializer("seconds")
    def _milliseconds(self, seconds: float) -> float:
        return round(seconds, 3)
