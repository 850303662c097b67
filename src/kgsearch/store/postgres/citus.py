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

**Spread projects.** ``distribute(…, spread=True)`` (``kgsearch citus distribute
--spread``) distributes the big tables of :data:`SPREAD_TABLES` by row ``id`` instead,
co-located with each other: one project's relationships and chunks (with their vectors
and lexical index) then sit on every worker, and a search leg on them is a multi-shard
query whose ``ORDER BY … LIMIT`` Citus runs on each shard and merges. Their primary key
becomes ``(project, id)`` (Citus wants the distribution column in every unique key; the
rows' ``(project, seq)`` is then a plain index). ``objects`` keeps its project layout: it
has two independent unique keys, ``(project, id)`` and ``(project, type, key)``, and no
single column could hold both. The layout is chosen when a table is first laid out
(a new store, or a plain PostgreSQL one whose rows move to the shards): Citus changes
no distributed table's column in place when it has an identity column, so an already
distributed store is copied into a new one instead (``kgsearch migrate``).
:func:`spread_tables` tells a store which of its tables are spread; a claim of their
queue then runs per shard (:func:`shard_groups`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from kgsearch.errors import ConfigError
from kgsearch.store.postgres.connection import Connection
from kgsearch.store.postgres.schema import (
    DISTRIBUTED_TABLES,
    REFERENCE_TABLES,
    VECTOR_WRITE_TRIGGERS,
)

__all__ = [
    "SPREAD_TABLES",
    "Placement",
    "distribute",
    "distributed",
    "plan_rows",
    "shard_groups",
    "spread_tables",
]


# The table every per-project table is co-located with: a project's rows of every
# table sit on one worker, so a statement naming one project is a router query.
_ANCHOR = "objects"
# The big tables a spread store distributes by row id, co-located with the first.
SPREAD_TABLES = ("relationships", "chunks")


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


def _laid_out(db: Connection) -> dict[str, str | None]:
    """The store's tables Citus already knows, with their distribution column
    (``None`` for a reference table)."""
    rows = db.all(
        "SELECT c.relname AS t, column_to_column_name(p.logicalrelid, p.partkey) AS col "
        "FROM pg_dist_partition p JOIN pg_class c ON c.oid = p.logicalrelid "
        "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = %s",
        (db.schema,),
    )
    return {r["t"]: r["col"] for r in rows}


def spread_tables(db: Connection) -> frozenset[str]:
    """The store's tables distributed by row id (a spread store), none without Citus."""
    if not _citus_installed(db):
        return frozenset()
    laid = _laid_out(db)
    return frozenset(t for t in SPREAD_TABLES if laid.get(t) == "id")


def distribute(
    db: Connection, *, shard_count: int | None = None, spread: bool | None = None
) -> list[Placement]:
    """Lay out every table of the (migrated) store on Citus.

    Args:
        db: The store's connection, to the cluster's coordinator.
        shard_count: Shards per distributed table (Citus's ``citus.shard_count``,
            32 by default, when ``None``); co-located tables share the anchor's.
        spread: ``True`` distributes the tables of :data:`SPREAD_TABLES` by row id,
            so one project's rows of them go to every worker; ``False`` by project;
            ``None`` keeps the layout of tables already laid out and lays out new
            ones by project.

    Returns:
        One :class:`Placement` per table, per-project tables first.

    Raises:
        ConfigError: The server has no Citus extension, the store is not migrated, or
            ``spread`` asks another layout of tables already distributed (nothing is
            changed then).
    """
    if not _citus_installed(db):
        raise ConfigError(
            "the server has no Citus: run `CREATE EXTENSION citus` on the coordinator "
            "(as a superuser) and add its workers first"
        )
    if db.one("SELECT to_regclass(%s) AS t", (f'"{db.schema}".{_ANCHOR}',)) == {"t": None}:
        raise ConfigError(f"schema {db.schema!r} holds no kgsearch store: run `kgsearch init`")
    done = _laid_out(db)
    columns = dict(DISTRIBUTED_TABLES)
    for table in SPREAD_TABLES:
        if spread or (spread is None and done.get(table) == "id"):
            columns[table] = "id"
    # each group's anchor first: the others are co-located with it
    anchors = (_ANCHOR, SPREAD_TABLES[0])
    moved = [t for t in SPREAD_TABLES if done.get(t, columns[t]) != columns[t]]
    if moved:
        raise ConfigError(
            f"{', '.join(moved)} already distributed by {done[moved[0]]}: Citus cannot "
            "change a distributed table's column in place (it refuses tables with an "
            "identity column); lay out a new store with the layout wanted and copy this "
            "one into it with `kgsearch migrate --from … --to …`"
        )
    out: list[Placement] = []
    for table in sorted(columns, key=lambda t: (columns[t] == "namespace", t not in anchors, t)):
        column = columns[table]
        if table not in done:
            _distribute_table(db, table, column, shard_count)
        out.append(Placement(table, "distributed", column, table not in done))
    for table in REFERENCE_TABLES:
        name = f'"{db.schema}".{table}'
        if table not in done:
            db.execute("SELECT create_reference_table(%s::regclass)", (name,))
            _drop_local_rows(db, name)
        out.append(Placement(table, "reference", None, table not in done))
    return out


def _colocate(db: Connection, table: str, column: str) -> str:
    """The ``colocate_with`` of a table distributed by ``column``."""
    if column == "project":
        return "default" if table == _ANCHOR else f"{db.schema}.{_ANCHOR}"
    if column == "id" and table != SPREAD_TABLES[0]:
        return f"{db.schema}.{SPREAD_TABLES[0]}"
    return "none"


def _distribute_table(db: Connection, table: str, column: str, shard_count: int | None) -> None:
    """Distribute a table Citus does not know yet (moving its rows to the shards)."""
    name = f'"{db.schema}".{table}'
    # Citus refuses a table with triggers: those logging vector writes for held copies
    # (schema m014) go, and a distributed store holds no vectors (store.py)
    for trigger in VECTOR_WRITE_TRIGGERS:
        db.execute(f"DROP TRIGGER IF EXISTS {trigger} ON {table}")
    if column == "id":
        _key_by_id(db, table)
    colocate = _colocate(db, table, column)
    # co-located tables share their group's shard count
    count = shard_count if colocate in ("none", "default") else None
    db.execute(
        "SELECT create_distributed_table(%s::regclass, %s, colocate_with => %s"
        + (", shard_count => %s)" if count is not None else ")"),
        (name, column, colocate, *([count] if count is not None else [])),
    )
    _drop_local_rows(db, name)


def _key_by_id(db: Connection, table: str) -> None:
    """A table's keys as a spread layout needs them: primary key ``(project, id)``, and
    ``(project, seq)`` (the listings' order) a plain index."""
    with db.transaction():
        db.execute(f"ALTER TABLE {table} DROP CONSTRAINT IF EXISTS {table}_pkey")
        db.execute(f"ALTER TABLE {table} DROP CONSTRAINT IF EXISTS {table}_project_id_key")
        db.execute(f"ALTER TABLE {table} ADD CONSTRAINT {table}_pkey PRIMARY KEY (project, id)")
        db.execute(f"CREATE INDEX IF NOT EXISTS {table}_project_seq ON {table} (project, seq)")


def shard_groups(db: Connection, table: str, ids: Sequence[str]) -> list[list[str]]:
    """The ids of a spread table's rows grouped by the shard holding them (a statement
    naming one group's ids is a router query to that shard), in first-seen order."""
    rows = db.all(
        "SELECT i AS id, get_shard_id_for_distribution_column(%s::regclass, i) AS shard "
        "FROM unnest(%s::text[]) AS i",
        (f'"{db.schema}".{table}', list(ids)),
    )
    groups: dict[int, list[str]] = {}
    for r in rows:
        groups.setdefault(int(r["shard"]), []).append(r["id"])
    return list(groups.values())


def _drop_local_rows(db: Connection, name: str) -> None:
    """Free the coordinator's copy of rows Citus has moved to the shards."""
    db.execute("SELECT truncate_local_data_after_distributing_table(%s::regclass)", (name,))


def plan_rows(plan: dict[str, Any]) -> float:
    """The rows the top node of an ``EXPLAIN (FORMAT JSON)`` plan estimates.

    For a Citus router query that is the plan of the one worker running it: Citus's
    own node estimates 0 rows, which would make every vector leg scan its rows exactly
    and never use the HNSW index. A multi-shard query (a spread table) shows one of its
    tasks: its estimate times the task count. A plan without Citus is read as it is.
    """
    job = plan.get("Distributed Query", {}).get("Job", {})
    tasks = job.get("Tasks") or []
    if len(tasks) == 1 and tasks[0].get("Remote Plan"):
        count = int(job.get("Task Count", 1))
        return count * float(tasks[0]["Remote Plan"][0][0]["Plan"]["Plan Rows"])
    return float(plan["Plan Rows"])
