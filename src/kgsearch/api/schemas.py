"""REST request and response bodies: the ``model.py`` types plus the REST-only limits.

Bodies extend the library's models only with what the wire needs: an optional
``project`` (which must be the caller's project), the 800-character query limit of
the search routes, bulk wrappers and patches. Every body rejects unknown fields.
"""

from __future__ import annotations

from datetime import datetime
from functools import cache
from typing import Annotated, Any, Generic, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from kgsearch.api.limits import MAX_BULK_ITEMS, MAX_ID_CHARS, MAX_QUERY_CHARS
from kgsearch.model import (
    Chunk,
    ChunkIn,
    GraphObject,
    Instant,
    ObjectIn,
    Relationship,
    RelationshipIn,
    Source,
    SourceIn,
    check_json,
)
from kgsearch.reports import ExtractionReport, IngestReport
from kgsearch.search.request import SearchRequest

__all__ = [
    "AskRequest",
    "BackfillJob",
    "BackfillRequest",
    "Bulk",
    "ChunkCreate",
    "ChunkPage",
    "ContextRequest",
    "Deleted",
    "DocumentIn",
    "ErrorBody",
    "ExtractRun",
    "Id",
    "IdsBody",
    "IngestRequest",
    "Items",
    "JobProgress",
    "JobSnapshot",
    "ObjectCreate",
    "ObjectPage",
    "ObjectPatch",
    "PreviewRequest",
    "RelationshipCreate",
    "RelationshipPage",
    "RelationshipPatch",
    "RetryRequest",
    "SourceCreate",
    "SourcePage",
    "TextIn",
    "UnifiedSearch",
    "plain",
]

Id = Annotated[str, Field(min_length=1, max_length=MAX_ID_CHARS)]
_PROJECT = Field(
    default=None,
    min_length=1,
    max_length=200,
    description="Optional; when given it must be the project the request is bound to",
)
M = TypeVar("M", bound=BaseModel)
T = TypeVar("T")


