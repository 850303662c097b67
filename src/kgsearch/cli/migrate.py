"""``kgsearch migrate``: copy a store into another, embeddings included."""

from __future__ import annotations

from typing import Any

import click
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from kgsearch.cli.common import (
    State,
    console,
    emit,
    handle_errors,
    missing_sqlite_file,
    out,
    pass_state,
)
from kgsearch.errors import NotFound
from kgsearch.migrate import migrate_store
from kgsearch.store import connect

__all__ = ["migrate"]


@click.command("migrate")
@click.option("--from", "source_url", required=True, help="Store to copy from (URL or path).")
@click.option("--to", "target_url", required=True, help="Store to copy into (URL or path).")
@click.option(
    "--project",
    "projects",
    multiple=True,
    help="Copy only this project (repeatable; default: every project).",
)
@pass_state
@handle_errors
def migrate(state: State, source_url: str, target_url: str, projects: tuple[str, ...]) -> None:
    """Copy every project of one store into another, SQLite ⇄ PostgreSQL.

    Rows stream page by page into one transaction on the target, so a failure leaves
    it unchanged. Ids are kept; current embeddings are copied, never recomputed
    (stale, failed and dead rows arrive pending), and so are API keys. The copy is
    verified before it commits by comparing row counts and embedded counts per kind
    and API keys; a difference leaves the target unchanged and exits with status 1.

    Example: kgsearch migrate --from sqlite:///kg.db --to postgresql://kg@db/kg
    """
    if (missing := missing_sqlite_file(source_url)) is not None:
        raise NotFound(f"no store at {missing}: check --from", details={"db": missing})
    source = connect(source_url)
    try:
        target = connect(target_url)
        try:
            wanted = list(projects) or source.projects()
            total = sum(sum(source.counts(p).values()) for p in wanted)
            with Progress(
                TextColumn("[bold]copying {task.fields[kind]}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                console=console,
                disable=state.as_json,
            ) as bar:
                task = bar.add_task("copy", total=total or None, kind="rows")

                def advance(kind: str, n: int) -> None:
                    bar.update(task, advance=n, kind=kind)

                report = migrate_store(
                    source, target, projects=list(projects) or None, progress=advance
                )
        finally:
            target.close()
    finally:
        source.close()
    emit(state, report.as_dict(), _render)


def _render(value: dict[str, Any]) -> None:
    for project, counts in value["projects"].items():
        vectors = value["vectors"].get(project, {})
        out.print(
            f"[bold]{project}[/]: "
            + ", ".join(f"{n} {kind}" for kind, n in counts.items())
            + "; vectors copied: "
            + (", ".join(f"{n} {kind}s" for kind, n in vectors.items()) or "none")
        )
    if value["api_keys"]:
        out.print(f"API keys copied: {value['api_keys']}")
    out.print("[green]verified[/]: counts match" if value["verified"] else "[red]mismatch[/]")
