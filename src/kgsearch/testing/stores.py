"""The fixture contract of the conformance suite: :class:`StoreFactory`, and a helper.

The suite in :mod:`kgsearch.testing.conformance` asks for one pytest fixture,
``store_factory``, returning a :class:`StoreFactory`: calling it opens a fresh, empty,
migrated store; ``reopen`` opens a second handle on a persistent store's database (for
the concurrency and re-open tests). :class:`URLStoreFactory` implements it for any
store that is opened from a URL or a path, and closes every store it opened.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from kgsearch.store import connect
from kgsearch.store.base import Store

__all__ = ["StoreFactory", "URLStoreFactory"]


class StoreFactory(Protocol):
    """What the conformance suite needs from the ``store_factory`` fixture.

    The fixture owns the stores: it closes them (and drops what they created) when the
    test ends.
    """

    @property
    def persistent(self) -> bool:
        """Whether a store's database outlives its handle, so ``reopen`` works."""
        ...

    def __call__(self) -> Store:
        """A new, empty, migrated store of its own (no rows, no embedding model)."""
        ...

    def reopen(self, store: Store) -> Store:
        """A second, independent handle on ``store``'s database.

        The suite calls it only when :attr:`persistent` is true.
        """
        ...


class URLStoreFactory:
    """A :class:`StoreFactory` for stores opened from a URL (or a path).

    Args:
        new_url: Returns the URL of a new, empty database, different at every call.
        persistent: Whether the database outlives its handle (``False`` for in-memory
            stores, which cannot be re-opened).
        open_store: Opens a store from a URL; :func:`kgsearch.connect` by default, so a store
            registered with :func:`kgsearch.store.register_store` needs nothing more.
    """

    def __init__(
        self,
        new_url: Callable[[], str],
        *,
        persistent: bool = True,
        open_store: Callable[[str], Store] = connect,
    ) -> None:
        self.new_url = new_url
        self.open_store = open_store
        self._persistent = persistent
        self._opened: list[Store] = []
        self._urls: dict[int, str] = {}

    @property
    def persistent(self) -> bool:
        """Whether a store of this factory can be opened again after closing."""
        return self._persistent

    def __call__(self) -> Store:
        """A new, empty, migrated store at a new URL."""
        url = self.new_url()
        store = self.track(self.open_store(url))
        self._urls[id(store)] = url
        return store

    def reopen(self, store: Store) -> Store:
        """A second handle on the database of ``store`` (one this factory opened).

        Raises:
            RuntimeError: The factory's stores are not persistent.
        """
        if not self.persistent:
            raise RuntimeError("the stores of this factory cannot be re-opened")
        return self.track(self.open_store(self._urls[id(store)]))

    def track(self, store: Store) -> Store:
        """Close ``store`` (opened by the test itself) with the others; returns it."""
        self._opened.append(store)
        return store

    def close_all(self) -> None:
        """Close every store this factory opened or tracked, the newest first."""
        for store in reversed(self._opened):
            store.close()
        self._opened.clear()
