"""Text → graph routes: ingest documents and run extraction as pollable background
jobs, and inspect, retry and preview extraction.

Documents arrive as text in the body only: a client never makes the server read a
path on its own disk. Ingest and extraction runs take from seconds to hours (an LLM
per chunk), so they answer 202 with a job; ``GET /api/jobs/{id}`` reports progress
and, once done, the engine's report.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Path, Request, Response, status

from kgsearch.api.auth import Principal, current_engine, require
from kgsearch.api.jobs import Job, JobRegistry
from kgsearch.api.lanes import on_llm_lane
from kgsearch.api.limits import MAX_ID_CHARS
from kgsearch.api.schemas import (
    ExtractRun,
    IngestRequest,
    JobSnapshot,
    PreviewRequest,
    RetryRequest,
)
from kgsearch.api.spend import maybe_charged
from kgsearch.engine import Engine
from kgsearch.engine.extraction import IngestProgress
from kgsearch.errors import NotFound
from kgsearch.extract.schema import ExtractionResult
from kgsearch.io.documents import document_from_text
from kgsearch.lifecycle.budget import Budget, extractor_spends
from kgsearch.lifecycle.extraction import Totals
from kgsearch.reports import (
    DeleteReport,
    ExtractionRecord,
    ExtractionReport,
    ExtractionStatus,
    IngestReport,
)

__all__ = ["JobsDep", "accepted", "check_extractor", "job_progress", "router"]

router = APIRouter(prefix="/api", tags=["extraction"])

EngineDep = Annotated[Engine, Depends(current_engine)]
Reader = Annotated[Principal, Depends(require("read"))]
Writer = Annotated[Principal, Depends(require("write"))]
JobId = Annotated[str, Path(min_length=1, max_length=64)]
ChunkId = Annotated[str, Path(min_length=1, max_length=MAX_ID_CHARS)]


def _jobs(request: Request) -> JobRegistry:
    jobs: JobRegistry = request.app.state.extraction_jobs
    return jobs


JobsDep = Annotated[JobRegistry, Depends(_jobs)]


def job_progress(job: Job) -> IngestProgress:
    """The engine's progress callback, feeding the job's counters (and its cancel)."""

    def progress(kind: str, value: object) -> None:
        if kind == "document":
            job.update(documents=job.progress.get("documents", 0) + 1)
        elif isinstance(value, Totals):
            job.update(
                chunks=value.chunks,
                entities=value.entities,
                relationships=value.relationships,
                prompt_tokens=value.prompt_tokens,
                completion_tokens=value.completion_tokens,
                cost_usd=value.cost_usd,
            )

    return progress


def check_extractor(engine: Engine, name: str | None, domain: str | None) -> None:
    """Refuse an unknown extractor or domain now (400), not later in the job."""
    if (name or engine.extract_settings.extractor) != "none":
        engine.extractor(name, domain)


def accepted(snapshot: dict[str, Any], response: Response) -> JobSnapshot:
    response.headers["Location"] = f"/api/jobs/{snapshot['id']}"
    return JobSnapshot.model_validate(snapshot)


@router.post("/documents", status_code=status.HTTP_202_ACCEPTED)
def ingest_documents(
    body: IngestRequest,
    who: Writer,
    engine: EngineDep,
    jobs: JobsDep,
    response: Response,
    request: Request,
) -> JobSnapshot:
    """Ingest documents given as text: store them as sources and chunks, then extract
    objects and relationships from the new or changed chunks, in the background.

    Returns the job (202, ``Location: /api/jobs/{id}``); its result is the
    ``IngestReport``. Re-sending an unchanged document writes nothing. The model calls
    of an LLM extractor are metered to the key that started the job (its tokens and
    cost show in ``/api/usage``); they are not refused by the budget.
    """
    who.check_body(body.project)
    check_extractor(engine, body.extractor, body.domain)
    if body.text is not None:
        documents = [document_from_text(body.text, title=body.title)]
    else:
        documents = [document_from_text(d.text, title=d.title) for d in body.documents or ()]

    budget: Budget = request.app.state.budget
    spends = extractor_spends(body.extractor or engine.extract_settings.extractor)

    def work(job: Job) -> IngestReport:
        def ingest() -> IngestReport:
            return engine.ingest(
                documents=documents,
                project=who.project,
                extractor=body.extractor,
                domain=body.domain,
                chunk_chars=body.chunk_chars,
                extract=True,
                progress=job_progress(job),
            )

        return budget.run(who.project, who.key_id, ingest) if spends else ingest()

    started = jobs.start(who.project, "ingest", work, progress={"documents_total": len(documents)})
    return accepted(started, response)


@router.delete("/documents/{id:path}")
def delete_document(
    id: Annotated[str, Path(min_length=1, max_length=MAX_ID_CHARS)],
    who: Writer,
    engine: EngineDep,
) -> DeleteReport:
    """Delete a document (source) and everything built from it: its chunks, their
    extraction records and mention links; objects and relationships no other document
    supports; the rest are rebuilt from the remaining documents' extractions (no model
    call). 404 when the project has no such document."""
    report = engine.delete_documents([id], project=who.project)
    if not report.sources:
        raise NotFound(f"no document {id!r}")
    return report


@router.post("/extraction/run", status_code=status.HTTP_202_ACCEPTED)
def run_extraction(
    body: ExtractRun, who: Writer, engine: EngineDep, jobs: JobsDep, response: Response
) -> JobSnapshot:
    """Extract the project's due chunks (pending, retried, or left by a runner that
    died) in the background; the job's result is the ``ExtractionReport``."""
    who.check_body(body.project)

    def work(job: Job) -> ExtractionReport:
        return engine.extract(
            project=who.project,
            batch_size=body.batch_size,
            limit=body.limit,
            progress=job_progress(job),
        )

    return accepted(jobs.start(who.project, "extract", work), response)


