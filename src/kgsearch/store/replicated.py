"""A store over a primary and a read replica: ``connect(url, read_url=…)``.

:class:`ReplicatedStore` is a thin layer over the capability protocols of
:mod:`kgsearch.store.base`. The reads a search, a context or a listing makes (the
:class:`~kgsearch.store.base.GraphReads` lookups and traversals, the
:class:`~kgsearch.store.base.SearchIndex` primitives and the community reads) go to the
replica; everything else goes to the primary: writes, imports, the embedding and task
queues (claims are writes), migrations, metadata, API keys, the value cache, streams
(``iter_rows``, used by exports and jobs) and every read made inside a write
transaction (it must see the transaction's own rows).

Two rules keep replica reads safe:

* **Fallback.** A replica read that raises :class:`~kgsearch.errors.StoreError` (the
  replica is down, unreachable, or cancelled the query) runs again on the primary, and
  the replica is left alone for ``retry_seconds`` before it is tried again; a replica
  that cannot be opened is treated the same way. Reads are never lost to a replica
  outage, only served by the primary meanwhile.
* **Read your writes.** After a write commits, the thread that wrote reads from the
  primary until the replica has replayed the primary's WAL up to that commit
  (:class:`WalClock`: on PostgreSQL ``pg_current_wal_insert_lsn()`` on the primary after
  the commit, against ``pg_last_wal_replay_lsn()`` on the replica), then from the
  replica again; so a write call that reads back what it wrote, or a request that
  writes then reads, sees its write. With ``read_your_writes`` (the default) every
  thread of the process waits for the process's last write the same way: in a server,
  one request's write sends every request's reads to the primary until the replica
  caught up. Either costs one position query per write and one per read while the
  replica is behind; a process that only reads pays nothing. Without a clock reads never
  wait (and may miss a write for the replication lag).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from typing import TYPE_CHECKING, Any, Protocol

from kgsearch.errors import StoreError

if TYPE_CHECKING:
    from kgsearch.store.base import Store

__all__ = ["ReplicatedStore", "WalClock"]


class WalClock(Protocol):
    """Positions in the primary's write-ahead log, for read-your-writes."""

    def written(self, primary: Store) -> str:
        """The primary's position now (past every commit that has returned)."""
        ...

    def replayed(self, replica: Store, position: str) -> bool:
        """Whether the replica has replayed the log up to ``position``."""
        ...


def _on_replica(name: str) -> Callable[..., Any]:
    def call(self: ReplicatedStore, *args: Any, **kwargs: Any) -> Any:
        return self._read(name, args, kwargs)

    call.__name__ = name
    call.__doc__ = f"``{name}`` on the replica (the primary as a fallback)."
    return call


def _on_primary(name: str) -> Callable[..., Any]:
    def call(self: ReplicatedStore, *args: Any, **kwargs: Any) -> Any:
        return getattr(self.primary, name)(*args, **kwargs)

    call.__name__ = name
    call.__doc__ = f"``{name}`` on the primary."
    return call


def _write(name: str) -> Callable[..., Any]:
    def call(self: ReplicatedStore, *args: Any, **kwargs: Any) -> Any:
        result = getattr(self.primary, name)(*args, **kwargs)
        self._wrote()
        return result

    call.__name__ = name
    call.__doc__ = f"``{name}`` on the primary (a write)."
    return call


def _close_quietly(store: Store) -> None:
    with suppress(StoreError):
        store.close()


