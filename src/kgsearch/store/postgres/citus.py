"""A PostgreSQL store laid out on a Citus cluster, through its coordinator.

:func:`distribute` turns a migrated store's tables into the layout of docs/scaling.md:
every per-project table (communities included) distributed by ``project`` and
co-located with ``objects``, ``cache`` distributed on its own by ``namespace``, and the
small tables (:data:`~kgsearch.store.postgres.schema.REFERENCE_TABLES`) copied to every
node. It runs again harmlessly: a table already laid out is left as it is, and a table
holding rows has them moved to its shards. :func:`distributed` tells a store whether it
is on Citus, so the few statements Citus refuses take a form it accepts there and only
there: BM25 reads no column statistics (see :mod:`kgsearch.store.postgres.lexical`), a
queue claim for every project runs as one claim per project (``claims_by_project`` of
:mod:`kgsearch.store.queues`), and a row estimate is read from the worker's plan
(:func:`plan_rows`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kgsearch.errors import ConfigError
from kgsearch.store.postgres.connection import Connection
from kgsearch.store.postgres.schema import DISTRIBUTED_TABLES, REFERENCE_TABLES

__all__ = ["Placement", "distribute", "distributed", "plan_rows"]


# The table every per-project table is co-located with: a project's rows of every
# table sit on one worker, so a statement naming one project is a router query.
_ANCHOR = "objects"


@dataclass(frozen=True)
class Placement:
    """Where one table of the store went.

    Attributes:
        table: The table's name.
        layout: ``distributed`` or ``reference``.
        column: The distribution column (``None`` for a reference table).
        changed: Whether this call laid it out (``False``: it already was).
    """

    table: str
    layout: str
    column: str | None
    changed: bool


def _citus_installed(db: Connection) -> bool:
    row = db.one("SELECT to_regclass('pg_catalog.pg_dist_partition') IS NOT NULL AS c")
    return bool(row and row["c"])


def distributed(db: Connection) -> bool:
    """Whether the store's ``objects`` table is a Citus distributed table.

    One catalog lookup on a server without Citus, two with it.
    """
    if not _citus_installed(db):
        return False
    row = db.one(
        "SELECT EXISTS (SELECT 1 FROM pg_dist_partition WHERE logicalrelid = to_regclass(%s)) AS d",
        (f'"{db.schema}".{_ANCHOR}',),
    )
    return bool(row and row["d"])


def _laid_out(db: Connection) -> dict[str, str]:
    """The store's tables Citus already knows, with their partition method (``h``
    hash-distributed, ``n`` reference)."""
    rows = db.all(
        "SELECT c.relname AS t, p.partmethod AS m FROM pg_dist_partition p "
        "JOIN pg_class c ON c.oid = p.logicalrelid "
        "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = %s",
        (db.schema,),
    )
    return {r["t"]: r["m"] for r in rows}


def distribute(db: Connection, *, shard_count: int | None = None) -> list[Placement]:
    """Lay out every table of the (migrated) store on Citus.

    Args:
        db: The store's connection, to the cluster's coordinator.
        shard_count: Shards per distributed table (Citus's ``citus.shard_count``,
            32 by default, when ``None``); co-located tables share the anchor's.

    Returns:
        One :class:`Placement` per table, per-project tables first.

    Raises:
        ConfigError: The server has no Citus extension, or the store is not migrated.
    """
    if not _citus_installed(db):
        raise ConfigError(
            "the server has no Citus: run `CREATE EXTENSION citus` on the coordinator "
            "(as a superuser) and add its workers first"
        )
    if db.one("SELECT to_regclass(%s) AS t", (f'"{db.schema}".{_ANCHOR}',)) == {"t": None}:
        raise ConfigError(f"schema {db.schema!r} holds no kgsearch store: run `kgsearch init`")
    done = _laid_out(db)
    # the anchor first: the others are co-located with it
    order = sorted(DISTRIBUTED_TABLES, key=lambda t: (t != _ANCHOR, DISTRIBUTED_TABLES[t], t))
    out: list[Placement] = []
    for table in order:
        column = DISTRIBUTED_TABLES[table]
        name = f'"{db.schema}".{table}'
        if table not in done:
            if column != "project":
                colocate = "none"
            elif table == _ANCHOR:
                colocate = "default"
            else:
                colocate = f"{db.schema}.{_ANCHOR}"
            count = shard_count if table == _ANCHOR or column != "project" else None
            db.execute(
                "SELECT create_distributed_table(%s::regclass, %s, colocate_with => %s"
                + (", shard_count => %s)" if count is not None else ")"),
                (name, column, colocate, *([count] if count is not None else [])),
            )
            _drop_local_rows(db, name)
        out.append(Placement(table, "distributed", column, table not in done))
    for table in REFERENCE_TABLES:
        name = f'"{db.schema}".{table}'
        if table not in done:
            db.execute("SELECT create_reference_table(%s::regclass)", (name,))
            _drop_local_rows(db, name)
        out.append(Placement(table, "reference", None, table not in done))
    return out


def _drop_local_rows(db: Connection, name: str) -> None:
    """Free the coordinator's copy of rows Citus has moved to the shards."""
    db.execute("SELECT truncate_local_data_after_distributing_table(%s::regclass)", (name,))


def plan_rows(plan: dict[str, Any]) -> float:
    """The rows the top node of an ``EXPLAIN (FORMAT JSON)`` plan estimates.

    For a Citus router query that is the plan of the one worker running it: Citus's
    own node estimates 0 rows, which would make every vector leg scan its rows exactly
    and never use the HNSW index. A plan without Citus is read as it is.
    """
    tasks = plan.get("Distributed Query", {}).get("Job", {}).get("Tasks") or []
    if len(tasks) == 1 and tasks[0].get("Remote Plan"):
        return float(tasks[0]["Remote Plan"][0][0]["Plan"]["Plan Rows"])
    return float(plan["Plan Rows"])
