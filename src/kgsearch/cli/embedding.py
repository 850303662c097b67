"""CLI commands of the embedding lifecycle that build the engine: generate, backfill,
worker, preview, retry, and ``embed status`` counted by the engine (the group and its
light ``status`` are in :mod:`kgsearch.cli.embed`, which loads these when used)."""

from __future__ import annotations

import signal
import threading

import click
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

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
    row_id,
)
from kgsearch.cli.render import render_status
from kgsearch.engine import Engine
from kgsearch.model import EmbedReport, Kind
from kgsearch.query_embedding import planned_queries

__all__ = ["backfill", "generate", "preview", "retry", "status_in_process", "worker"]

_KINDS = {
    "objects": Kind.OBJECT,
    "relationships": Kind.RELATIONSHIP,
    "chunks": Kind.CHUNK,
    "communities": Kind.COMMUNITY,  # community reports
}
_PLURAL = {kind.value: name for name, kind in _KINDS.items()}


def _run(
    state: State,
    engine: Engine,
    *,
    kinds: list[Kind],
    batch_size: int,
    delay: int,
    force: bool,
    limit: int | None,
) -> EmbedReport:
    status = engine.embedding_status(project=state.project)
    todo = {
        r.kind.value: r.pending + r.failed + (r.embedded + r.dead if force else 0)
        for r in status.rows
        if state.project is None or r.project == state.project
    }
    with Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[rate]} texts/s"),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=console,
        transient=False,
        disable=state.as_json,
    ) as progress:
        tasks: dict[Kind, TaskID] = {
            k: progress.add_task(
                f"embedding {_PLURAL[k.value]}", total=todo.get(k.value, 0) or None, rate="-"
            )
            for k in kinds
        }

        def advance(kind: Kind, n: int) -> None:
            task = tasks[kind]
            progress.update(task, advance=n)
            speed = progress.tasks[task].speed
            progress.update(task, rate=f"{speed:.0f}" if speed else "-")

        with resumable("embedding", "kgsearch embed generate"):
            return engine.embed_pending(
                kinds=kinds,
                project=state.project,
                batch_size=batch_size,
                delay_ms=delay,
                force=force,
                progress=advance,
                limit=limit,
            )


def _kinds(kind: tuple[str, ...]) -> list[Kind]:
    return [_KINDS[k] for k in kind] if kind else list(Kind)


def _report(report: EmbedReport) -> None:
    out.print(
        f"processed {report.processed}  embedded {report.embedded}  "
        f"failed {report.failed}  (dead {report.dead})  in {round(report.seconds, 3)} s"
    )
    for error in report.errors:
        out.print(f"[red]error:[/] {escape(str(error))}")


_kind_option = click.option(
    "--kind",
    type=click.Choice(list(_KINDS)),
    multiple=True,
    help="Only this kind of row (repeatable; default: all).",
)
_batch_option = click.option(
    "--batch-size",
    default=128,
    show_default=True,
    type=click.IntRange(1, 10_000),
    help="Rows claimed and embedded per round (sorted by length to cut padding).",
)


@click.command("generate")
@click.option(
    "--graph-aware/--no-graph-aware",
    default=None,
    help="Embed objects with type and fields ([Type: #person] [Role: CEO] …) "
    "or as plain text. The choice is remembered by the store.",
)
@click.option("--force", is_flag=True, help="Re-embed every row, even unchanged ones.")
@click.option(
    "--model",
    help="Switch to another embedder (provider:model); with --force "
    "this re-embeds everything with it.",
)
@_kind_option
@_batch_option
@pass_state
@handle_errors
def generate(
    state: State,
    graph_aware: bool | None,
    force: bool,
    model: str | None,
    kind: tuple[str, ...],
    batch_size: int,
) -> None:
    """Embed every pending row (and rows whose text changed) with the configured model.

    Example: kgsearch embed generate --no-graph-aware --kind objects
    """
    with engine_from(state, model=model) as engine:
        if model is not None:
            if not force:
                raise click.UsageError("--model changes every vector; add --force to confirm")
            engine.switch_model(engine.embedder)
        if graph_aware is not None:
            engine.set_graph_aware(graph_aware)
        report = _run(
            state,
            engine,
            kinds=_kinds(kind),
            batch_size=batch_size,
            delay=0,
            force=force,
            limit=None,
        )
    emit(state, report, _report)


