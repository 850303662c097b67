"""kgsearch: make a knowledge graph searchable by meaning.

A typed graph (objects, relationships, chunks, sources) per project, embedded in a
graph-aware way with an honest lifecycle, answered by one hybrid search::

    import kgsearch

    engine = kgsearch.Engine(kgsearch.connect("graph.db"))
    engine.add_objects([kgsearch.ObjectIn(type="Person", key="ada", properties={"name": "Ada"})])
    engine.embed_pending()
    engine.search("who is Ada?")
"""

from kgsearch.config import Settings
from kgsearch.embed import create_embedder
from kgsearch.embed.base import Embedder
from kgsearch.engine import Engine
from kgsearch.errors import (
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

__all__ = [
    "LLM",
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
