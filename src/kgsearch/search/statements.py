"""What an explained search ran: each stage's SQL statements and notes, JSON-safe.

An explained search gives every stage (each leg, the type-hint lookup, the graph
stage, hydration) a :class:`StatementLog` and passes it as ``trace`` to the store
calls the stage makes; the store reports every statement and its parameters, and
describes work it does outside SQL (an in-memory vector scan) as a note. Parameters
are kept in JSON form: a query vector becomes ``"<vector 384 float32>"`` and a blob
``"<1536 bytes>"``, so the explanation serialises on every surface. A search that is
not explained creates no log and passes no tracer, so it pays nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import date, datetime
from typing import Any

import numpy as np

from kgsearch.search.request import Statement

__all__ = ["StatementLog", "Traces", "json_safe", "log_of"]


def json_safe(value: Any) -> Any:
    """A statement parameter in JSON form: vectors and blobs described by their size,
    containers converted item by item, anything unknown as its text."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, bytes | bytearray | memoryview):
        return f"<{len(value)} bytes>"
    if hasattr(value, "to_numpy"):  # a pgvector value
        value = value.to_numpy()
    if isinstance(value, np.ndarray):
        if value.ndim == 1:
            return f"<vector {value.shape[0]} {value.dtype}>"
        return f"<array {'x'.join(str(n) for n in value.shape)} {value.dtype}>"
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, Mapping):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [json_safe(v) for v in value]
    return str(value)


class StatementLog:
    """The statements and notes of one stage, as a store ``Trace`` hears them."""

    def __init__(self) -> None:
        self.statements: list[Statement] = []
        self.notes: list[str] = []

    def __call__(self, sql: str, params: Sequence[Any]) -> None:
        """Record one statement and its parameters (in JSON form)."""
        self.statements.append(Statement(sql=sql, params=[json_safe(p) for p in params]))

    def note(self, text: str) -> None:
        """Record work the store did outside SQL."""
        self.notes.append(text)


class Traces:
    """The statement logs of one explained search, by stage name."""

    def __init__(self) -> None:
        self.logs: dict[str, StatementLog] = {}

    def log(self, stage: str) -> StatementLog:
        """The stage's log, made on first use."""
        return self.logs.setdefault(stage, StatementLog())

    def ordered(self, first: Iterable[str]) -> list[tuple[str, StatementLog]]:
        """The logs with the stages in ``first`` first (in that order), then the rest in
        the order they were made."""
        names = dict.fromkeys([*first, *self.logs])
        return [(name, self.logs[name]) for name in names if name in self.logs]


def log_of(traces: Traces | None, stage: str) -> StatementLog | None:
    """The stage's log when the search is explained, else None (nothing is traced)."""
    return None if traces is None else traces.log(stage)
