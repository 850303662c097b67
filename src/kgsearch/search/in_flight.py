"""The searches under way in this process (a server's query embedding counts as one):
beside another, a search keeps its work in the calling thread (``legs.py``)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["searches_in_flight", "searching"]


class _InFlight:
    """The searches under way in this process (:func:`searching`), which decides
    whether one search may hand work to the leg workers (``legs._inline``)."""

    def __init__(self) -> None:
        self.count = 0
        self.lock = threading.Lock()


_IN_FLIGHT = _InFlight()


@contextmanager
def searching() -> Iterator[None]:
    """Count the block as a search under way (see :func:`searches_in_flight`)."""
    with _IN_FLIGHT.lock:
        _IN_FLIGHT.count += 1
    try:
        yield
    finally:
        with _IN_FLIGHT.lock:
            _IN_FLIGHT.count -= 1


def searches_in_flight() -> int:
    """How many searches of this process are under way, the asking one included."""
    return _IN_FLIGHT.count
