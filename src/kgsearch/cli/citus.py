"""``kgsearch citus distribute``: lay a PostgreSQL store out on a Citus cluster."""

from __future__ import annotations

from dataclasses import asdict

import click

from kgsearch.cli.common import State, emit, handle_errors, load_settings, out, pass_state, table
from kgsearch.errors import ConfigError
from kgsearch.store import connect
from kgsearch.store.postgres import PostgresStore
from kgsearch.store.postgres.citus import distribute as distribute_store

__all__ = ["citus"]


@click.group()
def citus() -> None:
    """Run a PostgreSQL store on a Citus cluster (docs/scaling.md).

    Example: kgsearch --db postgresql://kg@coordinator/kg citus distribute
    """


@citus.command("distribute")
@click.option(
    "--shard-count",
    type=click.IntRange(1, 4096),
    help="Shards per distributed table (default: the cluster's citus.shard_count, 32).",
)
@click.option(
    "--spread",
    is_flag=True,
    help="Spread each project's relationships and chunks over every worker "
    "(distributed by row id) instead of keeping a project on one worker.",
)
@pass_state
@handle_errors
def distribute(state: State, shard_count: int | None, spread: bool) -> None:
    """Lay out every table of the store on Citus, creating the store if needed.

    Run it through the coordinator, once the cluster has its workers and the citus and
    vector extensions. Per-project tables (communities included) are distributed by
    project and co-located, the LLM cache by namespace, and the small tables become
    reference tables; an existing store's rows move to the workers. Running it again
    changes nothing. Restart kgsearch processes that had the store open before.

    With --spread, relationships and chunks are distributed by row id instead, so one
    project larger than a worker spreads over all of them (searches fan out to every
    shard and merge). Choose it when the store is first laid out: a distributed table
    keeps its layout (copy the store into a new one with kgsearch migrate).

    Example: kgsearch --db postgresql://kg@coordinator/kg citus distribute --shard-count 64
    """
    url = state.db or load_settings().store.url
    store = connect(url)
    try:
        if not isinstance(store, PostgresStore):
            raise ConfigError(
                "citus distribute needs a PostgreSQL store: pass --db postgresql://… "
                "(the cluster's coordinator)"
            )
        placed = distribute_store(store.db, shard_count=shard_count, spread=spread or None)
    finally:
        store.close()
    emit(state, {"tables": [asdict(p) for p in placed]}, _render)


def _render(value: dict[str, list[dict[str, object]]]) -> None:
    rows = table("table", "layout", "column", "this run")
    for p in value["tables"]:
        rows.add_row(
            str(p["table"]),
            str(p["layout"]),
            str(p["column"] or ""),
            "laid out" if p["changed"] else "already",
        )
    out.print(rows)
