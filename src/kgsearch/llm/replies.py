"""Which chunks used which cached replies, so deleting a document deletes the replies
only it used (issue 32, item 3).

An extraction run names the chunks it is extracting (:func:`chunk_texts`, a context
variable like :func:`~kgsearch.llm.cache.cache_scope`). For each reply it hands out,
from the model or from the cache, :class:`~kgsearch.llm.cache.CachedLLM` notes the
chunks whose text the request carries (:func:`chunks_in`): in the reply's record
(``chunks``) and in an index by chunk (namespace ``<namespace>-chunks/<project>``: the
request keys each chunk used). Deleting chunks (:func:`forget_chunk_replies`) then
removes each reply that no other live chunk used; a reply another document's identical
chunk used stays, and is that chunk's alone from then on. Replies cached before this
bookkeeping existed have no chunks noted and are left alone.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Protocol

from kgsearch.llm.base import Message

__all__ = [
    "REPLIES",
    "DeletingCache",
    "chunk_texts",
    "chunks_in",
    "forget_chunk_replies",
    "index_space",
    "note_chunks",
]

REPLIES = "llm"
"""The namespace of cached model replies (``llm/<project>`` per project)."""

_CHUNKS: ContextVar[Mapping[str, str] | None] = ContextVar("kgsearch_llm_chunks", default=None)
_LOCK = threading.Lock()  # read-modify-write of records and index entries


class DeletingCache(Protocol):
    """A response cache that can remove values (the stores' ``Cache``)."""

    def cache_get(self, namespace: str, key: str) -> str | None:
        """The cached value, or None."""
        ...

    def cache_put(self, namespace: str, key: str, value: str) -> None:
        """Store a value, replacing any under the same key."""
        ...

    def cache_delete(self, namespace: str, keys: Sequence[str]) -> int:
        """Remove these keys' values; return how many were there."""
        ...


@contextmanager
def chunk_texts(texts: Mapping[str, str]) -> Iterator[None]:
    """Note, for the model calls made inside (in this context), which of these chunks
    (id → the text given to the extractor) each request carries."""
    token = _CHUNKS.set(texts)
    try:
        yield
    finally:
        _CHUNKS.reset(token)


def chunks_in(messages: Sequence[Message]) -> list[str]:
    """The ids of the current chunks (:func:`chunk_texts`) whose text is in
    ``messages`` (a packed request carries several), sorted."""
    texts = _CHUNKS.get()
    if not texts:
        return []
    carried = "\n".join(m.content for m in messages)
    return sorted(cid for cid, text in texts.items() if text.strip() and text in carried)


def index_space(space: str) -> str:
    """The index namespace of the replies under ``space`` (``llm/<project>`` →
    ``llm-chunks/<project>``)."""
    namespace, slash, project = space.partition("/")
    return f"{namespace}-chunks{slash}{project}"


def note_chunks(cache: Any, space: str, key: str, chunks: Sequence[str]) -> None:
    """Record that ``chunks`` used the reply under (``space``, ``key``): in its record
    (when it lacks any of them) and in the index.

    Args:
        cache: The response cache (``cache_get``/``cache_put``).
        space: The replies' namespace (``llm/<project>``).
        key: The request key.
        chunks: Chunk ids (:func:`chunks_in`).
    """
    if not chunks:
        return
    index = index_space(space)
    with _LOCK:
        record = _record(cache.cache_get(space, key))
        if record is not None:
            known = record.get("chunks") or []
            if not set(chunks) <= set(known):
                record["chunks"] = sorted({*known, *chunks})
                cache.cache_put(space, key, json.dumps(record))
        for chunk in chunks:
            keys = _keys(cache.cache_get(index, chunk))
            if key not in keys:
                cache.cache_put(index, chunk, json.dumps([*keys, key]))


def forget_chunk_replies(
    cache: DeletingCache,
    space: str,
    chunk_ids: Collection[str],
    live: Callable[[Sequence[str]], Collection[str]],
) -> int:
    """Remove the cached replies that only ``chunk_ids`` used, and their index entries;
    a reply another live chunk used keeps only that chunk. Returns the replies removed.

    Args:
        cache: The store's cache.
        space: The replies' namespace (``llm/<project>``).
        chunk_ids: Chunks being deleted.
        live: Which of some chunk ids are live chunks (after the deletion).
    """
    index = index_space(space)
    gone = set(chunk_ids)
    keys = dict.fromkeys(k for c in sorted(gone) for k in _keys(cache.cache_get(index, c)))
    dropped: list[str] = []
    with _LOCK:
        for key in keys:
            record = _record(cache.cache_get(space, key))
            others = [c for c in (record or {}).get("chunks") or [] if c not in gone]
            users = set(live(others)) if others else set()
            if record is None or not users:
                dropped.append(key)
            elif users != set(record["chunks"]):
                record["chunks"] = sorted(users)
                cache.cache_put(space, key, json.dumps(record))
        removed = cache.cache_delete(space, dropped) if dropped else 0
        if gone:
            cache.cache_delete(index, sorted(gone))
    return removed


def _record(value: str | None) -> dict[str, Any] | None:
    """A stored reply record, or None (missing, forgotten or unreadable)."""
    if not value:
        return None
    try:
        record = json.loads(value)
    except ValueError:
        return None
    return record if isinstance(record, dict) else None


def _keys(value: str | None) -> list[str]:
    """The request keys of an index entry."""
    if not value:
        return []
    try:
        keys = json.loads(value)
    except ValueError:
        return []
    return [k for k in keys if isinstance(k, str)] if isinstance(keys, list) else []
