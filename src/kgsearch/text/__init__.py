"""Pure, deterministic builders of the text that gets embedded.

Relationships become triplets (``"Alice works for Acme Corp"``), objects become
graph-aware text (``"[Type: #person] [Role: CEO] Ada Lovelace — …"``), chunks keep
their text with an optional source title, and queries may carry a type hint. The text
and its :func:`text_hash` are stored with each row; :data:`TEXT_VERSION` and
:func:`config_fingerprint` tell when stored text is stale.
"""

from kgsearch.text.enrich import (
    CONTENT_FIELDS,
    TEXT_VERSION,
    EnrichmentConfig,
    TypeRule,
    chunk_text,
    config_fingerprint,
    enrich_query,
    load_enrichment_config,
    object_text,
    text_hash,
)
from kgsearch.text.triplet import display_name, humanize_relation_type, triplet_text

__all__ = [
    "CONTENT_FIELDS",
    "TEXT_VERSION",
    "EnrichmentConfig",
    "TypeRule",
    "chunk_text",
    "config_fingerprint",
    "display_name",
    "enrich_query",
    "humanize_relation_type",
    "load_enrichment_config",
    "object_text",
    "text_hash",
    "triplet_text",
]
