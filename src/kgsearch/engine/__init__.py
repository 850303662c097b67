"""The Engine: the one facade every adapter (CLI, REST, MCP) and library user calls.

It composes a store, a lazily created embedder and the text rules, and each method
makes one call into the module that owns the work: ``writes``, ``reads``,
``lifecycle`` (texts and embedding), ``search``, ``io`` and ``keys``.
"""

from __future__ import annotations

from kgsearch.engine.communities import CommunityMethods
from kgsearch.engine.embedding import EmbeddingMethods
from kgsearch.engine.entities import EntityMethods
from kgsearch.engine.explore import ExploreMethods
from kgsearch.engine.extraction import ExtractionMethods
from kgsearch.engine.graph import GraphMethods
from kgsearch.engine.search import SearchMethods
from kgsearch.engine.usage import UsageMethods

__all__ = ["Engine"]


class Engine(
    GraphMethods,
    EmbeddingMethods,
    SearchMethods,
    ExtractionMethods,
    EntityMethods,
    ExploreMethods,
    CommunityMethods,
    UsageMethods,
):
    """Graph storage, embedding lifecycle and search over one store.

    Args:
        store: An open store (see :func:`kgsearch.connect`).
        embedder: The embedding provider, or None to create one on first use.
        embedder_factory: Makes the embedder on first use (default: the bundled model).
        enrichment: Graph-aware text rules (default rules when None).
        graph_aware: Build graph-aware object text; None keeps the store's last choice.
        project: Default project for calls that pass none.
        embed_on_write: Embed rows right after each write commits (small scripts).
        retry: Failure policy of the embedding lifecycle.
        cross_encoder: Optional cross-encoder for the ``cross_encoder`` reranker.
    """
