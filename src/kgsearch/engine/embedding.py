"""The engine's embedding section: texts, the embedding lifecycle and its status."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from kgsearch.embed.base import Embedder
from kgsearch.engine.core import EngineCore
from kgsearch.lifecycle import embedding
from kgsearch.lifecycle.embedding import Progress
from kgsearch.model import (
    EmbeddingStatusReport,
    EmbeddingTodo,
    EmbedReport,
    Kind,
    Preview,
)

__all__ = ["EmbeddingMethods"]


class EmbeddingMethods(EngineCore):
    """Texts and the embedding lifecycle (one call each)."""

    # texts and embedding -----------------------------------------------------
    def preview(self, id: str, *, project: str | None = None) -> Preview:
        """The text that would be embedded for a row (object, relationship or chunk)."""
        return embedding.preview(self.store, self._text_rules, self._p(project), id)

    def embed_pending(
        self,
        *,
        kinds: Sequence[Kind] = tuple(Kind),
        project: str | None = None,
        batch_size: int = 512,
        delay_ms: int = 0,
        force: bool = False,
        progress: Progress | None = None,
        limit: int | None = None,
    ) -> EmbedReport:
        """Embed every due row (pending, or failed past its backoff).

        Args:
            kinds: Row kinds to embed.
            project: One project, or None for all.
            batch_size: Rows claimed and embedded per round.
            delay_ms: Pause between batches.
            force: Re-embed every row, even ones already embedded.
            progress: Called with (kind, rows) after each batch.
            limit: Stop after about this many rows.
        """
        embedding.check_batch_size(batch_size)
        return embedding.embed_pending(
            self._embedding(),
            kinds=kinds,
            project=project,
            batch_size=batch_size,
            delay_ms=delay_ms,
            force=force,
            progress=progress,
            limit=limit,
        )

    def embed_step(
        self,
        *,
        project: str | None = None,
        kinds: Sequence[Kind] = tuple(Kind),
        batch_size: int = 64,
    ) -> EmbedReport:
        """Embed at most one batch of due rows per kind and return at once.

        Unlike :meth:`embed_pending` it never sleeps waiting for a failed row's
        backoff, so a server's background loop can stop between steps.

        Raises:
            InvalidRequest: ``batch_size`` outside 1..10000.
            DimensionMismatch: The embedder does not match the stored vectors.
        """
        embedding.check_batch_size(batch_size)
        return embedding.embed_step(
            self._embedding(), project=project, kinds=kinds, batch_size=batch_size
        )

    def embed_worker(
        self,
        *,
        kinds: Sequence[Kind] = tuple(Kind),
        project: str | None = None,
        batch_size: int = 512,
        poll_seconds: float = 5.0,
        until_idle: bool = False,
        should_stop: Callable[[], bool] = lambda: False,
        on_batch: Callable[[EmbedReport], None] | None = None,
    ) -> EmbedReport:
        """Run a long-lived embedding worker, one batch at a time, until stopped.

        Any number of workers may share a store: claims are atomic, and rows claimed
        by a worker that died are claimable again once its lease ends.

        Args:
            kinds: Row kinds to embed.
            project: One project, or None for all.
            batch_size: Rows claimed and embedded per batch.
            poll_seconds: Sleep this long when nothing is due, or after a store error.
            until_idle: Return once nothing is due; a store error is raised.
            should_stop: Return True to end the loop after the current batch.
            on_batch: Called with the running totals after each batch.

        Raises:
            StoreError: Only with ``until_idle``.
        """
        return embedding.run_embedding_worker(
            self._embedding(),
            kinds=kinds,
            project=project,
            batch_size=batch_size,
            poll_seconds=poll_seconds,
            until_idle=until_idle,
            should_stop=should_stop,
            on_batch=on_batch,
        )

    def switch_model(self, embedder: Embedder) -> None:
        """Explicitly migrate to another embedding model: every vector is re-made."""
        self.store.set_embedding_model(embedder.model_id, embedder.dims, replace=True)
        self._embedder = embedder
        self._rules = None
        self._info.forget()

    def set_graph_aware(self, graph_aware: bool) -> None:
        """Switch between graph-aware and plain object text (rows re-embed as needed)."""
        self.graph_aware = graph_aware
        self._rules = None

    def retry_failed(self, *, dead: bool = False, project: str | None = None) -> int:
        """Re-queue failed rows now (and dead ones with ``dead=True``)."""
        return embedding.retry_failed(self.store, project, dead=dead)

    def embedding_status(self, *, project: str | None = None) -> EmbeddingStatusReport:
        """Counts by status per project and kind, percent embedded, stale, failure rate."""
        return embedding.status_report(self.store, project)

    def embedding_todo(
        self, *, project: str | None = None, kinds: Sequence[Kind] = tuple(Kind)
    ) -> EmbeddingTodo:
        """Rows due for embedding (pending or failed) per kind, of one project or all."""
        return embedding.embedding_todo(self.store, project, kinds)
