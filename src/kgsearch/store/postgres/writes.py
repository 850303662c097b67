"""How graph upserts reach PostgreSQL inside a bulk load: COPY into a staging table.

:class:`PostgresWrites` is the ``GraphWrites`` slice of
:class:`~kgsearch.store.postgres.store.PostgresStore`: the statements are the shared
ones (:mod:`kgsearch.store.graph_writes`); inside a bulk load, multi-row upserts are
copied into a staging table first and inserted from it in one statement.
"""

from __future__ import annotations

from typing import Any

from kgsearch.store.graph_writes import GraphWritesCore
from kgsearch.store.postgres.connection import wrap_error
from kgsearch.store.postgres.lexical import LexicalStats
from kgsearch.store.postgres.reads import PostgresReads

__all__ = ["PostgresWrites"]


class PostgresWrites(GraphWritesCore, PostgresReads):
    """The ``GraphWrites`` capability over PostgreSQL."""

    lexical: LexicalStats
    # set while a bulk load's transaction is open: multi-row writes go through COPY
    _bulk: bool

    def _upsert_rows(self, sql: str, columns: str, key: str, params: list[tuple[Any, ...]]) -> None:
        """Pipelined, or in bulk mode through COPY into a staging table (deduplicated on
        ``key``, last wins)."""
        if not (self._bulk and self.db.held_here and len(params) > 1):
            self.db.executemany(sql, params)
            return
        table = sql.split()[2]
        stage = f"_stage_{table}"
        head, conflict = sql.split(" VALUES ", 1)[0], sql.split(" ON CONFLICT ", 1)[1]
        with self.db.session() as conn:
            try:
                conn.execute(
                    f"CREATE TEMP TABLE IF NOT EXISTS {stage} ON COMMIT DROP AS "
                    f"SELECT {columns}, 0::bigint AS _ord FROM {table} WITH NO DATA"
                )
                conn.execute(f"TRUNCATE {stage}")
                with conn.cursor().copy(f"COPY {stage} ({columns}, _ord) FROM STDIN") as copy:
                    for ordinal, row in enumerate(params):
                        copy.write_row((*row, ordinal))
                conn.execute(
                    f"{head} SELECT DISTINCT ON ({key}) {columns} FROM {stage} "
                    f"ORDER BY {key}, _ord DESC ON CONFLICT {conflict}"
                )
            except Exception as exc:
                raise wrap_error(exc) from exc
