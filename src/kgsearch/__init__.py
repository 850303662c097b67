"""kgsearch: make a knowledge graph searchable by meaning.

A typed graph (objects, relationships, chunks, sources) per project, embedded in a
graph-aware way with an honest lifecycle, answered by one hybrid search::

    import kgsearch

    engine = kgsearch.Engine(kgsearch.connect("graph.db"))
    engine.add_objects([kgsearch.ObjectIn(type="Person", key="ada", properties={"name": "Ada"})])
    engine.embed_pending()
    engine.search("who is Ada?")
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kgsearch.config import Settings
    from kgsearch.embed import create_embedder
    from kgsearch.embed.base import Embedder
    from kgsearch.engine import Engine
    from kgsearch.errors import (
        BudgetExceeded,
        ConfigError,
        Conflict,
        DimensionMismatch,
        ExtractionFailed,
        ImportFailed,
        InvalidRequest,
        KgsearchError,
        MigrationError,
        MissingCredentials,
        MissingDependency,
        NotFound,
        ProviderError,
        StoreError,
    )
    from kgsearch.extract.schema import ExtractionResult
    from kgsearch.lifecycle.runner import RetryPolicy
    from kgsearch.llm.base import LLM
    from kgsearch.model import (
        Chunk,
        ChunkIn,
        EmbeddingState,
        EmbeddingStatus,
        EmbeddingStatusReport,
        EmbeddingStatusRow,
        EmbeddingTodo,
        EmbedReport,
        Filters,
        GraphObject,
        Kind,
        Mentioned,
        MentionIn,
        Neighborhood,
        NeighborObject,
        ObjectIn,
        ObjectRef,
        Page,
        Preview,
        Relationship,
        RelationshipIn,
        Source,
        SourceIn,
        SourceMentions,
        Stats,
        TextAdded,
    )
    from kgsearch.reports import (
        DeleteReport,
        ExtractionRecord,
        ExtractionReport,
        ExtractionStatus,
        IngestProblem,
        IngestReport,
        MergeReport,
        SummaryReport,
    )
    from kgsearch.search.request import (
        Explain,
        FusedHit,
        GraphResult,
        LegRank,
        RagContext,
        RelationshipResult,
        SearchRequest,
        SearchResponse,
        Statement,
        TextResult,
    )
    from kgsearch.store import Store, connect
    from kgsearch.text import EnrichmentConfig

__version__ = "0.1.0"

# Each public name and the module that defines it, imported on first use (PEP 562):
# ``import kgsearch`` stays cheap, so the CLI's light commands start fast.
_EXPORTS: dict[str, str] = {
    "Chunk": "kgsearch.model",
    "ChunkIn": "kgsearch.model",
    "BudgetExceeded": "kgsearch.errors",
    "ConfigError": "kgsearch.errors",
    "Conflict": "kgsearch.errors",
    "DeleteReport": "kgsearch.reports",
    "DimensionMismatch": "kgsearch.errors",
    "EmbedReport": "kgsearch.model",
    "Embedder": "kgsearch.embed.base",
    "EmbeddingState": "kgsearch.model",
    "EmbeddingStatus": "kgsearch.model",
    "EmbeddingStatusReport": "kgsearch.model",
    "EmbeddingStatusRow": "kgsearch.model",
    "EmbeddingTodo": "kgsearch.model",
    "Engine": "kgsearch.engine",
    "EnrichmentConfig": "kgsearch.text",
    "Explain": "kgsearch.search.request",
    "ExtractionFailed": "kgsearch.errors",
    "ExtractionRecord": "kgsearch.reports",
    "ExtractionReport": "kgsearch.reports",
    "ExtractionResult": "kgsearch.extract.schema",
    "ExtractionStatus": "kgsearch.reports",
    "Filters": "kgsearch.model",
    "FusedHit": "kgsearch.search.request",
    "GraphObject": "kgsearch.model",
    "GraphResult": "kgsearch.search.request",
    "ImportFailed": "kgsearch.errors",
    "IngestProblem": "kgsearch.reports",
    "IngestReport": "kgsearch.reports",
    "InvalidRequest": "kgsearch.errors",
    "KgsearchError": "kgsearch.errors",
    "Kind": "kgsearch.model",
    "LLM": "kgsearch.llm.base",
    "LegRank": "kgsearch.search.request",
    "MentionIn": "kgsearch.model",
    "Mentioned": "kgsearch.model",
    "MergeReport": "kgsearch.reports",
    "MigrationError": "kgsearch.errors",
    "MissingCredentials": "kgsearch.errors",
    "MissingDependency": "kgsearch.errors",
    "NeighborObject": "kgsearch.model",
    "Neighborhood": "kgsearch.model",
    "NotFound": "kgsearch.errors",
    "ObjectIn": "kgsearch.model",
    "ObjectRef": "kgsearch.model",
    "Page": "kgsearch.model",
    "Preview": "kgsearch.model",
    "ProviderError": "kgsearch.errors",
    "RagContext": "kgsearch.search.request",
    "Relationship": "kgsearch.model",
    "RelationshipIn": "kgsearch.model",
    "RelationshipResult": "kgsearch.search.request",
    "RetryPolicy": "kgsearch.lifecycle.runner",
    "SearchRequest": "kgsearch.search.request",
    "SearchResponse": "kgsearch.search.request",
    "Settings": "kgsearch.config",
    "Source": "kgsearch.model",
    "SourceIn": "kgsearch.model",
    "SourceMentions": "kgsearch.model",
    "Statement": "kgsearch.search.request",
    "Stats": "kgsearch.model",
    "Store": "kgsearch.store",
    "StoreError": "kgsearch.errors",
    "SummaryReport": "kgsearch.reports",
    "TextAdded": "kgsearch.model",
    "TextResult": "kgsearch.search.request",
    "connect": "kgsearch.store",
    "create_embedder": "kgsearch.embed",
}

__all__ = [
    "LLM",
    "BudgetExceeded",
    "Chunk",
    "ChunkIn",
    "ConfigError",
    "Conflict",
    "DeleteReport",
    "DimensionMismatch",
    "EmbedReport",
    "Embedder",
    "EmbeddingState",
    "EmbeddingStatus",
    "EmbeddingStatusReport",
    "EmbeddingStatusRow",
    "EmbeddingTodo",
    "Engine",
    "EnrichmentConfig",
    "Explain",
    "ExtractionFailed",
    "ExtractionRecord",
    "ExtractionReport",
    "ExtractionResult",
    "ExtractionStatus",
    "Filters",
    "FusedHit",
    "GraphObject",
    "GraphResult",
    "ImportFailed",
    "IngestProblem",
    "IngestReport",
    "InvalidRequest",
    "KgsearchError",
    "Kind",
    "LegRank",
    "MentionIn",
    "Mentioned",
    "MergeReport",
    "MigrationError",
    "MissingCredentials",
    "MissingDependency",
    "NeighborObject",
    "Neighborhood",
    "NotFound",
    "ObjectIn",
    "ObjectRef",
    "Page",
    "Preview",
    "ProviderError",
    "RagContext",
    "Relationship",
    "RelationshipIn",
    "RelationshipResult",
    "RetryPolicy",
    "SearchRequest",
    "SearchResponse",
    "Settings",
    "Source",
    "SourceIn",
    "SourceMentions",
    "Statement",
    "Stats",
    "Store",
    "StoreError",
    "SummaryReport",
    "TextAdded",
    "TextResult",
    "__version__",
    "connect",
    "create_embedder",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'kgsearch' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
