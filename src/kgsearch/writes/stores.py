"""The store capabilities the write path asks for, combined where one write needs several.

Functions take the narrowest capability they use (:mod:`kgsearch.store.base`); the
protocols here only name the combinations, so the engine's ``Store`` (their union)
satisfies each of them and a test may hand in anything that has the methods.
"""

from __future__ import annotations

from typing import Protocol

from kgsearch.store.base import (
    Cache,
    EmbeddingQueue,
    GraphReads,
    GraphWrites,
    Lifecycle,
    SearchIndex,
    TaskQueue,
)

__all__ = ["BatchStore", "GraphStore", "NameLookup", "TextStore", "WriteStore"]


class TextStore(GraphReads, EmbeddingQueue, Protocol):
    """Reads endpoints and sets embedding texts (rebuilding relationship texts)."""


class NameLookup(GraphReads, SearchIndex, Protocol):
    """Finds stored objects by name (where an extracted entity lands)."""


class BatchStore(Lifecycle, GraphReads, GraphWrites, Protocol):
    """What the batch writer needs: a transaction, bulk writes, and the id look-up of
    objects whose ids it does not know."""


class GraphStore(Lifecycle, GraphReads, GraphWrites, EmbeddingQueue, Protocol):
    """Graph reads and writes in transactions, and embedding texts (the importer)."""


class WriteStore(
    Lifecycle, GraphReads, GraphWrites, EmbeddingQueue, SearchIndex, TaskQueue, Cache, Protocol
):
    """What a :class:`~kgsearch.writes.graph.WriteContext` carries: graph reads and
    writes in transactions, embedding texts, the name index (extracted entities land on
    stored objects by name), the task queue (a deleted chunk takes its tasks) and the
    cache (a deleted chunk takes the model replies only it used)."""
