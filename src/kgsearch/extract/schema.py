"""What an extractor returns for one chunk: entities and relationships with
descriptions, what the quality filter rejected and why, and how the answer was made.

These are the records kept per chunk (``kgsearch extract show CHUNK``) and the input
of the graph build (``lifecycle/extraction.py``). :class:`ExtractedGraph`'s JSON schema
is what an LLM with structured output is asked to fill.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator
from pydantic.json_schema import SkipJsonSchema

from kgsearch.extract.dates import normalise_date

__all__ = [
    "ChunkText",
    "ExtractedEntity",
    "ExtractedGraph",
    "ExtractedRelation",
    "ExtractionResult",
    "Extractor",
    "Rejection",
    "TokenEstimator",
]


class ExtractedEntity(BaseModel):
    """An entity the extractor found: its name as written, a type and a description."""

    model_config = ConfigDict(extra="ignore")

    name: str
    type: str = "entity"
    description: str = ""


class ExtractedRelation(BaseModel):
    """A relationship between two extracted entities (by name).

    ``relation`` is a short label ("directed", "implements") where the extractor gives
    one; ``description`` is the sentence that is embedded and searched. ``valid_from``
    and ``valid_to`` say when the fact held, as ISO dates ("2019", "2019-03",
    "2019-03-04"), only when the document dates it.
    """

    model_config = ConfigDict(extra="ignore")

    source: str
    target: str
    relation: str = ""
    description: str = ""
    keywords: list[str] = Field(default_factory=list)
    strength: float | None = None
    # Normalised on the way in (kgsearch.extract.dates): an unreadable date is dropped,
    # never an error; left out of dumps when unset, so undated records do not change.
    valid_from: str | None = Field(default=None, exclude_if=lambda value: value is None)
    valid_to: str | None = Field(default=None, exclude_if=lambda value: value is None)
    # The supporting sentence where an extractor keeps it apart from a shorter
    # description (the offline one does). Not in the JSON schema an LLM fills (this
    # docstring is the schema's description, so the note lives here), and left out of
    # dumps when empty, so prompts and stored LLM extractions do not change.
    evidence: SkipJsonSchema[str] = Field(default="", exclude_if=lambda value: not value)
    # Which end holds one value at a time ("source": a schema's single-valued relation;
    # "target": "X, mayor of Y" offline), so a later fact closes an earlier one
    # (kgsearch.writes.validity). Set by the filter or the extractor, never by a reply.
    one_value_per: SkipJsonSchema[Literal["source", "target"] | None] = Field(
        default=None, exclude_if=lambda value: value is None
    )

    @field_validator("valid_from", "valid_to", mode="before")
    @classmethod
    def _date(cls, value: Any, info: ValidationInfo) -> str | None:
        return normalise_date(value, end=info.field_name == "valid_to")


class ExtractedGraph(BaseModel):
    """Entities and relationships from one chunk."""

    model_config = ConfigDict(extra="ignore")

    entities: list[ExtractedEntity] = Field(default_factory=list)
    relationships: list[ExtractedRelation] = Field(default_factory=list)


class Rejection(BaseModel):
    """An extracted item the parser or the quality filter did not keep.

    Attributes:
        kind: ``entity``, ``relationship`` or ``record`` (an unparseable piece of reply).
        reason: A stable code: ``short_description``, ``trivial_description``,
            ``self_loop``, ``empty_name``, ``long_name``, ``not_in_text``,
            ``unknown_entity``, ``over_cap``, ``malformed``…
        item: The item as the extractor gave it (or the raw text of a malformed record).
    """

    kind: str
    reason: str
    item: dict[str, Any] | str


class ExtractionResult(BaseModel):
    """Everything one extraction of one chunk produced.

    Attributes:
        chunk_id: The chunk extracted.
        graph: What was kept after parsing and the quality filter.
        rejected: What was dropped, each with its reason.
        extractor: ``spacy``, ``llm`` or ``openie`` (imported).
        model: The model that answered (``provider:model``), or the spaCy pipeline.
        prompt_id: The prompt used (``extract/<domain>``), empty for spaCy.
        prompt_version: The prompt's version.
        prompt_tokens: Tokens sent (0 when cached or without an LLM).
        completion_tokens: Tokens received.
        calls: Model calls made (0 when every reply came from the cache).
        cost_usd: Estimated cost of the calls made (None: no price known; 0 offline).
        seconds: Wall time of this chunk's extraction.
        error: Why the chunk failed (the raw reply is in ``raw``); None on success.
        raw: The model's raw replies, kept when parsing failed or recording is on.
        signals: Kept items the quality filter doubts, each with its reason (an
            entity the chunk does not spell: ``not_in_text``) and a ``confidence``
            in its item; rejected only under strict grounding.
    """

    chunk_id: str
    graph: ExtractedGraph = Field(default_factory=ExtractedGraph)
    rejected: list[Rejection] = Field(default_factory=list)
    extractor: str = ""
    model: str = ""
    prompt_id: str = ""
    prompt_version: str = ""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    calls: int = 0
    cost_usd: float | None = None
    seconds: float = 0.0
    error: str | None = None
    raw: list[str] = Field(default_factory=list)
    signals: list[Rejection] = Field(default_factory=list)


@dataclass(frozen=True)
class ChunkText:
    """A chunk handed to an extractor: its id and text."""

    id: str
    text: str


@runtime_checkable
class TokenEstimator(Protocol):
    """An extractor that can forecast what extracting texts would take (dry runs)."""

    def estimate(self, texts: Sequence[str]) -> tuple[int, int, float | None]:
        """(prompt tokens, completion tokens, US dollars or None) for ``texts``."""
        ...


@runtime_checkable
class Extractor(Protocol):
    """Turns chunks of text into extraction results, one per chunk, in order.

    A chunk whose extraction fails gets a result with ``error`` set (and the raw
    reply kept) instead of raising; an exception means the whole batch failed
    (e.g. the provider is unreachable) and every chunk in it is retried later.
    """

    @property
    def name(self) -> str:
        """``spacy``, ``llm``, …"""
        ...

    @property
    def version(self) -> str:
        """Changes whenever the same input could give another output (model, prompt
        version, settings); part of each chunk's task input hash."""
        ...

    def extract(self, chunks: Sequence[ChunkText]) -> list[ExtractionResult]:
        """Extract every chunk; one result per chunk, in input order."""
        ...