class ReplicatedStore:
    """A primary store with a read replica behind the one ``Store`` protocol.

    Args:
        primary: The store every write (and every read the replica does not serve) goes
            to; it runs the migrations.
        open_replica: Opens the replica (never migrating it: a standby is read-only).
            Called on the first replica read and again after a failure.
        clock: Log positions for read-your-writes (None: reads never wait for writes).
        read_your_writes: After any thread of this process writes, every thread reads
            from the primary until the replica has replayed that write (False: only the
            thread that wrote does). Needs ``clock``.
        retry_seconds: How long reads stay on the primary after the replica failed.

    ``served`` counts the reads each side answered (``replica``, ``primary``), and
    ``fallbacks`` the replica reads that failed and were answered by the primary.
    """

    def __init__(
        self,
        primary: Store,
        open_replica: Callable[[], Store],
        *,
        clock: WalClock | None = None,
        read_your_writes: bool = True,
        retry_seconds: float = 5.0,
    ) -> None:
        self.primary = primary
        self.url = primary.url
        self.parallel_vector_legs = primary.parallel_vector_legs
        self.server_reads = primary.server_reads
        self.read_your_writes = read_your_writes
        self.retry_seconds = retry_seconds
        self.served = {"replica": 0, "primary": 0}
        self.fallbacks = 0
        self._open_replica = open_replica
        self._clock = clock
        self._replica: Store | None = None
        self._down_until = 0.0
        self._unreplayed: str | None = None
        self._thread = threading.local()
        self._lock = threading.Lock()
        self._opening = threading.Lock()

    # routing -------------------------------------------------------------
    def _read(self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        replica = None if self.primary.in_transaction else self._usable_replica()
        if replica is not None:
            try:
                result = getattr(replica, name)(*args, **kwargs)
            except StoreError:
                self._failed(replica)
            else:
                self._count("replica")
                return result
        self._count("primary")
        return getattr(self.primary, name)(*args, **kwargs)

    def _count(self, side: str) -> None:
        with self._lock:
            self.served[side] += 1

    def _usable_replica(self) -> Store | None:
        """The replica when a read may go there now, else None (down, or behind a write
        of this process)."""
        if time.monotonic() < self._down_until:
            return None
        replica = self._replica or self._opened()
        if replica is None or self._clock is None:
            return replica
        for waiting in (getattr(self._thread, "position", None), self._unreplayed):
            if waiting is None:
                continue
            try:
                caught_up = self._clock.replayed(replica, waiting)
            except StoreError:
                self._failed(replica)
                return None
            if not caught_up:
                return None
            self._caught_up(waiting)
        return replica

    def _caught_up(self, position: str) -> None:
        """The replica has replayed ``position``: reads waiting for it need not."""
        if getattr(self._thread, "position", None) == position:
            self._thread.position = None
        with self._lock:
            if self._unreplayed == position:
                self._unreplayed = None

    def _opened(self) -> Store | None:
        with self._opening:
            if self._replica is not None:
                return self._replica
            if time.monotonic() < self._down_until:
                return None
            try:
                self._replica = self._open_replica()
            except StoreError:
                self._failed()
                return None
            return self._replica

    def _failed(self, replica: Store | None = None) -> None:
        """Leave the replica alone for ``retry_seconds``; a replica that failed is
        closed (in the background: closing waits for its pool) and opened afresh when
        tried again, rather than waiting on its pool's reconnection backoff."""
        with self._lock:
            self.fallbacks += 1
            self._down_until = time.monotonic() + self.retry_seconds
        if replica is None:
            return
        with self._opening:
            if self._replica is not replica:
                return
            self._replica = None
        threading.Thread(target=_close_quietly, args=(replica,), daemon=True).start()

    def _wrote(self) -> None:
        """After a write returned: outside a transaction it has committed, so note the
        primary's log position for read-your-writes (inside one, its end does)."""
        if self._clock is None or self.primary.in_transaction:
            return
        try:
            position = self._clock.written(self.primary)
        except StoreError:
            # the write has committed, so it is not failed for this; with its position
            # unknown, reads stay on the primary for a while instead
            with self._lock:
                self._down_until = time.monotonic() + self.retry_seconds
            return
        self._thread.position = position
        if self.read_your_writes:
            with self._lock:
                self._unreplayed = position

    @property
    def replica_position_pending(self) -> str | None:
        """The log position of the last write the calling thread's reads wait for the
        replica to replay (None: they may go to the replica now)."""
        mine = getattr(self._thread, "position", None)
        return mine if mine is not None else self._unreplayed

    # lifecycle -------------------------------------------------------------
    @property
    def in_transaction(self) -> bool:
        """Whether the calling thread is inside a transaction of the primary."""
        return self.primary.in_transaction

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """A write transaction on the primary (reads inside it go there too)."""
        with self.primary.transaction():
            yield
        self._wrote()

    @contextmanager
    def write_run(self) -> Iterator[None]:
        """The primary's write run."""
        with self.primary.write_run():
            yield
        self._wrote()

    @contextmanager
    def bulk_load(self) -> Iterator[None]:
        """The primary's bulk load."""
        with self.primary.bulk_load():
            yield
        self._wrote()

    def close(self) -> None:
        """Close the replica (when open) and the primary."""
        with self._opening:
            replica, self._replica = self._replica, None
        try:
            if replica is not None:
                replica.close()
        finally:
            self.primary.close()

    def __enter__(self) -> ReplicatedStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # graph reads, search primitives and community reads: the replica
    resolve = _on_replica("resolve")
    endpoints = _on_replica("endpoints")
    get_objects = _on_replica("get_objects")
    get_relationships = _on_replica("get_relationships")
    get_chunks = _on_replica("get_chunks")
    get_sources = _on_replica("get_sources")
    list_rows = _on_replica("list_rows")
    counts = _on_replica("counts")
    relationships_touching = _on_replica("relationships_touching")
    neighbors = _on_replica("neighbors")
    edges_among = _on_replica("edges_among")
    typed_edges = _on_replica("typed_edges")
    edge_table = _on_replica("edge_table")
    chunk_ids_of = _on_replica("chunk_ids_of")
    mention_pairs = _on_replica("mention_pairs")
    mentions = _on_replica("mentions")
    vector_search = _on_replica("vector_search")
    text_search = _on_replica("text_search")
    objects_named = _on_replica("objects_named")
    objects_named_many = _on_replica("objects_named_many")
    named_objects = _on_replica("named_objects")
    object_types = _on_replica("object_types")
    vectors = _on_replica("vectors")
    community_build = _on_replica("community_build")
    communities = _on_replica("communities")
    communities_of = _on_replica("communities_of")
    community_reports = _on_replica("community_reports")
    projects = _on_replica("projects")

    # reads only the primary answers
    info = _on_primary("info")
    get_meta = _on_primary("get_meta")
    iter_rows = _on_primary("iter_rows")
    iter_text_rows = _on_primary("iter_text_rows")
    next_retry_at = _on_primary("next_retry_at")
    embedding_counts = _on_primary("embedding_counts")
    not_embedded = _on_replica("not_embedded")
    embedding_latency = _on_primary("embedding_latency")
    api_keys = _on_primary("api_keys")
    find_api_key = _on_primary("find_api_key")
    list_tasks = _on_primary("list_tasks")
    get_tasks = _on_primary("get_tasks")
    task_counts = _on_primary("task_counts")
    next_task_retry_at = _on_primary("next_task_retry_at")
    cache_get = _on_primary("cache_get")
    graph_digest = _on_primary("graph_digest")

    # writes: the primary, then read-your-writes notes the log position
    migrate = _write("migrate")
    set_embedding_model = _write("set_embedding_model")
    set_meta = _write("set_meta")
    upsert_objects = _write("upsert_objects")
    upsert_relationships = _write("upsert_relationships")
    upsert_sources = _write("upsert_sources")
    upsert_chunks = _write("upsert_chunks")
    add_mentions = _write("add_mentions")
    delete = _write("delete")
    delete_mentions = _write("delete_mentions")
    purge = _write("purge")
    set_texts = _write("set_texts")
    set_skipped = _write("set_skipped")
    claim = _write("claim")
    complete = _write("complete")
    fail = _write("fail")
    requeue = _write("requeue")
    build_indexes = _write("build_indexes")
    create_api_key = _write("create_api_key")
    revoke_api_key = _write("revoke_api_key")
    set_api_key_limits = _write("set_api_key_limits")
    # the LLM budget's ledger: admission reads what was just settled (primary)
    add_llm_usage = _write("add_llm_usage")
    prune_llm_usage = _write("prune_llm_usage")
    llm_usage = _on_primary("llm_usage")
    enqueue_tasks = _write("enqueue_tasks")
    claim_tasks = _write("claim_tasks")
    complete_tasks = _write("complete_tasks")
    fail_tasks = _write("fail_tasks")
    requeue_tasks = _write("requeue_tasks")
    release_tasks = _write("release_tasks")
    delete_tasks = _write("delete_tasks")
    cache_put = _write("cache_put")
    cache_delete = _write("cache_delete")
    replace_communities = _write("replace_communities")
    upsert_community_reports = _write("upsert_community_reports")
    delete_communities = _write("delete_communities")
