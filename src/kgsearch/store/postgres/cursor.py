"""The pooled connections' cursor: every statement reported to the calling thread's
tracer (see :mod:`kgsearch.store.tracing`) before it runs, so statements run on a
transaction's own connection are heard too."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Self, cast

import psycopg
from psycopg import sql as pg_sql
from psycopg.abc import Params, Query, QueryNoTemplate
from psycopg.rows import Row

from kgsearch.store.tracing import active, report

__all__ = ["TracedCursor"]


class TracedCursor(psycopg.Cursor[Row]):
    """A cursor that reports each statement and its parameters to the calling thread's
    tracer before running it (nothing is reported, or copied, when none listens)."""

    def execute(
        self,
        query: Query,
        params: Params | None = None,
        *,
        prepare: bool | None = None,
        binary: bool | None = None,
    ) -> Self:
        """Run one statement (see :meth:`psycopg.Cursor.execute`)."""
        if active():
            report(self._text(query), _listed(params))
        # the base class takes template strings only without parameters (an overload);
        # it checks that itself, so the call is passed on as it came
        return super().execute(cast(QueryNoTemplate, query), params, prepare=prepare, binary=binary)

    def executemany(
        self, query: Query, params_seq: Iterable[Params], *, returning: bool = False
    ) -> None:
        """Run one statement per parameter row (see :meth:`psycopg.Cursor.executemany`)."""
        if active():
            params_seq = list(params_seq)
            report(self._text(query), [_listed(p) for p in params_seq])
        super().executemany(query, params_seq, returning=returning)

    def _text(self, query: Query) -> str:
        if isinstance(query, str):
            return query
        if isinstance(query, bytes):
            return query.decode("utf-8", "replace")
        if isinstance(query, pg_sql.Composable):
            return query.as_string(self)
        return str(query)


def _listed(params: Params | None) -> Sequence[Any]:
    """Parameters as a sequence (named parameters as one mapping in a list)."""
    if params is None:
        return ()
    if isinstance(params, Sequence):
        return params
    return [dict(params)]
