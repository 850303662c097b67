"""CLI commands ``objects`` and ``relationships``: list, show and delete graph rows.

Light like ``stats``: on a SQLite store of the current schema, ``get`` and ``list``
read the file read-only in process without the engine
(:func:`kgsearch.cli.readonly.rows_read_only`), and print what the engine would, byte
for byte. Anything else (another store, an older or newer schema, a row only the
model decodes, ``delete``) builds the engine (:mod:`kgsearch.cli.graph`, imported
only then).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import click

from kgsearch.cli import output
from kgsearch.cli.output import State, emit, handle_errors, pass_state, table
from kgsearch.cli.readonly import rows_read_only
from kgsearch.errors import NotFound
from kgsearch.store.sqlite.readonly_rows import ReadOnlyRows

__all__ = ["objects", "relationships", "render_objects", "render_relationships"]


@click.group()
def objects() -> None:
    """List, show and delete objects (graph nodes).

    Example: kgsearch objects list --type Person
    """


@objects.command("list")
@click.option("--type", "types", multiple=True, help="Only objects of this type (repeatable).")
@click.option("--label", "labels", multiple=True, help="Only objects with this label.")
@click.option("--limit", "-n", default=20, show_default=True, help="Rows per page.")
@click.option("--cursor", help="Continue from a previous page's next_cursor.")
@pass_state
@handle_errors
def objects_list(
    state: State, types: tuple[str, ...], labels: tuple[str, ...], limit: int, cursor: str | None
) -> None:
    """List objects, oldest first, a page at a time.

    Example: kgsearch objects list --type Person -n 5
    """
    page = rows_read_only(
        state,
        lambda rows, project: rows.list_objects(
            project, limit=limit, cursor=cursor, types=types, labels=labels
        ),
    )
    if page is None:
        from kgsearch.cli.graph import objects_page

        page = objects_page(state, types, labels, limit, cursor)
    emit(state, page, render_objects)


@objects.command("get")
@click.argument("ref")
@pass_state
@handle_errors
def objects_get(state: State, ref: str) -> None:
    """Show one object by id, or by TYPE/KEY.

    Example: kgsearch objects get "Movie/Jesse James"
    """
    found = rows_read_only(state, lambda rows, project: _object(rows, project, ref))
    if found is None:
        from kgsearch.cli.graph import object_by_ref

        found = object_by_ref(state, ref)
    emit(state, found)


def _object(rows: ReadOnlyRows, project: str, ref: str) -> dict[str, Any]:
    """The object ``ref`` names (an id, or TYPE/KEY tried first) as the engine finds
    it (:func:`kgsearch.cli.common.row_id`, ``Engine.get_object``).

    Raises:
        NotFound: No live object has this id (or type and key) in the project.
    """
    id_ = ref
    type_, _, key = ref.partition("/")
    if type_ and key:
        id_ = rows.object_id(project, type_, key) or ref
    found = rows.get_object(project, id_)
    if found is None:
        raise NotFound(f"object {id_!r} not found in project {project!r}")
    return found


@objects.command("delete")
@click.argument("refs", nargs=-1, required=True)
@pass_state
@handle_errors
def objects_delete(state: State, refs: tuple[str, ...]) -> None:
    """Soft-delete objects by id or TYPE/KEY (and their relationships); reads never
    show them again. An id or TYPE/KEY that names no object is an error (exit 1).

    Example: kgsearch objects delete "Person/rob"
    """
    from kgsearch.cli.graph import delete_objects

    delete_objects(state, refs)


@click.group()
def relationships() -> None:
    """List, show and delete relationships (graph edges).

    Example: kgsearch relationships list --type directed_by
    """


@relationships.command("list")
@click.option("--type", "types", multiple=True, help="Only relationships of this type.")
@click.option("--limit", "-n", default=20, show_default=True, help="Rows per page.")
@click.option("--cursor", help="Continue from a previous page's next_cursor.")
@pass_state
@handle_errors
def relationships_list(
    state: State, types: tuple[str, ...], limit: int, cursor: str | None
) -> None:
    """List relationships with their triplet text, a page at a time.

    Example: kgsearch relationships list --type directed_by -n 5
    """
    page = rows_read_only(
        state,
        lambda rows, project: rows.list_relationships(
            project, limit=limit, cursor=cursor, types=types
        ),
    )
    if page is None:
        from kgsearch.cli.graph import relationships_page

        page = relationships_page(state, types, limit, cursor)
    emit(state, page, render_relationships)


@relationships.command("get")
@click.argument("id")
@pass_state
@handle_errors
def relationships_get(state: State, id: str) -> None:
    """Show one relationship by id.

    Example: kgsearch relationships get 3b1d...
    """
    found = rows_read_only(state, lambda rows, project: _relationship(rows, project, id))
    if found is None:
        from kgsearch.cli.graph import relationship_by_id

        found = relationship_by_id(state, id)
    emit(state, found)


def _relationship(rows: ReadOnlyRows, project: str, id: str) -> dict[str, Any]:
    """The relationship ``id`` as ``Engine.get_relationship`` finds it.

    Raises:
        NotFound: No live relationship has this id in the project.
    """
    found = rows.get_relationship(project, id)
    if found is None:
        raise NotFound(f"relationship {id!r} not found in project {project!r}")
    return found


@relationships.command("delete")
@click.argument("ids", nargs=-1, required=True)
@pass_state
@handle_errors
def relationships_delete(state: State, ids: tuple[str, ...]) -> None:
    """Soft-delete relationships.

    Example: kgsearch relationships delete 3b1d...
    """
    from kgsearch.cli.graph import delete_relationships

    delete_relationships(state, ids)


def render_objects(page: Mapping[str, Any]) -> None:
    """Print a page of objects (``Page`` as JSON) as a table."""
    grid = table("id", "type", "key", "status")
    for o in page["items"]:
        grid.add_row(o["id"], o["type"], o["key"], o["embedding"]["status"])
    output.out.print(grid)
    if page["next_cursor"]:
        output.out.print(f"next page: --cursor {page['next_cursor']}")


def render_relationships(page: Mapping[str, Any]) -> None:
    """Print a page of relationships (``Page`` as JSON) as a table."""
    grid = table("id", "type", "text", "status")
    for r in page["items"]:
        grid.add_row(r["id"], r["type"], r["embedding"]["text"] or "", r["embedding"]["status"])
    output.out.print(grid)
    if page["next_cursor"]:
        output.out.print(f"next page: --cursor {page['next_cursor']}")
