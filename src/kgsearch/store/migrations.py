"""A tiny named, append-only migration runner shared by the store backends.

Each migration is a function ``m00N_verb_noun(execute)`` registered in order; the
runner records each applied name in a ``migrations`` table and never runs it
again. Released migrations are never edited: schema changes append a new one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

__all__ = ["Migration", "pending"]

Execute = Callable[[str], None]


@dataclass(frozen=True)
class Migration:
    """One named schema step."""

    name: str
    apply: Callable[[Execute], None]


def pending(migrations: Sequence[Migration], applied: set[str]) -> list[Migration]:
    """The migrations not yet applied, in their declared order.

    Raises:
        ValueError: Two migrations share a name (a programming error).
    """
    names = [m.name for m in migrations]
    if len(names) != len(set(names)):
        raise ValueError("duplicate migration names")
    return [m for m in migrations if m.name not in applied]
