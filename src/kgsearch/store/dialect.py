"""What the SQL of the shared capability code needs to know about its backend.

The capability slices written once for both stores (:mod:`kgsearch.store.queues`,
:mod:`kgsearch.store.communities`, :mod:`kgsearch.store.shared_reads`) write their
statements with ``?`` placeholders and ask a :class:`Dialect` for the few things that
differ: the placeholder itself, how a list of values is bound (SQLite: one JSON
parameter; PostgreSQL: one array), the insertion-order column, a function name, the
timestamp value and the check a text passes before it is bound. They run their
statements on any :class:`Database`, the small surface both connections offer.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol, Self

from kgsearch.model import Kind

__all__ = ["Database", "Dialect", "Slice", "Transactions"]


class Database(Protocol):
    """The statements both stores' connections run (``store/*/connection.py``)."""

    def all(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        """Every row of a query (each indexable by column name)."""
        ...

    def one(self, sql: str, params: Sequence[Any] = ()) -> Any:
        """The first row of a query, or None."""
        ...

    def write(self, sql: str, params: Sequence[Any] = ()) -> int:
        """Run one statement; return how many rows it changed."""
        ...

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        """Run one statement for many parameter rows."""
        ...

    def transaction(self) -> AbstractContextManager[Any]:
        """A write transaction; nested calls join the outer one."""
        ...

    @property
    def held_here(self) -> bool:
        """Whether the calling thread is inside :meth:`transaction`."""
        ...


@dataclass(frozen=True)
class Dialect:
    """The differences the shared SQL is parameterised by.

    Args:
        name: ``sqlite`` or ``postgres``.
        position: The column that orders rows by insertion (``rowid``, ``seq``).
        greatest: The two-argument maximum function (``max``, ``greatest``).
        listed: ``(column, values)`` → a condition that ``column`` is one of the values,
            with its parameters (one parameter, however many values).
        conditions: The backend's ``filter_sql``: ``(kind, filters, alias="t", *,
            current_only=True)`` → conditions, each starting with `` AND``, in the
            backend's own placeholders (spliced in after :meth:`sql`), and parameters.
        stamp: The current time as the store keeps timestamps.
        time: A datetime (or None) as the store keeps timestamps.
        text: A text value made fit to bind (PostgreSQL refuses NUL characters).
        json: A value as stored JSON text (PostgreSQL refuses NUL characters).
        json_mark: The placeholder of a JSON value where the column type is not implied
            (``INSERT … SELECT``).
        words: Whether embeddable rows carry a ``words`` column that the lexical index
            is built from (PostgreSQL); SQLite's FTS5 triggers read ``text`` instead.
        serialise: A statement that makes transactions passing the same text key run
            one after another ('' where writers are serial anyway).
        lock: Appended to a query (after its ``ORDER BY``) that reads rows about to be
            written, so that two writers of the same rows wait for each other in order
            ('' where writers are serial anyway).
        hold: Appended to a query (after its ``ORDER BY``) that reads rows which must
            stay as they are until the transaction ends ('' where writers are serial).
        as_text: Appended to a stored JSON column to compare it as stored text
            (PostgreSQL's ``json`` type has no equality).
    """

    name: str
    position: str
    greatest: str
    listed: Callable[[str, Sequence[Any]], tuple[str, list[Any]]]
    conditions: Callable[..., tuple[str, list[Any]]]
    stamp: Callable[[], Any]
    time: Callable[[datetime | None], Any]
    text: Callable[[Any], Any]
    json: Callable[[Any], str]
    json_mark: str = "?"
    words: bool = False
    serialise: str = ""
    lock: str = ""
    hold: str = ""
    as_text: str = ""

    @property
    def mark(self) -> str:
        """The placeholder (``?``, ``%s``)."""
        return "%s" if self.name == "postgres" else "?"

    def sql(self, statement: str) -> str:
        """A statement written with ``?`` placeholders, in this dialect's."""
        if self.name == "postgres":
            return statement.replace("%", "%%").replace("?", "%s")
        return statement

    def scope(self, project: str | None) -> tuple[str, list[Any]]:
        """`` AND project = ?`` and its parameter for one project; nothing for all."""
        return ("AND project = ?", [project]) if project is not None else ("", [])


class Slice:
    """A capability written once: its store supplies ``db``, ``dialect`` and
    ``_changed`` (declared for the type checker only, so that nothing here shadows a
    backend's own methods whatever the order of the store's bases)."""

    dialect: Dialect

    if TYPE_CHECKING:

        @property
        def db(self) -> Database: ...

        def _changed(self, kind: Kind, *, texts: bool) -> None:
            """Refresh what the store keeps of a kind's texts or vectors (inside the
            writing transaction)."""


class Transactions(Slice):
    """What both stores' lifecycles do alike: transactions on their connection, and
    closing at the end of a ``with`` block."""

    if TYPE_CHECKING:

        def close(self) -> None:
            """The store's own."""

    def transaction(self) -> AbstractContextManager[Any]:
        return self.db.transaction()

    @property
    def in_transaction(self) -> bool:
        """Whether the calling thread is inside :meth:`transaction`."""
        return self.db.held_here

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
