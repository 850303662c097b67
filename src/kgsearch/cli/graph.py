"""CLI commands over the graph: init, import, export, config; and what ``stats``,
``objects`` and ``relationships`` do by the engine when the read-only path cannot
answer (the commands themselves are :mod:`kgsearch.cli.stats` and
:mod:`kgsearch.cli.rows`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
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
    row_id,
)
from kgsearch.cli.render import render_stats
from kgsearch.config import config_path
from kgsearch.errors import InvalidRequest
from kgsearch.model import Filters
from kgsearch.urls import redact_url

__all__ = [
    "config",
    "delete_objects",
    "delete_relationships",
    "export_cmd",
    "import_cmd",
    "init",
    "object_by_ref",
    "objects_page",
    "relationship_by_id",
    "relationships_page",
    "stats_in_process",
]


@click.command()
@pass_state
@handle_errors
def init(state: State) -> None:
    """Create (or upgrade) the store and print what it holds.

    Example: kgsearch --db graph.db init
    """
    with engine_from(state, create=True) as engine:
        emit(state, engine.stats().model_dump(mode="json"), render_stats)


@click.command("import")
@click.argument("files", nargs=-1, required=True, type=click.Path(path_type=Path))
@pass_state
@handle_errors
def import_cmd(state: State, files: tuple[Path, ...]) -> None:
    """Import JSONL, JSON graph or CSV files, all or nothing.

    Bad records are listed with file, line and reason, and nothing is written.
    Re-importing the same files creates no duplicates. See docs/data-format.md.

    Example: kgsearch import data/sample/metaqa-movies.jsonl
    """
    with engine_from(state, create=True) as engine, _progress("importing") as (progress, task):

        def advance(n: int, total: int | None) -> None:
            progress.update(task, advance=n, total=total)

        counts = engine.import_files(list(files), progress=advance)
    emit(
        state,
        {"imported": counts, "project": engine.project},
        lambda v: out.print(
            f"Imported into project [bold]{v['project']}[/]: "
            + ", ".join(f"{n} {k}" for k, n in v["imported"].items() if n)
        ),
    )


@click.command("export")
@click.argument("path", type=click.Path(path_type=Path, dir_okay=False))
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["jsonl", "json"]),
    default=None,
    help="Output format (default: from the file extension, else jsonl).",
)
@pass_state
@handle_errors
def export_cmd(state: State, path: Path, fmt: str | None) -> None:
    """Export a project to a file that imports back identically.

    Example: kgsearch export backup.jsonl
    """
    suffix = path.suffix.lower()
    if fmt is None and suffix in (".csv", ".tsv"):
        raise InvalidRequest(
            f"export writes JSONL or JSON, not {suffix[1:].upper()}: name the file "
            f"{path.with_suffix('.jsonl').name} (or .json); `kgsearch import` reads it back"
        )
    chosen = fmt or ("json" if suffix == ".json" else "jsonl")
    with engine_from(state) as engine:
        counts = engine.export(path, fmt="json" if chosen == "json" else "jsonl")
    emit(
        state,
        {"exported": counts, "path": str(path)},
        lambda v: out.print(
            f"Wrote {v['path']}: " + ", ".join(f"{n} {k}s" for k, n in v["exported"].items())
        ),
    )


def _progress(label: str) -> Any:
    class _Ctx:
        def __enter__(self) -> tuple[Progress, Any]:
            self.progress = Progress(
                TextColumn(f"[bold]{label}"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("{task.speed} rec/s"),
                TimeElapsedColumn(),
                TimeRemainingColumn(),
                console=console,
                transient=True,
            )
            self.progress.__enter__()
            return self.progress, self.progress.add_task(label, total=None)

        def __exit__(self, *exc: object) -> None:
            self.progress.__exit__(None, None, None)

    return _Ctx()


def objects_page(
    state: State, types: tuple[str, ...], labels: tuple[str, ...], limit: int, cursor: str | None
) -> dict[str, Any]:
    """``kgsearch objects list`` by the engine: one page (``Page`` as JSON)."""
    filters = Filters(object_types=list(types) or None, labels=list(labels) or None)
    with engine_from(state) as engine:
        page = engine.list_rows("object", limit=limit, cursor=cursor, filters=filters)
    return page.model_dump(mode="json")


def object_by_ref(state: State, ref: str) -> dict[str, Any]:
    """``kgsearch objects get`` by the engine: the object an id or TYPE/KEY names."""
    with engine_from(state) as engine:
        return engine.get_object(row_id(engine, ref)).model_dump(mode="json")


def delete_objects(state: State, refs: tuple[str, ...]) -> None:
    """``kgsearch objects delete``: every reference must name an object."""
    with engine_from(state) as engine:
        ids = [row_id(engine, ref) for ref in refs]
        for id_ in ids:
            engine.get_object(id_)  # NotFound names the reference given
        n = engine.delete("object", ids)
    emit(state, {"deleted": n}, lambda v: out.print(f"Deleted {v['deleted']} object(s)"))


def relationships_page(
    state: State, types: tuple[str, ...], limit: int, cursor: str | None
) -> dict[str, Any]:
    """``kgsearch relationships list`` by the engine: one page (``Page`` as JSON)."""
    filters = Filters(relationship_types=list(types) or None)
    with engine_from(state) as engine:
        page = engine.list_rows("relationship", limit=limit, cursor=cursor, filters=filters)
    return page.model_dump(mode="json")


def relationship_by_id(state: State, id: str) -> dict[str, Any]:
    """``kgsearch relationships get`` by the engine."""
    with engine_from(state) as engine:
        return engine.get_relationship(id).model_dump(mode="json")


def delete_relationships(state: State, ids: tuple[str, ...]) -> None:
    """``kgsearch relationships delete``."""
    with engine_from(state) as engine:
        n = engine.delete("relationship", list(ids))
    emit(state, {"deleted": n}, lambda v: out.print(f"Deleted {v['deleted']} relationship(s)"))


def stats_in_process(state: State) -> None:
    """``kgsearch stats`` counted in this process (:mod:`kgsearch.cli.stats`)."""
    with engine_from(state) as engine:
        emit(state, engine.stats().model_dump(mode="json"), render_stats)


@click.group()
def config() -> None:
    """Show the effective configuration.

    Example: kgsearch config show
    """


@config.command("show")
@pass_state
@handle_errors
def config_show(state: State) -> None:
    """Print effective settings (flags > env > kgsearch.toml > defaults), secrets masked.

    Example: KGSEARCH_EMBED__MODEL=fake:64 kgsearch config show
    """
    data = load_settings().masked()
    if state.db:
        data["store"]["url"] = redact_url(state.db)
    if state.project:
        data["store"]["project"] = state.project
    click.echo(json.dumps(data, indent=None if state.as_json else 2))


@config.command("path")
def config_path_cmd() -> None:
    """Print the TOML file settings are read from (set KGSEARCH_CONFIG to move it).

    Example: kgsearch config path
    """
    path = config_path()
    click.echo(f"{path.resolve()}{'' if path.exists() else '  (not present)'}")
