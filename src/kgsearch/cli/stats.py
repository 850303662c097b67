"""CLI command ``stats``: through a running server when there is one, else in process.

Light like ``search`` (click, rich, the stdlib HTTP client): answered by a running
``kgsearch serve`` of the same store (:func:`kgsearch.cli.remote.stats_via_server`),
it never imports the engine; the in-process count (:mod:`kgsearch.cli.graph`) is
imported only when it runs.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import click

from kgsearch.cli.output import State, emit, handle_errors, out, pass_state, table
from kgsearch.cli.remote import stats_via_server

__all__ = ["render_stats", "stats"]


@click.command()
@click.option(
    "--in-process", is_flag=True, help="Count in this process even if a server is running."
)
@pass_state
@handle_errors
def stats(state: State, in_process: bool) -> None:
    """Row counts of the project and what the store was built with.

    Answered by a running `kgsearch serve` of the same store when there is one (as
    `kgsearch search` is), else counted here.

    Example: kgsearch stats --json
    """
    if not in_process:
        found, _ = stats_via_server(db=state.db, project=state.project)
        if found is not None:
            emit(state, found, render_stats)
            return
    from kgsearch.cli.graph import stats_in_process

    stats_in_process(state)


def render_stats(value: Mapping[str, Any]) -> None:
    """Print a project's stats (``Engine.stats`` as JSON) as a table."""
    grid = table(
        "what", "count", title=f"project {value['project']} — {value['store']}", show_header=False
    )
    for k, n in value["counts"].items():
        grid.add_row(k, str(n))
    grid.add_row("embedding model", str(value["embedding_model"] or "(none yet)"))
    grid.add_row("projects", ", ".join(value["projects"]) or "(none)")
    out.print(grid)
