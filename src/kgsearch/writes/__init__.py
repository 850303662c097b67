"""The one write path: every row the engine, the importer or an extraction job writes.

:mod:`~kgsearch.writes.rows` turns inputs into store rows (ids, endpoints, embedding
texts), :mod:`~kgsearch.writes.patch` applies PATCH semantics,
:mod:`~kgsearch.writes.graph` writes objects, relationships and mentions, and
:mod:`~kgsearch.writes.text` writes sources, chunks and free text. Writing through
these modules gives every row the same id, embedding text and provenance rule,
whoever writes it.
"""

from kgsearch.writes.rows import (
    TextRules,
    describe_ref,
    object_id,
    refresh_relationship_texts,
    relationship_id,
    require_endpoints,
    resolve_endpoints,
)

__all__ = [
    "TextRules",
    "describe_ref",
    "object_id",
    "refresh_relationship_texts",
    "relationship_id",
    "require_endpoints",
    "resolve_endpoints",
]