@router.get("/jobs/{job_id}")
def get_job(job_id: JobId, who: Reader, jobs: JobsDep) -> JobSnapshot:
    """State, progress and (once done) result of an ingest or extraction job."""
    return JobSnapshot.model_validate(jobs.get(who.project, job_id))


@router.delete("/jobs/{job_id}")
def cancel_job(job_id: JobId, who: Writer, jobs: JobsDep) -> JobSnapshot:
    """Ask a job to stop after its current document or batch (it ends ``cancelled``;
    what was stored stays, and queued chunks wait for the next run)."""
    return JobSnapshot.model_validate(jobs.cancel(who.project, job_id))


@router.get("/extraction/status")
def extraction_status(who: Reader, engine: EngineDep) -> ExtractionStatus:
    """Chunks per extraction status; entities and relationships kept, rejections by
    reason, tokens and cost; the last error of failed and dead chunks."""
    return engine.extraction_status(project=who.project)


@router.get("/extraction/chunks/{chunk_id:path}")
def extraction_record(chunk_id: ChunkId, who: Reader, engine: EngineDep) -> ExtractionRecord:
    """What the extractor returned for one chunk (or its last error, raw reply
    included), and the chunk's task state.

    Chunk ids hold ``#`` (and ``/`` for files ingested by path): percent-encode the
    ``#``; a ``/`` may stay as it is.
    """
    return engine.extraction_record(chunk_id, project=who.project)


@router.post("/extraction/retry")
def retry_extraction(body: RetryRequest, who: Writer, engine: EngineDep) -> dict[str, int]:
    """Re-queue failed chunks now (and dead ones with ``dead``); the next ingest or
    ``POST /api/extraction/run`` extracts them."""
    who.check_body(body.project)
    return {"requeued": engine.retry_extraction(dead=body.dead, project=who.project)}


@router.post("/extraction/preview")
async def preview_extraction(
    body: PreviewRequest, who: Reader, engine: EngineDep, request: Request
) -> ExtractionResult:
    """Run the extractor on a text and return what it would keep and reject; nothing
    is stored (an LLM reply may still land in the response cache).

    It waits on the extractor (an LLM, perhaps) on the app's LLM lane, never on the
    request threads that writes, reads and searches share; the LLM guard's deadline and
    breaker bound each wait. An extractor other than ``spacy`` may call the chat model:
    it needs the ``llm`` scope and is held to the LLM budget."""
    who.check_body(body.project)

    def run() -> ExtractionResult:
        return engine.preview_extraction(
            body.text,
            extractor=body.extractor,
            domain=body.domain,
            schema=body.graph_schema,
            project=who.project,
        )

    spends = extractor_spends(body.extractor or engine.extract_settings.extractor)
    run = await maybe_charged(request, who, spends, run)
    return await on_llm_lane(request, run)
