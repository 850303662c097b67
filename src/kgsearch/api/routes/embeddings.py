"""Embedding-lifecycle routes: status, background backfill (pollable) and retry."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Path, Request, Response, status

from kgsearch.api.auth import Principal, current_engine, require
from kgsearch.api.background import BackfillJobs
from kgsearch.api.schemas import BackfillJob, BackfillRequest, RetryRequest
from kgsearch.engine import Engine
from kgsearch.model import EmbeddingStatusReport, Kind

__all__ = ["router"]

router = APIRouter(prefix="/api/embeddings", tags=["embeddings"])

EngineDep = Annotated[Engine, Depends(current_engine)]
Reader = Annotated[Principal, Depends(require("read"))]
Writer = Annotated[Principal, Depends(require("write"))]


def _jobs(request: Request) -> BackfillJobs:
    jobs: BackfillJobs = request.app.state.jobs
    return jobs


JobsDep = Annotated[BackfillJobs, Depends(_jobs)]


@router.get("/status")
def embedding_status(who: Reader, engine: EngineDep) -> EmbeddingStatusReport:
    """Counts by status and kind, percent embedded, stale rows, failure rate, latency."""
    return engine.embedding_status(project=who.project)


@router.post(
    "/backfill",
    status_code=status.HTTP_202_ACCEPTED,
    responses={200: {"description": "Dry run: what would be embedded"}},
)
def backfill(
    body: BackfillRequest, who: Writer, engine: EngineDep, jobs: JobsDep, response: Response
) -> dict[str, Any]:
    """Start embedding the project's pending and failed rows in the background.

    Returns the job (202); poll ``GET /api/embeddings/backfill/{id}`` for progress.
    With ``dry_run`` nothing runs and the counts that would be embedded come back (200).
    """
    who.check_body(body.project)
    kinds = [Kind(k) for k in body.kinds] if body.kinds else list(Kind)
    if body.dry_run:
        response.status_code = status.HTTP_200_OK
        todo = engine.embedding_todo(project=who.project, kinds=kinds)
        return {"dry_run": True, "would_embed": todo.by_kind, "total": todo.total}
    return jobs.start(
        who.project,
        kinds=kinds,
        batch_size=body.batch_size,
        delay_ms=body.delay_ms,
        limit=body.limit,
    )


@router.get("/backfill/{job_id}")
def backfill_progress(
    job_id: Annotated[str, Path(min_length=1, max_length=64)], who: Reader, jobs: JobsDep
) -> BackfillJob:
    """Progress of a backfill job of this project."""
    return BackfillJob.model_validate(jobs.get(who.project, job_id))


@router.post("/retry")
def retry(body: RetryRequest, who: Writer, engine: EngineDep) -> dict[str, int]:
    """Re-queue failed rows now (and dead ones with ``dead``); a backfill embeds them."""
    who.check_body(body.project)
    return {"requeued": engine.retry_failed(dead=body.dead, project=who.project)}
