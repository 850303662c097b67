"""Document routes of the web UI's Upload and Documents pages: files uploaded as
files (multipart), the list of documents, one document with its chunks and their
extraction, and extracting a document again.

An upload is read by the same readers as ``kgsearch ingest`` (PDF, HTML, DOCX,
Markdown, reStructuredText, text), within their bounds (pages, characters, a .docx's
expanded size) and the upload limit of the server (``max_upload_bytes``). Files that
cannot be read are refused with their reason: when none can, the request gets 400
listing each; otherwise the others are ingested and the job's report names the
refused ones in ``problems``.
"""

from __future__ import annotations

from typing import Annotated

import anyio
from fastapi import APIRouter, Depends, File, Form, Path, Query, Response, UploadFile, status
from pydantic import BaseModel, ConfigDict, Field

from kgsearch.api.auth import Principal, current_engine, require
from kgsearch.api.jobs import Job
from kgsearch.api.limits import MAX_ID_CHARS, MAX_LIMIT
from kgsearch.api.routes.extract import JobsDep, accepted, check_extractor, job_progress
from kgsearch.api.routes.graph import Cursor, Limit
from kgsearch.api.schemas import JobSnapshot
from kgsearch.engine import Engine
from kgsearch.errors import InvalidRequest, MissingDependency
from kgsearch.io.documents import (
    DEFAULT_MAX_BYTES,
    Document,
    document_from_bytes,
    document_from_text,
)
from kgsearch.lifecycle.documents import DocumentPage, DocumentView
from kgsearch.reports import ExtractionReport, IngestProblem, IngestReport

__all__ = ["router"]

router = APIRouter(prefix="/api", tags=["documents"])

EngineDep = Annotated[Engine, Depends(current_engine)]
Reader = Annotated[Principal, Depends(require("read"))]
Writer = Annotated[Principal, Depends(require("write"))]
DocId = Annotated[str, Path(min_length=1, max_length=MAX_ID_CHARS)]
MAX_FILES = 100
"""Files one upload may carry."""


class ReextractRequest(BaseModel):
    """How to extract a document again (each field optional)."""

    model_config = ConfigDict(extra="forbid")

    extractor: str | None = Field(default=None, min_length=1, max_length=50)
    domain: str | None = Field(default=None, min_length=1, max_length=100)


def _read(files: list[tuple[str, bytes]]) -> tuple[list[Document], list[IngestProblem]]:
    """Each file through the readers of ``ingest``; a file that fails is a problem."""
    read: list[Document] = []
    problems: list[IngestProblem] = []
    for name, data in files:
        try:
            read.append(document_from_bytes(name, data, max_bytes=DEFAULT_MAX_BYTES))
        except (ValueError, MissingDependency) as exc:
            problems.append(IngestProblem(path=name or "(no name)", reason=str(exc)))
    return read, problems


@router.post("/documents/upload", status_code=status.HTTP_202_ACCEPTED)
async def upload_documents(
    who: Writer,
    engine: EngineDep,
    jobs: JobsDep,
    response: Response,
    files: Annotated[list[UploadFile] | None, File(description="The documents")] = None,
    text: Annotated[str | None, Form(max_length=1_000_000)] = None,
    title: Annotated[str | None, Form(max_length=1000)] = None,
    extractor: Annotated[str | None, Form(min_length=1, max_length=50)] = None,
    domain: Annotated[str | None, Form(min_length=1, max_length=100)] = None,
    chunk_chars: Annotated[int | None, Form(ge=100, le=100_000)] = None,
) -> JobSnapshot:
    """Ingest uploaded files (``multipart/form-data``, field ``files``, one or more)
    and/or a pasted ``text`` (with its ``title``), read like ``kgsearch ingest`` reads
    files: PDF, HTML, DOCX, Markdown, reStructuredText and text, by the file name's
    suffix. Then extract in the background, as ``POST /api/documents`` does.

    A file named like one uploaded before replaces it (its source id is
    ``doc:<name>``). Returns the job (202); files that could not be read are listed in
    its report's ``problems``, and when nothing could be read the answer is 400 with
    each file's reason in ``details.problems``.
    """
    # off the event loop: the first check of an extractor loads it (spaCy: seconds)
    await anyio.to_thread.run_sync(check_extractor, engine, extractor, domain)
    given = [f for f in files or [] if f.filename or f.size]
    if len(given) > MAX_FILES:
        raise InvalidRequest(f"{len(given)} files in one upload; at most {MAX_FILES}")
    raw = [(f.filename or "", await f.read()) for f in given]
    documents, problems = await anyio.to_thread.run_sync(_read, raw)
    if text is not None and text.strip():
        documents.append(document_from_text(text, title=(title or "").strip() or None))
    elif text is not None and not given:
        problems.append(IngestProblem(path=title or "<text>", reason="empty document (no text)"))
    if not documents:
        if not problems:
            raise InvalidRequest("nothing to ingest: choose files (field 'files') or send text")
        listed = "; ".join(f"{p.path}: {p.reason}" for p in problems)
        raise InvalidRequest(
            f"no document could be read: {listed}",
            details={"problems": [p.model_dump() for p in problems]},
        )

    def work(job: Job) -> IngestReport:
        report = engine.ingest(
            documents=documents,
            project=who.project,
            extractor=extractor,
            domain=domain,
            chunk_chars=chunk_chars,
            extract=True,
            progress=job_progress(job),
        )
        return report.model_copy(update={"problems": [*problems, *report.problems]})

    progress = {"documents_total": len(documents)}
    return accepted(jobs.start(who.project, "ingest", work, progress=progress), response)


@router.get("/documents")
def list_documents(
    who: Reader, engine: EngineDep, limit: Limit = 20, cursor: Cursor = None
) -> DocumentPage:
    """Documents (sources), oldest first, each with its chunk count and its chunks per
    extraction status."""
    return engine.documents(project=who.project, limit=limit, cursor=cursor)


@router.get("/documents/{id:path}")
def get_document(
    id: DocId,
    who: Reader,
    engine: EngineDep,
    limit: Annotated[int, Query(ge=1, le=10 * MAX_LIMIT)] = 100,
    offset: Annotated[int, Query(ge=0)] = 0,
) -> DocumentView:
    """One document: its sections, and a page of its chunks (text, section,
    extraction status, attempts, last error, what was kept and rejected). 404 when
    the project has no such document."""
    return engine.document(id, project=who.project, limit=limit, offset=offset)


@router.post("/documents/{id:path}/extract", status_code=status.HTTP_202_ACCEPTED)
def reextract_document(
    id: DocId,
    who: Writer,
    engine: EngineDep,
    jobs: JobsDep,
    response: Response,
    body: ReextractRequest | None = None,
) -> JobSnapshot:
    """Extract a document again in the background (with another ``extractor`` or
    ``domain``, or to retry its failed chunks); chunks already extracted the same way
    stay. 404 when the project has no such document. The job's result is the
    ``ExtractionReport``."""
    given = body or ReextractRequest()
    check_extractor(engine, given.extractor, given.domain)
    engine.get_source(id, project=who.project)  # 404 now, not in the job

    def work(job: Job) -> ExtractionReport:
        return engine.reextract_document(
            id,
            project=who.project,
            extractor=given.extractor,
            domain=given.domain,
            progress=job_progress(job),
        )

    return accepted(jobs.start(who.project, "extract", work), response)
