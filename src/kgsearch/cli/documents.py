"""CLI commands over ingested documents (sources): list them, delete them cleanly."""

from __future__ import annotations

import click
from rich.table import Table

from kgsearch.cli.common import State, emit, engine_from, handle_errors, out, pass_state
from kgsearch.model import Page
from kgsearch.reports import DeleteReport

__all__ = ["documents"]


@click.group()
def documents() -> None:
    """List ingested documents and delete them with everything built from them.

    Example: kgsearch documents delete doc:notes.md
    """


@documents.command("list")
@click.option("--limit", "-n", default=20, show_default=True, help="Rows per page.")
@click.option("--cursor", help="Continue from a previous page's next_cursor.")
@pass_state
@handle_errors
def documents_list(state: State, limit: int, cursor: str | None) -> None:
    """List documents (sources), oldest first, with their chunk counts.

    Example: kgsearch documents list -n 50
    """
    with engine_from(state) as engine:
        page = engine.list_rows("source", limit=limit, cursor=cursor)
    emit(state, page, _render_documents)


def _render_documents(page: Page) -> None:
    table = Table("id", "title", "chunks", "format")
    for source in page.items:
        meta = source.metadata
        table.add_row(
            source.id,
            source.title or "",
            str(len(meta.get("chunk_ids", []))),
            str(meta.get("format", "")),
        )
    out.print(table)
    if page.next_cursor:
        out.print(f"more: --cursor {page.next_cursor}")


@documents.command("delete")
@click.argument("ids", nargs=-1, required=True)
@pass_state
@handle_errors
def documents_delete(state: State, ids: tuple[str, ...]) -> None:
    """Delete documents and everything built from them.

    Their chunks, extraction records and mention links go; objects and
    relationships no other document supports go; the rest have their descriptions,
    keywords, weights and source chunks rebuilt from the remaining documents'
    extractions (no model call) and are re-embedded if their text changed.
    Unknown ids are skipped.

    Example: kgsearch documents delete doc:notes.md
    """
    with engine_from(state) as engine:
        report = engine.delete_documents(list(ids))
    emit(state, report, _render_deleted)


def _render_deleted(report: DeleteReport) -> None:
    out.print(
        f"Deleted {report.sources} document(s) and {report.chunks} chunk(s); "
        f"graph: {report.objects_deleted} object(s) and {report.relationships_deleted} "
        f"relationship(s) removed, {report.objects_updated} object(s) and "
        f"{report.relationships_updated} relationship(s) rebuilt"
    )
