"""A small LRU cache of query vectors, so a repeated question (an agent retrying, a
dashboard polling, many users asking the same thing) skips the embedder.

Keyed by the embedder's model id and the exact text embedded, so a model switch
never returns a stale vector. Thread-safe; only successful embeddings are kept (a
failure, timeout or open breaker is never cached).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence

from kgsearch.embed.base import Vector

__all__ = ["QueryCache"]


class QueryCache:
    """The last ``size`` query vectors by (model id, text).

    Args:
        size: Entries kept; 0 turns the cache off.
    """

    def __init__(self, size: int = 1024) -> None:
        self.size = size
        self.hits = 0
        self.misses = 0
        self._lock = threading.Lock()
        self._vectors: OrderedDict[tuple[str, str], Vector] = OrderedDict()

    def get(self, model_id: str, text: str) -> Vector | None:
        """The cached vector of ``text``, or None; counts neither a hit nor a miss."""
        with self._lock:
            return self._vectors.get((model_id, text))

    def put(self, model_id: str, text: str, vector: Vector) -> None:
        """Keep ``vector`` as ``text``'s (a server embeds the queries of concurrent
        searches together ahead of the searches, which then find them here)."""
        if self.size <= 0:
            return
        with self._lock:
            self._vectors[(model_id, text)] = vector
            self._vectors.move_to_end((model_id, text))
            while len(self._vectors) > self.size:
                self._vectors.popitem(last=False)

    def embed(self, model_id: str, fn: Callable[[str], Vector], text: str) -> Vector:
        """The cached vector of ``text``, or ``fn(text)`` kept for next time."""
        key = (model_id, text)
        with self._lock:
            found = self._vectors.get(key)
            if found is not None:
                self._vectors.move_to_end(key)
                self.hits += 1
                return found
            self.misses += 1
        vector = fn(text)
        self.put(model_id, text, vector)
        return vector

    def embed_many(
        self, model_id: str, fn: Callable[[Sequence[str]], list[Vector]], texts: Sequence[str]
    ) -> list[Vector]:
        """The vectors of ``texts``: the cached ones from here, the others from one
        ``fn`` call, kept for next time (a search embeds its question with the texts
        its legs will embed, in one model call)."""
        found: dict[str, Vector] = {}
        with self._lock:
            for text in texts:
                vector = self._vectors.get((model_id, text))
                if vector is not None:
                    self._vectors.move_to_end((model_id, text))
                    found[text] = vector
            missing = list(dict.fromkeys(t for t in texts if t not in found))
            self.hits += len(found)
            self.misses += len(missing)
        if missing:
            for text, vector in zip(missing, fn(missing), strict=True):
                self.put(model_id, text, vector)
                found[text] = vector
        return [found[t] for t in texts]
