"""Public values of the text → graph path: what an ingest did, what an extraction run
did, the extraction lifecycle's status, and one chunk's extraction record.

They sit beside :mod:`kgsearch.model` (which keeps the graph's own values) and are
exported from :mod:`kgsearch`.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "DeleteReport",
    "ExtractionRecord",
    "ExtractionReport",
    "ExtractionStatus",
    "IngestProblem",
    "IngestReport",
    "MergeReport",
    "SummaryReport",
]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ExtractionReport(_Frozen):
    """What one extraction run did.

    Attributes:
        processed: Chunks claimed and attempted.
        extracted: Chunks extracted and built into the graph.
        failed: Failed attempts recorded (unparseable replies, provider errors).
        dead: Chunks that reached the attempt limit in this run.
        entities: Entities kept, summed over chunks.
        relationships: Relationships kept, summed over chunks.
        rejected: Items dropped, by reason.
        prompt_tokens: Tokens sent to the model.
        completion_tokens: Tokens the model returned.
        calls: Model calls made (cached replies are not calls).
        cost_usd: Estimated cost (None when the model has no known price).
        seconds: Wall-clock duration.
        errors: The first distinct error messages.
        left: Chunks of the run's scope still not extracted when it ended (claimed
            by another run or one that died, waiting for a retry, or stopped by an
            open breaker); dead chunks are not counted.
    """

    processed: int = 0
    extracted: int = 0
    failed: int = 0
    dead: int = 0
    entities: int = 0
    relationships: int = 0
    rejected: dict[str, int] = Field(default_factory=dict)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    calls: int = 0
    cost_usd: float | None = None
    seconds: float = 0.0
    errors: list[str] = Field(default_factory=list)
    left: int = 0


class IngestProblem(_Frozen):
    """A file (or text) that was not ingested, and why."""

    path: str
    reason: str


class DeleteReport(_Frozen):
    """What deleting documents or chunks did.

    Attributes:
        sources: Sources deleted.
        chunks: Chunks deleted (with their extraction tasks).
        objects_deleted: Extracted objects no remaining chunk supports.
        relationships_deleted: Extracted relationships no remaining chunk supports.
        objects_updated: Objects whose description was derived again from the
            remaining chunks.
        relationships_updated: Relationships derived again (description, keywords,
            weight, source chunks).
        mentions_deleted: Mention links of the deleted chunks.
    """

    sources: int = 0
    chunks: int = 0
    objects_deleted: int = 0
    relationships_deleted: int = 0
    objects_updated: int = 0
    relationships_updated: int = 0
    mentions_deleted: int = 0


class MergeReport(_Frozen):
    """What merging entities (or undoing a merge) did.

    Attributes:
        kept: The kept object's id.
        objects: Objects merged into it (or restored from it).
        relationships: Relationships re-pointed (or restored).
        self_loops: Relationships dropped because both ends became the kept object.
    """

    kept: str
    objects: list[str]
    relationships: int
    self_loops: int = 0


class SummaryReport(_Frozen):
    """What summarising long descriptions with the model did.

    Attributes:
        due: Extracted rows whose descriptions pass the budget with no summary yet.
        summarized: Rows that got one.
        failed: Rows the model failed on (they keep the offline summary).
        calls: Model calls (cached replies included).
        cached: Calls answered from the response cache.
        errors: The first errors, by row id.
    """

    due: int = 0
    summarized: int = 0
    failed: int = 0
    calls: int = 0
    cached: int = 0
    errors: dict[str, str] = Field(default_factory=dict)


class IngestReport(_Frozen):
    """What an ingest did.

    Attributes:
        documents: Documents read and stored (unchanged ones included).
        unchanged: Documents whose text was already stored (nothing written).
        chunks: Chunks of the stored documents.
        queued: Chunks queued for extraction (new or changed).
        removed: Chunks deleted because their document no longer has them.
        problems: Files not ingested, each with its reason (failures).
        skipped: Files of other types met in directories (not failures).
        extraction: The extraction run (None with ``extract=False`` or ``none``).
        summaries: LLM summaries of long descriptions (with ``extract.summaries =
            "llm"`` only).
        dry_run: Nothing was written; ``estimate`` holds the forecast.
        estimate: Chunks, estimated prompt/completion tokens and cost of a dry run.
    """

    documents: int = 0
    unchanged: int = 0
    chunks: int = 0
    queued: int = 0
    removed: int = 0
    problems: list[IngestProblem] = Field(default_factory=list)
    skipped: list[IngestProblem] = Field(default_factory=list)
    extraction: ExtractionReport | None = None
    summaries: SummaryReport | None = None
    dry_run: bool = False
    estimate: dict[str, Any] | None = None

    @property
    def ok(self) -> bool:
        """True when every file given was ingested (skipped ones aside), no chunk
        failed extraction and none was left undone."""
        run = self.extraction
        failed = run is not None and bool(run.dead or run.failed or run.left)
        return not self.problems and not failed


class ExtractionStatus(_Frozen):
    """The extraction lifecycle of a project (or all projects).

    Attributes:
        counts: Chunks per task status (pending, running, done, failed, dead).
        entities: Entities kept over every extracted chunk.
        relationships: Relationships kept.
        rejected: Items dropped, by reason.
        prompt_tokens: Tokens sent, over every recorded extraction.
        completion_tokens: Tokens returned.
        cost_usd: Estimated cost so far (None when no price is known).
        extractors: Chunks per ``extractor model prompt`` that made them.
        failures: The last error of up to ten failed or dead chunks, by chunk id.
    """

    counts: dict[str, int]
    entities: int = 0
    relationships: int = 0
    rejected: dict[str, int] = Field(default_factory=dict)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float | None = None
    extractors: dict[str, int] = Field(default_factory=dict)
    failures: dict[str, str] = Field(default_factory=dict)


class ExtractionRecord(_Frozen):
    """One chunk's extraction task and what its extractor returned.

    Attributes:
        chunk_id: The chunk.
        status: Task status.
        attempts: Failed attempts so far.
        last_error: The last failure in full (with the raw reply when unparseable).
        result: The recorded extraction: entities, relationships, rejected items with
            reasons, extractor, model, prompt id and version, tokens, seconds, and
            what was built into the graph (None until extracted).
    """

    chunk_id: str
    status: str
    attempts: int = 0
    last_error: str | None = None
    result: dict[str, Any] | None = None
