"""The one write path: every row the engine, the importer or an extraction job writes.

Builders turn inputs into plain store rows with pure functions:
:mod:`~kgsearch.writes.rows` (ids, endpoints, embedding texts),
:mod:`~kgsearch.writes.extracted` (extraction records), :mod:`~kgsearch.writes.merge`
(merges and splits), :mod:`~kgsearch.writes.forget` (rows derived again) and
:mod:`~kgsearch.writes.patch` (PATCH semantics). :mod:`~kgsearch.writes.batch` stores
them, one transaction and one bulk call per kind. :mod:`~kgsearch.writes.graph` writes
objects, relationships and mentions and :mod:`~kgsearch.writes.text` sources, chunks
and free text. Writing through these modules gives every row the same id, embedding
text and provenance rule, whoever writes it.
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
