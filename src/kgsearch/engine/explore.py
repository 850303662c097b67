"""The engine's exploring section: the reads the web UI shows (one call each)."""

from __future__ import annotations

from collections.abc import Sequence

from kgsearch import explore
from kgsearch.engine.core import EngineCore
from kgsearch.explore import EmbeddingFailure, ObjectView, Overview, Subgraph
from kgsearch.lifecycle import documents
from kgsearch.lifecycle.documents import DocumentPage, DocumentView

__all__ = ["ExploreMethods"]


class ExploreMethods(EngineCore):
    """Bounded reads for looking at a graph: subgraphs, object views, failures."""

    def subgraph(
        self,
        ids: Sequence[str],
        *,
        project: str | None = None,
        depth: int = 1,
        limit: int = 500,
        types: Sequence[str] | None = None,
        associations: bool = False,
    ) -> Subgraph:
        """The objects within ``depth`` hops of ``ids`` (at most ``limit``, seeds
        first, then nearest) and the edges among them; ``truncated`` says whether
        more were in reach. With ``associations``, objects named by the same passages
        are reached and drawn too (edges of type ``co_mentioned``).

        Raises:
            NotFound: None of ``ids`` is a live object of the project.
            InvalidRequest: ``depth`` not in 0..3 or ``limit`` not in 1..10,000.
        """
        return explore.subgraph(
            self.store,
            self._p(project),
            ids,
            depth=depth,
            limit=limit,
            types=types,
            associations=associations,
        )

    def object_view(self, id: str, *, project: str | None = None, limit: int = 100) -> ObjectView:
        """One object with up to ``limit`` of its relationships (each with its other
        end) and of the chunks that mention it or that it was extracted from.

        Raises:
            NotFound: No live object has this id.
        """
        return explore.object_view(self.store, self._p(project), id, limit=limit)

    def embedding_failures(
        self, *, project: str | None = None, limit: int = 20
    ) -> list[EmbeddingFailure]:
        """Up to ``limit`` rows whose embedding failed or died, with their last error."""
        return explore.embedding_failures(self.store, self._p(project), limit=limit)

    def overview(self, *, project: str | None = None) -> Overview:
        """The project's row counts, embedding model and object types."""
        return explore.overview(self.store, self._p(project))

    def documents(
        self, *, project: str | None = None, limit: int = 20, cursor: str | None = None
    ) -> DocumentPage:
        """A page of the project's documents (sources), oldest first, each with its
        chunk count and its chunks per extraction status."""
        return documents.list_documents(self.store, self._p(project), limit=limit, cursor=cursor)

    def document(
        self, id: str, *, project: str | None = None, limit: int = 100, offset: int = 0
    ) -> DocumentView:
        """One document: its sections, and chunks ``offset`` to ``offset + limit`` with
        their text, section and extraction state (errors included).

        Raises:
            NotFound: The project has no such document.
        """
        return documents.document_view(self.store, self._p(project), id, limit=limit, offset=offset)
