"""CLI command ``stats``: read-only without the engine, through a running server, or
by the engine.

Light like ``search`` (click, rich, sqlite3, the stdlib HTTP client): a SQLite store
of the current schema is counted read-only in process without the engine
(:mod:`kgsearch.cli.readonly`); another store is asked of a running ``kgsearch serve``
of it (:func:`kgsearch.cli.remote.stats_via_server`); only when neither answers is the
engine built (:mod:`kgsearch.cli.graph`, imported only then).
"""

from __future__ import annotations

import click

from kgsearch.cli.output import State, emit, handle_errors, pass_state
from kgsearch.cli.readonly import stats_read_only
from kgsearch.cli.remote import SERVER_ENV, stats_via_server
from kgsearch.cli.render import render_stats

__all__ = ["stats"]


@click.command()
@click.option(
    "--server",
    envvar=SERVER_ENV,
    metavar="URL",
    help="Ask this kgsearch server (env KGSEARCH_SERVER; default: count a SQLite store "
    "here, another store on the running `kgsearch serve` of it, if any).",
)
@click.option(
    "--in-process", is_flag=True, help="Count in this process even if a server is running."
)
@pass_state
@handle_errors
def stats(state: State, server: str | None, in_process: bool) -> None:
    """Row counts of the project and what the store was built with.

    A SQLite store is counted here, read-only; another store by the running `kgsearch
    serve` of it when there is one (as `kgsearch search` is), else here. --server
    names a server to ask first.

    Example: kgsearch stats --json
    """
    found = None
    if server is not None and not in_process:
        found, _ = stats_via_server(db=state.db, project=state.project, server=server)
    if found is None:
        found = stats_read_only(state)
    if found is None and server is None and not in_process:
        found, _ = stats_via_server(db=state.db, project=state.project)
    if found is not None:
        emit(state, found, render_stats)
        return
    from kgsearch.cli.graph import stats_in_process

    stats_in_process(state)
