"""The engine's text → graph section: ingest documents, run and inspect extraction."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from kgsearch.engine import providers
from kgsearch.engine.core import EngineCore, llm_scoped
from kgsearch.errors import InvalidRequest, NotFound
from kgsearch.extract.imported import ImportedExtractor
from kgsearch.extract.ontology import GraphSchema, schema_from_mapping
from kgsearch.extract.openie import load_openie
from kgsearch.extract.quality import QualityFiltered
from kgsearch.extract.run import LLMExtractor
from kgsearch.extract.schema import ChunkText, ExtractionResult, Extractor
from kgsearch.io.documents import DEFAULT_MAX_BYTES, Document, document_from_text, read_documents
from kgsearch.lifecycle import documents, extraction, ingest, summaries
from kgsearch.lifecycle.documents import document_chunk_ids
from kgsearch.lifecycle.extraction import ExtractionContext, Totals
from kgsearch.lifecycle.runner import RetryPolicy
from kgsearch.reports import (
    ExtractionRecord,
    ExtractionReport,
    ExtractionStatus,
    IngestReport,
    SummaryReport,
)

__all__ = ["ExtractionMethods", "IngestProgress"]

MAX_CHUNK_CHARS = 100_000
"""Imported passages are kept whole: one chunk each, so each matches its record."""

IngestProgress = Callable[[str, object], None]
"""Called with ``("document", Document)`` after each document is stored and with
``("extraction", Totals)`` after each extraction batch."""


class ExtractionMethods(EngineCore):
    """Ingest and the extraction lifecycle (one call each)."""

    @llm_scoped
    def ingest(
        self,
        paths: Sequence[Path | str] = (),
        *,
        texts: Sequence[str] = (),
        title: str | None = None,
        documents: Sequence[Document] = (),
        project: str | None = None,
        extractor: str | None = None,
        domain: str | None = None,
        chunk_chars: int | None = None,
        extract: bool = True,
        dry_run: bool = False,
        max_bytes: int = DEFAULT_MAX_BYTES,
        progress: IngestProgress | None = None,
    ) -> IngestReport:
        """Ingest documents: store each as a source and chunks, queue the new or
        changed chunks for extraction and (with ``extract``) run it, building
        objects, relationships and mentions from what the extractor found.

        A file that cannot be read (empty, binary, not UTF-8, too large, unsupported)
        is named in ``problems`` with its reason; the others are still ingested.
        Re-ingesting an unchanged document writes nothing.

        Args:
            paths: Files and directories (.txt, .md; .html, .pdf, .docx with the
                ``documents`` extra).
            texts: Texts given directly (e.g. stdin), titled ``title``.
            title: Title of the texts.
            documents: Documents already read.
            project: Overrides the engine's project.
            extractor: ``spacy`` (offline), ``llm`` or ``none`` (store only).
            domain: Prompt domain of the LLM extractor.
            chunk_chars: Largest chunk in characters (settings' default when None).
            extract: Run the extraction now; False leaves the chunks queued.
            dry_run: Read and chunk only, and forecast tokens and cost; write nothing.
            max_bytes: Larger files are refused.
            progress: See :data:`IngestProgress`.

        Raises:
            InvalidRequest: Nothing to ingest, or an unknown extractor or domain.
        """
        if not (paths or texts or documents):
            raise InvalidRequest("nothing to ingest: give paths, texts or documents")
        read, problems = read_documents([Path(p) for p in paths], max_bytes=max_bytes)
        blank = [t for t in texts if not t.strip()]
        docs = [
            *documents,
            *read,
            *(document_from_text(t, title=title) for t in texts if t.strip()),
        ]
        max_chars = chunk_chars or self.extract_settings.chunk_chars
        if not 100 <= max_chars <= 100_000:
            raise InvalidRequest("chunk_chars must be between 100 and 100000")
        name = extractor or self.extract_settings.extractor
        domain = domain or self.extract_settings.domain
        if dry_run:
            chosen = None
            if name != "none":
                chosen = providers.forecast_extractor(
                    self.extract_settings, self.llm_settings, name, domain
                )
            report = IngestReport(
                dry_run=True,
                estimate=ingest.estimate(docs, max_chars=max_chars, extractor=chosen),
            )
        else:
            chosen = None if name == "none" else self.extractor(name, domain)
            report = self._store_and_extract(
                docs, chosen, domain, max_chars, project, extract, progress
            )
        return ingest.with_problems(report, problems, len(blank))

    def import_extractions(
        self,
        path: Path | str,
        *,
        project: str | None = None,
        model: str | None = None,
        extract: bool = True,
        progress: IngestProgress | None = None,
    ) -> IngestReport:
        """Ingest the passages of an extraction made elsewhere (HippoRAG OpenIE JSON)
        with their extractions as the records of their chunks, labelled with the
        model that made them, and build the graph from them like a live extraction.

        Args:
            path: The OpenIE JSON file.
            project: Overrides the engine's project.
            model: The model that made it (default: read from the file name).
            extract: Build the graph now; False leaves the chunks queued.
            progress: See :data:`IngestProgress`.

        Raises:
            ImportFailed: The file is not HippoRAG OpenIE JSON (with the position).
        """
        records = load_openie(path, model=model)
        imported = QualityFiltered(
            ImportedExtractor(records, source=Path(path).name),
            providers.quality_rules(self.extract_settings, extractive=True),
        )
        domain = "imported"
        with self._extractors_lock:
            self._extractors[(imported.name, domain)] = imported
        docs = [
            Document(
                source_id=f"passage:{r.position}",
                title=r.title or f"passage {r.position}",
                text=r.passage,
                sha256=hashlib.sha256(r.passage.encode("utf-8", "surrogatepass")).hexdigest(),
                metadata={"format": "openie", "file": str(path), "position": r.position},
            )
            for r in records
            if r.passage.strip()
        ]
        return self._store_and_extract(
            docs, imported, domain, MAX_CHUNK_CHARS, project, extract, progress
        )

    def _store_and_extract(
        self,
        docs: Sequence[Document],
        chosen: Extractor | None,
        domain: str,
        max_chars: int,
        project: str | None,
        extract: bool,
        progress: IngestProgress | None,
    ) -> IngestReport:
        report = ingest.store_documents(
            self._writes(project),
            docs,
            extractor=chosen,
            domain=domain,
            max_chars=max_chars,
            progress=None if progress is None else lambda d: progress("document", d),
        )
        if chosen is not None and extract:
            run = self.extract(project=project, progress=progress)
            report = report.model_copy(update={"extraction": run})
            if self.extract_settings.summaries == "llm":
                summaries = self.summarize_descriptions(project=project)
                report = report.model_copy(update={"summaries": summaries})
        return report

    @llm_scoped
    def summarize_descriptions(
        self,
        *,
        project: str | None = None,
        limit: int | None = None,
        progress: Callable[[int, int], None] | None = None,
    ) -> SummaryReport:
        """Have the configured chat model summarise every extracted description that
        passes the 2,000-character budget (map-reduce, each call cached), in place of
        the offline summary of its most central sentences. A summary is kept with the
        digest of the descriptions it was made from and used while they are unchanged.
        Rows the model fails on keep the offline summary (see ``errors``).

        Args:
            project: One project (the engine's when None).
            limit: At most this many rows.
            progress: Called with (rows done, rows due) after each row.
        """
        llm = providers.make_llm(self.llm_settings, self.store, self.llm_guard)
        return summaries.summarize_descriptions(
            self._writes(project), llm, limit=limit, progress=progress
        )

    @llm_scoped
    def extract(
        self,
        *,
        project: str | None = None,
        batch_size: int | None = None,
        limit: int | None = None,
        wait_for_retries: bool = True,
        progress: IngestProgress | None = None,
        chunk_ids: Sequence[str] | None = None,
    ) -> ExtractionReport:
        """Extract every due chunk (pending, failed past its backoff, or leased by a
        runner that died), with the extractor and domain each was queued with.

        Args:
            project: One project (the engine's when None).
            batch_size: Chunks per claim, extractor call and graph write (settings'
                ``extract.batch_size`` when None).
            limit: Stop after about this many chunks.
            wait_for_retries: Sleep for a retry that is due soon.
            progress: Called with ``("extraction", Totals)`` after each batch.
            chunk_ids: Only these chunks (e.g. the ones a call just added).
        """
        settings = self.extract_settings
        ctx = ExtractionContext(
            self.store,
            self.extractor,
            self._writes,
            retry=RetryPolicy(
                settings.max_attempts,
                settings.backoff_seconds,
                lease_seconds=settings.lease_seconds,
            ),
        )
        report: Callable[[Totals], None] | None = None
        if progress is not None:
            report = lambda totals: progress("extraction", totals)  # noqa: E731
        return extraction.run_extraction(
            ctx,
            project=self._p(project),
            batch_size=batch_size or settings.batch_size,
            limit=limit,
            wait_for_retries=wait_for_retries,
            progress=report,
            chunk_ids=chunk_ids,
        )

    @llm_scoped
    def extract_chunks(
        self,
        chunk_ids: Sequence[str],
        *,
        project: str | None = None,
        extractor: str | None = None,
        domain: str | None = None,
    ) -> int:
        """Queue stored chunks for extraction (e.g. ones added by ``add_text``);
        returns how many became pending.

        Raises:
            NotFound: A chunk id is not a live chunk.
        """
        return ingest.queue_stored(
            self.store,
            self._p(project),
            chunk_ids,
            self.extractor(extractor, domain),
            domain or self.extract_settings.domain,
        )

    @llm_scoped
    def reextract_document(
        self,
        id: str,
        *,
        project: str | None = None,
        extractor: str | None = None,
        domain: str | None = None,
        progress: IngestProgress | None = None,
    ) -> ExtractionReport:
        """Extract one document's chunks again: those whose text or extractor changed
        (another extractor, domain or version) and those that failed or gave up; chunks
        already extracted the same way stay as they are.

        Raises:
            NotFound: The project has no such document.
        """
        p = self._p(project)
        found = self.store.get_sources(p, [id])
        if not found:
            raise NotFound(f"no document {id!r} in this project")
        ids = document_chunk_ids(found[0])
        if ids:
            documents.forget_failed(self.store, p, ids)
            self.extract_chunks(ids, project=p, extractor=extractor, domain=domain)
        return self.extract(project=p, progress=progress, chunk_ids=ids)

    def extraction_status(self, *, project: str | None = None) -> ExtractionStatus:
        """Chunks per extraction status; entities and relationships kept, rejected
        by reason, tokens and cost over every recorded extraction."""
        return extraction.status_report(self.store, project)

    def extraction_record(self, chunk_id: str, *, project: str | None = None) -> ExtractionRecord:
        """What the extractor returned for one chunk, and its task state.

        Raises:
            NotFound: The chunk was never queued for extraction.
        """
        return extraction.extraction_record(self.store, self._p(project), chunk_id)

    def retry_extraction(
        self, *, dead: bool = False, project: str | None = None, claimed: bool = False
    ) -> int:
        """Re-queue failed chunks now (and dead ones with ``dead=True``) and take back
        claims whose lease ended (every claim with ``claimed=True``: a run killed with
        ``kill -9`` holds its chunks until the lease ends; use it only when no other
        extraction runs)."""
        return extraction.retry(self.store, project, dead=dead, claimed=claimed)

    @llm_scoped
    def preview_extraction(
        self,
        text: str,
        *,
        extractor: str | None = None,
        domain: str | None = None,
        schema: GraphSchema | Mapping[str, Any] | None = None,
        project: str | None = None,
    ) -> ExtractionResult:
        """Run the extractor on ``text`` (read as Markdown: headings, code and tables
        are not mined, as in ingest) and return what it would keep and reject;
        nothing is written (an LLM reply may still land in the project's response
        cache).

        Args:
            text: The text.
            extractor: The extractor (settings' default when None).
            domain: The prompt domain (settings' default when None).
            schema: A graph schema to try instead of ``[extract] schema`` (a
                :class:`GraphSchema` or its mapping; the LLM extractor only).
            project: Whose reply cache the model's reply is kept in (the engine's
                when None).

        Raises:
            InvalidRequest: Blank text, a malformed schema, or a schema for an
                extractor other than ``llm``.
        """
        if not text.strip():
            raise InvalidRequest("text must not be blank")
        chosen: Extractor = self.extractor(extractor, domain)
        if schema is not None:
            if not isinstance(chosen, LLMExtractor):
                raise InvalidRequest("a graph schema steers the llm extractor only")
            if not isinstance(schema, GraphSchema):
                schema = schema_from_mapping(schema, source="schema")
            chosen = chosen.with_schema(schema)
        chunk = ChunkText("preview", extraction.preview_text(text))
        if isinstance(chosen, LLMExtractor):  # a failed call is the answer's error
            (result,) = chosen.extract([chunk], raise_errors=True)
        else:
            (result,) = chosen.extract([chunk])
        return result