@click.command("backfill")
@_batch_option
@click.option(
    "--delay",
    default=0,
    show_default=True,
    type=click.IntRange(0, 600_000),
    help="Milliseconds to wait between batches (rate limits).",
)
@click.option("--dry-run", is_flag=True, help="Only report what would be embedded.")
@click.option("--limit", type=click.IntRange(1), help="Stop after about this many rows.")
@_kind_option
@pass_state
@handle_errors
def backfill(
    state: State,
    batch_size: int,
    delay: int,
    dry_run: bool,
    limit: int | None,
    kind: tuple[str, ...],
) -> None:
    """Embed rows that have no current embedding, batch by batch; safe to kill and resume.

    Example: kgsearch embed backfill --batch-size 100 --delay 100 --project demo
    """
    with engine_from(state) as engine:
        if dry_run:
            status = engine.embedding_status(project=state.project)
            todo = {_PLURAL[r.kind.value]: r.pending + r.failed for r in status.rows}
            emit(
                state,
                {"dry_run": True, "would_embed": todo, "total": sum(todo.values())},
                lambda v: out.print(f"would embed {v['total']} rows: {v['would_embed']}"),
            )
            return
        report = _run(
            state,
            engine,
            kinds=_kinds(kind),
            batch_size=batch_size,
            delay=delay,
            force=False,
            limit=limit,
        )
        total = engine.embedding_status(project=state.project).total
    emit(state, {**report.model_dump(mode="json"), "total": total}, lambda _: _report(report))


@click.command("worker")
@click.option(
    "--poll",
    default=5.0,
    show_default=True,
    type=click.FloatRange(0.1, 3600),
    help="Seconds to wait before looking again when nothing is due.",
)
@click.option(
    "--until-idle", is_flag=True, help="Exit once nothing is due instead of waiting for more."
)
@_kind_option
@_batch_option
@pass_state
@handle_errors
def worker(
    state: State, poll: float, until_idle: bool, kind: tuple[str, ...], batch_size: int
) -> None:
    """Run a long-lived embedding worker; start as many as you like, on any machines.

    Each batch is claimed atomically (on PostgreSQL with FOR UPDATE SKIP LOCKED), so
    concurrent workers never embed the same row. A worker that is killed leaves only
    a lease on its batch, which expires after 30 s and makes those rows claimable by
    the others. Ctrl-C or SIGTERM stops the worker after its current batch (a second
    Ctrl-C interrupts the batch).

    Example: kgsearch --db postgresql://kg@db/kg embed worker --batch-size 256
    """
    stop = threading.Event()

    def request_stop(signum: int, frame: object) -> None:
        if signum == signal.SIGINT and stop.is_set():
            raise KeyboardInterrupt
        stop.set()

    previous = {s: signal.signal(s, request_stop) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        with engine_from(state) as engine:

            def log(total: EmbedReport) -> None:
                if not state.as_json:
                    console.print(
                        f"embedded {total.embedded}  failed {total.failed}  "
                        f"(dead {total.dead})  batches {total.batches}"
                    )

            try:
                report = engine.embed_worker(
                    kinds=_kinds(kind),
                    project=state.project,
                    batch_size=batch_size,
                    poll_seconds=poll,
                    until_idle=until_idle,
                    should_stop=stop.is_set,
                    on_batch=log,
                )
            except KeyboardInterrupt:
                report = EmbedReport(errors=["interrupted"])
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    emit(state, report, _report)


@click.command("preview")
@click.argument("id")
@pass_state
@handle_errors
def preview(state: State, id: str) -> None:
    """Print the exact text that is (or would be) embedded for a row (an id, or an
    object's TYPE/KEY), without embedding.

    Example: kgsearch embed preview "Movie/Jesse James"
    """
    with engine_from(state) as engine:
        emit(state, engine.preview(row_id(engine, id)), lambda v: out.print(v.text, markup=False))


def status_in_process(state: State) -> None:
    """``kgsearch embed status`` counted by the engine (:mod:`kgsearch.cli.embed`)."""
    settings = load_settings()
    with engine_from(state, settings=settings) as engine:
        report = engine.embedding_status(project=state.project)
        queries = engine.query_embedding or planned_queries(
            report.model, settings.embed.fast_queries
        )
        emit(state, report.model_dump(mode="json"), lambda v: render_status(v, queries))


@click.command("retry")
@click.option("--dead", is_flag=True, help="Also re-queue dead rows (given up on).")
@pass_state
@handle_errors
def retry(state: State, dead: bool) -> None:
    """Re-queue failed rows now (and dead ones with --dead); run `embed generate` next.

    Example: kgsearch embed retry --dead
    """
    with engine_from(state) as engine:
        n = engine.retry_failed(dead=dead, project=state.project)
    emit(state, {"requeued": n}, lambda v: out.print(f"re-queued {v['requeued']} row(s)"))
