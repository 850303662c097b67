"""CLI commands of the text → graph path: ``ingest`` and ``extract run|status|show|retry|
preview``."""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)
from rich.table import Table

from kgsearch.cli.common import (
    State,
    console,
    emit,
    engine_from,
    handle_errors,
    load_settings,
    out,
    pass_state,
    resumable,
)
from kgsearch.config import Settings
from kgsearch.engine import Engine
from kgsearch.engine.providers import EXTRACTOR_NAMES
from kgsearch.errors import NotFound
from kgsearch.extract.ontology import load_schema
from kgsearch.io.documents import DEFAULT_MAX_BYTES
from kgsearch.lifecycle.extraction import Totals
from kgsearch.reports import ExtractionReport, ExtractionStatus, IngestReport, SummaryReport

__all__ = ["extract", "ingest"]


def _settings(
    state: State,
    *,
    extractor: str | None = None,
    domain: str | None = None,
    llm_model: str | None = None,
    record: Path | None = None,
    replay: Path | None = None,
    schema: Path | None = None,
) -> Settings:
    settings = load_settings()
    llm = {k: v for k, v in (("model", llm_model), ("record", record), ("replay", replay)) if v}
    ext: dict[str, Any] = {k: v for k, v in (("extractor", extractor), ("domain", domain)) if v}
    if schema is not None:
        load_schema(schema)  # a bad file is reported before any work
        ext["schema_"] = str(schema.resolve())
    return settings.model_copy(
        update={
            "llm": settings.llm.model_copy(update=llm),
            "extract": settings.extract.model_copy(update=ext),
        }
    )


def _progress_bar(disable: bool) -> Progress:
    return Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[detail]}"),
        TimeElapsedColumn(),
        console=console,
        disable=disable,
    )


def _detail(totals: Totals) -> str:
    cost = "" if totals.cost_usd is None else f"  ${totals.cost_usd:.4f}"
    tokens = totals.prompt_tokens + totals.completion_tokens
    return (
        f"{totals.entities} entities  {totals.relationships} relationships  {tokens} tokens{cost}"
    )


def _run_with_progress(engine: Engine, state: State, fn: Any, total: int | None) -> Any:
    with _progress_bar(state.as_json) as bar:
        docs: list[TaskID] = []
        chunks: list[TaskID] = []

        def progress(kind: str, value: object) -> None:
            if kind == "document":
                if not docs:
                    docs.append(bar.add_task("storing documents", total=None, detail=""))
                bar.update(docs[0], advance=1, detail=escape(str(getattr(value, "title", ""))))
            elif isinstance(value, Totals):
                if not chunks:
                    chunks.append(bar.add_task("extracting chunks", total=total, detail=""))
                bar.update(chunks[0], completed=value.chunks, detail=_detail(value))

        return fn(progress)


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    yield