class _Body(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


def plain(body: BaseModel, model: type[M]) -> M:
    """The library model behind a REST body (drops ``project`` and REST-only fields)."""
    data = body.model_dump(exclude_unset=True, by_alias=True, exclude={"project"})
    return model.model_validate({k: v for k, v in data.items() if k in _names(model)})


@cache  # a model's fields are fixed once it is built; every REST search asked (~10 µs)
def _names(model: type[BaseModel]) -> frozenset[str]:
    names = set(model.model_fields)
    names |= {f.alias for f in model.model_fields.values() if f.alias}
    return frozenset(names)


class ErrorDetail(_Body):
    """The error itself."""

    code: str = Field(description="Stable machine-readable code, e.g. not_found")
    message: str = Field(description="What went wrong and what to do next")
    details: dict[str, Any] = Field(default_factory=dict)


class ErrorBody(_Body):
    """The one error shape of every route."""

    error: ErrorDetail


class ObjectCreate(ObjectIn):
    """An object to create or update (by type + key)."""

    project: str | None = _PROJECT


class RelationshipCreate(RelationshipIn):
    """A relationship to create or update; endpoints are ids or ``{type, key}``."""

    project: str | None = _PROJECT


class SourceCreate(SourceIn):
    """A source document to create or update."""

    project: str | None = _PROJECT


class ChunkCreate(ChunkIn):
    """A chunk of text to create or update."""

    project: str | None = _PROJECT


class Bulk(_Body, Generic[T]):
    """Many items in one request (all or nothing)."""

    items: list[T] = Field(min_length=1, max_length=MAX_BULK_ITEMS)
    project: str | None = _PROJECT


class Items(_Body, Generic[T]):
    """The rows a bulk request wrote, in request order."""

    items: list[T]


class IdsBody(_Body):
    """Ids to delete."""

    ids: list[Id] = Field(min_length=1, max_length=MAX_BULK_ITEMS)
    project: str | None = _PROJECT


class Deleted(_Body):
    """How many rows a delete removed."""

    deleted: int


class ObjectPatch(_Body):
    """Changes to an object: ``tags``/``labels`` replace, ``properties`` merge
    (a null value removes that property). Type and key cannot change."""

    tags: list[str] | None = None
    labels: list[str] | None = None
    properties: dict[str, Any] | None = None
    project: str | None = _PROJECT

    @field_validator("properties")
    @classmethod
    def _json(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        return value if value is None else dict(check_json(value, "properties"))


class RelationshipPatch(_Body):
    """Changes to a relationship; ``properties`` merge, the rest replace.
    Type and endpoints cannot change."""

    label: str | None = None
    properties: dict[str, Any] | None = None
    weight: float | None = Field(default=None, allow_inf_nan=False)
    valid_from: Instant | None = None
    valid_to: Instant | None = None
    description: str | None = None
    source_chunks: list[str] | None = None
    project: str | None = _PROJECT

    @field_validator("properties")
    @classmethod
    def _json(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        return value if value is None else dict(check_json(value, "properties"))


class TextIn(_Body):
    """Free text to store as chunks under one source."""

    text: str = Field(min_length=1, max_length=500_000)
    source_id: Id | None = None
    title: str | None = Field(default=None, max_length=1000)
    metadata: dict[str, Any] | None = None
    max_chars: int = Field(default=1000, ge=100, le=100_000)
    project: str | None = _PROJECT

    @field_validator("metadata")
    @classmethod
    def _json(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        return value if value is None else dict(check_json(value, "metadata"))


class UnifiedSearch(SearchRequest):
    """Seed 000's unified search request (``includeDebug`` needs the debug scope)."""

    query: str = Field(min_length=1, max_length=MAX_QUERY_CHARS)
    project: str | None = _PROJECT


class ContextRequest(UnifiedSearch):
    """A search whose hits are formatted as RAG prompt context."""

    max_tokens: int = Field(default=1000, ge=1, le=100_000, alias="maxTokens")
    style: Literal["lines", "sections"] = Field(
        default="lines",
        description="lines (best first) or sections (entities, relationships, sources; cited)",
    )


class AskRequest(UnifiedSearch):
    """A question answered from the graph by the chat model, with citations."""

    max_tokens: int = Field(default=1500, ge=1, le=100_000, alias="maxTokens")
    llm: bool = Field(
        default=True,
        description="false: no model; quote the passages' best sentences, each cited "
        "(a graph without documents: the context's top facts)",
    )
    stream: bool = Field(
        default=False, description="Server-sent events: text pieces, then the answer"
    )


class BackfillRequest(_Body):
    """Start embedding the project's pending and failed rows in the background."""

    batch_size: int = Field(default=64, ge=1, le=1000)
    delay_ms: int = Field(default=0, ge=0, le=60_000, description="Pause between batches")
    limit: int | None = Field(default=None, ge=1, le=10_000_000, description="Stop after ~N rows")
    kinds: list[Literal["object", "relationship", "chunk", "community"]] | None = Field(
        default=None, min_length=1, max_length=4
    )
    dry_run: bool = Field(default=False, description="Only count what would be embedded")
    project: str | None = _PROJECT


class BackfillJob(_Body):
    """A background backfill and its progress so far."""

    id: str
    project: str
    state: Literal["running", "done", "failed", "cancelled"]
    kinds: list[str]
    total: int = Field(description="Rows due when the job started")
    processed: int
    embedded: int
    failed: int
    dead: int
    batches: int
    errors: list[str]
    started_at: datetime
    finished_at: datetime | None = None
    error: dict[str, Any] | None = None


class RetryRequest(_Body):
    """Re-queue failed rows (and dead ones with ``dead``)."""

    dead: bool = False
    project: str | None = _PROJECT


class ObjectPage(_Body):
    """A page of objects; pass ``next_cursor`` back as ``cursor`` for the next."""

    items: list[GraphObject]
    next_cursor: str | None = None


class RelationshipPage(_Body):
    """A page of relationships."""

    items: list[Relationship]
    next_cursor: str | None = None


class ChunkPage(_Body):
    """A page of chunks."""

    items: list[Chunk]
    next_cursor: str | None = None


class SourcePage(_Body):
    """A page of sources."""

    items: list[Source]
    next_cursor: str | None = None


# text → graph ---------------------------------------------------------------------
_EXTRACTOR = Field(
    default=None,
    min_length=1,
    max_length=50,
    description="spacy (offline), llm or none (store only); default: the server's setting",
)
_DOMAIN = Field(
    default=None, min_length=1, max_length=100, description="Prompt domain of the LLM extractor"
)


def _not_blank(text: str) -> str:
    if not text.strip():
        raise ValueError("text must not be blank")
    return text


class DocumentIn(_Body):
    """One document given as text (the server never reads files for a client)."""

    text: str = Field(min_length=1, description="The document's text")
    title: str | None = Field(default=None, max_length=1000)

    @field_validator("text")
    @classmethod
    def _text_not_blank(cls, text: str) -> str:
        return _not_blank(text)


class IngestRequest(_Body):
    """Documents to ingest: one ``text`` (with an optional ``title``) or ``documents``."""

    text: str | None = Field(default=None, min_length=1, description="One document's text")
    title: str | None = Field(default=None, max_length=1000, description="Title of ``text``")
    documents: list[DocumentIn] | None = Field(default=None, min_length=1, max_length=1000)
    extractor: str | None = _EXTRACTOR
    domain: str | None = _DOMAIN
    chunk_chars: int | None = Field(
        default=None, ge=100, le=100_000, description="Largest chunk in characters"
    )
    project: str | None = _PROJECT

    @field_validator("text")
    @classmethod
    def _text_not_blank(cls, text: str | None) -> str | None:
        return None if text is None else _not_blank(text)

    @model_validator(mode="after")
    def _one_kind(self) -> IngestRequest:
        if (self.text is None) == (self.documents is None):
            raise ValueError("give either text or documents")
        if self.documents is not None and self.title is not None:
            raise ValueError("title goes with text; give each document its own title")
        return self


class ExtractRun(_Body):
    """Extract the project's due chunks (pending, failed past backoff) in the background."""

    batch_size: int = Field(default=16, ge=1, le=1000, description="Chunks per extractor call")
    limit: int | None = Field(default=None, ge=1, le=10_000_000, description="Stop after ~N")
    project: str | None = _PROJECT


class PreviewRequest(_Body):
    """Text to run the extractor on; nothing is written."""

    text: str = Field(min_length=1, max_length=100_000)
    extractor: str | None = _EXTRACTOR
    domain: str | None = _DOMAIN
    graph_schema: dict[str, Any] | None = Field(
        default=None,
        alias="schema",
        description="A graph schema to try instead of the server's [extract] schema "
        "({entity_types, relation_types} or a Text2KGBench ontology; llm extractor only)",
    )
    project: str | None = _PROJECT


class JobProgress(_Body):
    """What a job has done so far (extraction counters come after each batch)."""

    documents_total: int = Field(default=0, description="Documents given (ingest)")
    documents: int = Field(default=0, description="Documents stored so far")
    chunks: int = Field(default=0, description="Chunks extracted so far")
    entities: int = 0
    relationships: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float | None = None


class JobSnapshot(_Body):
    """A background ingest or extraction job; ``result`` is set once it is done."""

    id: str
    project: str
    kind: Literal["ingest", "extract"]
    state: Literal["running", "done", "failed", "cancelled"]
    progress: JobProgress
    result: IngestReport | ExtractionReport | None = None
    error: dict[str, Any] | None = None
    started_at: datetime
    finished_at: datetime | None = None
