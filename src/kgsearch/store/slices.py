"""The capabilities both stores hold whole, in code written once: API keys, the value
cache, communities, the LLM usage ledger and transactions (each over the store's
connection and :class:`~kgsearch.store.dialect.Dialect`)."""

from __future__ import annotations

from kgsearch.store.cache import ValueCache
from kgsearch.store.communities import Communities
from kgsearch.store.dialect import Transactions
from kgsearch.store.keys import ApiKeys
from kgsearch.store.usage import LLMUsage

__all__ = ["SharedSlices"]


class SharedSlices(ApiKeys, ValueCache, Communities, LLMUsage, Transactions):
    """The slices a backend inherits as they are (it supplies ``db``, ``dialect``,
    ``_changed`` and ``close``)."""