@contextlib.contextmanager
def _terminable() -> Iterator[None]:
    """SIGTERM ends the run as Ctrl-C does: the batch's claims are given back and the
    work done so far stays saved (the default SIGTERM ends the process with its claims
    held until their lease ends)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _count(n: int, word: str, many: str | None = None) -> str:
    """``1 document``, ``2 documents``."""
    return f"{n} {word if n == 1 else many or word + 's'}"


def _render_extraction(report: ExtractionReport) -> None:
    cost = "unknown" if report.cost_usd is None else f"${report.cost_usd:.4f}"
    out.print(
        f"extracted {_count(report.extracted, 'chunk')}: "
        f"{_count(report.entities, 'entity', 'entities')}, "
        f"{_count(report.relationships, 'relationship')}; failed {report.failed} "
        f"(dead {report.dead}); tokens {report.prompt_tokens}+{report.completion_tokens} in "
        f"{_count(report.calls, 'call')}, cost {cost}; {report.seconds:.1f} s"
    )
    if report.rejected:
        dropped = ", ".join(f"{n} {reason}" for reason, n in report.rejected.items())
        out.print(
            f"the quality filter dropped {dropped} (each reason in docs/extraction.md; "
            "a chunk's in `kgsearch extract show CHUNK`)"
        )
    for error in report.errors:
        out.print(f"[red]error:[/] {escape(error.splitlines()[0] if error else str(error))}")


def _render_ingest(report: IngestReport) -> None:
    if report.dry_run and report.estimate is not None:
        e = report.estimate
        cost = "unknown" if e["cost_usd"] is None else f"${e['cost_usd']:.4f}"
        out.print(
            f"dry run ({e['extractor']}): {e['documents']} documents, {e['chunks']} chunks, "
            f"{e['characters']} characters; estimated tokens {e['prompt_tokens']} prompt + "
            f"{e['completion_tokens']} completion, estimated cost {cost}. Nothing written."
        )
    else:
        out.print(
            f"ingested {_count(report.documents, 'document')} ({report.unchanged} unchanged), "
            f"{_count(report.chunks, 'chunk')}; {report.queued} queued for extraction, "
            f"{report.removed} removed"
        )
    if report.extraction is not None:
        _render_extraction(report.extraction)
    for problem in report.skipped:
        out.print(f"[dim]skipped {escape(str(problem.path))}: {escape(problem.reason)}[/]")
    for problem in report.problems:
        out.print(f"[red]failed[/] {escape(str(problem.path))}: {escape(problem.reason)}")


@click.command()
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option(
    "--extractor",
    type=click.Choice(EXTRACTOR_NAMES),
    help="spacy: offline, no model (the default); llm: the chat model in settings "
    "([llm] in kgsearch.toml); none: store and chunk only.",
)
@click.option("--domain", help="Prompt domain for --extractor llm (general, software, …).")
@click.option("--llm-model", help="provider:model for --extractor llm, e.g. ollama:llama3.1.")
@click.option(
    "--schema",
    "schema",
    type=click.Path(path_type=Path, dir_okay=False, exists=True),
    help="Graph schema for --extractor llm (.toml/.json/.yaml; see `kgsearch schema show`).",
)
@click.option("--chunk-chars", type=click.IntRange(100, 100_000), help="Largest chunk.")
@click.option("--title", help="Title of text read from stdin (PATH '-').")
@click.option("--dry-run", is_flag=True, help="Chunk and forecast tokens and cost only.")
@click.option("--no-extract", is_flag=True, help="Queue chunks; run `extract run` later.")
@click.option("--no-embed", is_flag=True, help="Do not embed the new rows afterwards.")
@click.option("--record", type=click.Path(path_type=Path, dir_okay=False), help="Record LLM calls.")
@click.option(
    "--replay",
    type=click.Path(path_type=Path, dir_okay=False, exists=True),
    help="Answer LLM calls from a --record file only (no model calls).",
)
@click.option(
    "--extractions",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Import passages with an extraction made elsewhere (HippoRAG OpenIE JSON), "
    "labelled with its model, instead of extracting them here.",
)
@click.option(
    "--max-bytes",
    default=DEFAULT_MAX_BYTES,
    show_default=True,
    type=click.IntRange(1),
    help="Refuse larger files.",
)
@pass_state
@handle_errors
def ingest(
    state: State,
    paths: tuple[Path, ...],
    extractor: str | None,
    domain: str | None,
    llm_model: str | None,
    schema: Path | None,
    chunk_chars: int | None,
    title: str | None,
    dry_run: bool,
    no_extract: bool,
    no_embed: bool,
    record: Path | None,
    replay: Path | None,
    extractions: Path | None,
    max_bytes: int,
) -> None:
    """Ingest documents: chunk them, extract entities and relationships, build the
    graph, embed it. Files (.txt, .md; .html, .pdf, .docx with the documents extra),
    directories (recursive) or '-' for stdin.

    Re-ingesting an unchanged document does nothing; a changed one re-extracts only
    its changed chunks. Files that cannot be read are listed with the reason; the
    exit code is 1 when any file or chunk failed.

    \b
    Example:
      kgsearch ingest docs/
      kgsearch ingest report.md --extractor llm --domain finance --dry-run
      kgsearch ingest notes/ --extractor llm --schema schema.toml
      cat notes.txt | kgsearch ingest - --title notes
      kgsearch ingest --extractions openie_gpt-3.5-turbo-1106.json
    """
    if not paths and extractions is None:
        raise click.UsageError("give files, directories, '-' for stdin or --extractions FILE")
    if paths and extractions is not None:
        raise click.UsageError("--extractions brings its own passages; give no PATHS with it")
    texts = [sys.stdin.read()] if Path("-") in paths else []
    files = [p for p in paths if p != Path("-")]
    if files and not texts and not any(p.exists() for p in files):
        # nothing to read: say so before a store is created for it
        missing = ", ".join(str(p) for p in files)
        raise NotFound(f"no such file or directory: {missing}", details={"paths": missing})
    settings = _settings(
        state,
        extractor=extractor,
        domain=domain,
        llm_model=llm_model,
        record=record,
        replay=replay,
        schema=schema,
    )
    with engine_from(state, settings=settings, create=True) as engine:

        def run(progress: Any) -> IngestReport:
            if extractions is not None:
                return engine.import_extractions(
                    extractions, extract=not no_extract, progress=progress
                )
            return engine.ingest(
                files,
                texts=texts,
                title=title or ("stdin" if texts else None),
                chunk_chars=chunk_chars,
                extract=not no_extract,
                dry_run=dry_run,
                max_bytes=max_bytes,
                progress=progress,
            )

        with resumable("ingest", "kgsearch ingest " + " ".join(map(str, paths))), _terminable():
            report: IngestReport = _run_with_progress(engine, state, run, None)
            if not (dry_run or no_embed):
                with (
                    console.status("embedding new rows", spinner="dots")
                    if not state.as_json
                    else _quiet()
                ):
                    engine.embed_pending(project=engine.project)
    emit(state, report, _render_ingest)
    if not report.ok:
        raise click.exceptions.Exit(1)


@click.group()
def extract() -> None:
    """Run and inspect text → graph extraction (pending → extracted | failed → dead).

    Example: kgsearch extract status
    """


@extract.command("run")
@click.option("--limit", type=click.IntRange(1), help="Stop after about this many chunks.")
@click.option("--record", type=click.Path(path_type=Path, dir_okay=False))
@click.option("--replay", type=click.Path(path_type=Path, dir_okay=False, exists=True))
@click.option(
    "--schema",
    "schema",
    type=click.Path(path_type=Path, dir_okay=False, exists=True),
    help="Graph schema for --extractor llm (.toml/.json/.yaml; see `kgsearch schema show`).",
)
@pass_state
@handle_errors
def run(
    state: State, limit: int | None, record: Path | None, replay: Path | None, schema: Path | None
) -> None:
    """Extract every queued chunk (with the extractor and domain it was queued with).

    Example: kgsearch extract run
    """
    settings = _settings(state, record=record, replay=replay, schema=schema)
    with engine_from(state, settings=settings) as engine:
        status = engine.extraction_status(project=state.project)
        due = status.counts.get("pending", 0) + status.counts.get("failed", 0)
        with resumable("extraction", "kgsearch extract run"), _terminable():
            report: ExtractionReport = _run_with_progress(
                engine,
                state,
                lambda progress: engine.extract(limit=limit, progress=progress),
                due or None,
            )
    emit(state, report, _render_extraction)
    if report.dead or report.left:
        raise click.exceptions.Exit(1)


def _render_status(status: ExtractionStatus) -> None:
    table = Table("status", "chunks")
    for name, n in status.counts.items():
        table.add_row(name, str(n))
    out.print(table)
    cost = "unknown" if status.cost_usd is None else f"${status.cost_usd:.4f}"
    out.print(
        f"kept {status.entities} entities, {status.relationships} relationships; "
        f"tokens {status.prompt_tokens}+{status.completion_tokens}; cost {cost}"
    )
    if status.rejected:
        out.print(
            "rejected: " + ", ".join(f"{reason} {n}" for reason, n in status.rejected.items())
        )
    for label, n in status.extractors.items():
        out.print(f"  {n} chunks by {label}")
    for chunk, error in status.failures.items():
        out.print(f"[red]{escape(chunk)}[/]: {escape(error.splitlines()[0] if error else '')}")


@extract.command("status")
@pass_state
@handle_errors
def status(state: State) -> None:
    """Chunks per status; entities and relationships kept, rejected by reason, tokens
    and cost.

    Example: kgsearch extract status --json
    """
    with engine_from(state) as engine:
        emit(state, engine.extraction_status(project=state.project), _render_status)


@extract.command("show")
@click.argument("chunk_id")
@pass_state
@handle_errors
def show(state: State, chunk_id: str) -> None:
    """What the extractor returned for one chunk: entities, relationships, rejected
    items with reasons, model, prompt, tokens (JSON).

    Example: kgsearch extract show 'doc:notes.md#3f2a9c0d1e2b4a5c'
    """
    with engine_from(state) as engine:
        emit(state, engine.extraction_record(chunk_id, project=state.project))


@extract.command("retry")
@click.option("--dead", is_flag=True, help="Also re-queue chunks that gave up.")
@click.option(
    "--claimed",
    is_flag=True,
    help="Also take back chunks still claimed by a run (one killed with kill -9); "
    "only when no other extraction runs.",
)
@pass_state
@handle_errors
def retry(state: State, dead: bool, claimed: bool) -> None:
    """Re-queue failed chunks now (and dead ones with --dead), take back claims whose
    lease ended (all claims with --claimed); then `extract run`.

    Example: kgsearch extract retry --dead && kgsearch extract run
    """
    with engine_from(state) as engine:
        n = engine.retry_extraction(dead=dead, project=state.project, claimed=claimed)
    emit(state, {"requeued": n}, lambda v: out.print(f"re-queued {v['requeued']} chunks"))


@extract.command("preview")
@click.argument("text")
@click.option("--extractor", type=click.Choice([n for n in EXTRACTOR_NAMES if n != "none"]))
@click.option("--domain", help="Prompt domain for --extractor llm.")
@click.option("--llm-model", help="provider:model for --extractor llm.")
@click.option(
    "--schema",
    "schema",
    type=click.Path(path_type=Path, dir_okay=False, exists=True),
    help="Graph schema for --extractor llm (.toml/.json/.yaml; see `kgsearch schema show`).",
)
@pass_state
@handle_errors
def preview(
    state: State,
    text: str,
    extractor: str | None,
    domain: str | None,
    llm_model: str | None,
    schema: Path | None,
) -> None:
    """Run the extractor on TEXT and print what it keeps and rejects; writes nothing.

    Example: kgsearch extract preview "Ada Lovelace worked with Charles Babbage."
    """
    settings = _settings(
        state, extractor=extractor, domain=domain, llm_model=llm_model, schema=schema
    )
    with engine_from(state, settings=settings) as engine:
        emit(state, engine.preview_extraction(text))


@extract.command("summarize")
@click.option("--limit", type=click.IntRange(1), help="At most this many rows.")
@click.option("--llm-model", help="Chat model, e.g. openai:gpt-4o-mini (default: [llm] model).")
@click.option("--record", type=click.Path(path_type=Path, dir_okay=False))
@click.option("--replay", type=click.Path(path_type=Path, dir_okay=False, exists=True))
@pass_state
@handle_errors
def summarize(
    state: State,
    limit: int | None,
    llm_model: str | None,
    record: Path | None,
    replay: Path | None,
) -> None:
    """Have the chat model summarise long merged descriptions.

    An object or relationship described by many chunks gets, past 2,000 characters,
    an offline summary of its most central sentences. This asks the [llm] model for
    a written one instead (map-reduce, every reply cached in the store), used while
    the descriptions are unchanged. Rows the model fails on keep the offline summary.
    Set extract.summaries = "llm" to do this after every ingest.

    Example: kgsearch extract summarize --llm-model openai:gpt-4o-mini
    """
    settings = _settings(state, llm_model=llm_model, record=record, replay=replay)
    with engine_from(state, settings=settings) as engine, _progress_bar(state.as_json) as bar:
        task = bar.add_task("summarising descriptions", total=None, detail="")

        def progress(done: int, due: int) -> None:
            bar.update(task, completed=done, total=due)

        report = engine.summarize_descriptions(limit=limit, progress=progress)
    emit(state, report, _render_summaries)
    if report.failed:
        raise click.exceptions.Exit(1)


def _render_summaries(report: SummaryReport) -> None:
    out.print(
        f"summarised {report.summarized} of {report.due} long descriptions "
        f"({report.calls} model calls, {report.cached} from the cache); {report.failed} failed"
    )
    for row, error in report.errors.items():
        out.print(f"[red]{escape(str(row))}[/]: {escape(str(error))}")
