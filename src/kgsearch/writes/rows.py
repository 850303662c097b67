"""Turning inputs into store rows: ids, resolved endpoints and the text to embed.

The write services (:mod:`kgsearch.writes.graph`, :mod:`kgsearch.writes.text`) and the
importer share these helpers, so a row written either way gets the same id and exactly
the same embedding text.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from kgsearch.errors import NotFound
from kgsearch.model import ChunkIn, Kind, ObjectIn, ObjectRef, Relationship, RelationshipIn
from kgsearch.store.base import Endpoint, GraphReads, ObjectRow, RelationshipRow, TextUpdate
from kgsearch.text import (
    TEXT_VERSION,
    EnrichmentConfig,
    chunk_text,
    object_text,
    text_hash,
    triplet_text,
)
from kgsearch.text.enrich import utf8
from kgsearch.writes.stores import TextStore

__all__ = [
    "Rules",
    "TextRules",
    "describe_ref",
    "object_id",
    "refresh_relationship_texts",
    "relationship_id",
    "require_endpoints",
    "resolve_endpoints",
    "rewritten",
]

_KEY = b"kgsearch-ids-v1"


def _digest_id(text: str) -> str:
    """A UUID-shaped id from a 128-bit BLAKE2b digest (stable across runs and machines)."""
    h = hashlib.blake2b(utf8(text), digest_size=16, key=_KEY).hexdigest()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def object_id(project: str, type_: str, key: str) -> str:
    """Deterministic id of an object given no explicit id (same input → same id)."""
    return _digest_id(f"object\x1f{project}\x1f{type_}\x1f{key}")


def relationship_id(project: str, type_: str, source_id: str, target_id: str) -> str:
    """Deterministic id of a relationship given no explicit id."""
    return _digest_id(f"rel\x1f{project}\x1f{type_}\x1f{source_id}\x1f{target_id}")


@dataclass(frozen=True)
class TextRules:
    """How embedding texts are built: enrichment config, mode and token budget."""

    config: EnrichmentConfig
    graph_aware: bool = True
    count_tokens: Callable[[str], int] | None = None
    max_tokens: int | None = None

    def object_text(
        self, type_: str, key: str, properties: dict[str, object], tags: Sequence[str]
    ) -> str:
        """The embedding text of an object under these rules."""
        return object_text(
            type_,
            key,
            properties,
            tags=tags,
            config=self.config,
            graph_aware=self.graph_aware,
            count_tokens=self._tokens_at_most(),
            max_tokens=self.max_tokens,
        )

    def _tokens_at_most(self) -> Callable[[str], int] | None:
        """An upper bound of a text's tokens: its length while that is under the budget
        (a token covers at least one character, and two are special), else the
        embedder's count, which is the slow part. None without a budget."""
        count, budget = self.count_tokens, self.max_tokens
        if count is None or budget is None:
            return None
        return lambda text: len(text) if len(text) < budget - 2 else count(text)

    def object_row(self, project: str, item: ObjectIn) -> ObjectRow:
        """A write-ready object row."""
        text = self.object_text(item.type, item.key, dict(item.properties), item.tags)
        return ObjectRow(
            id=item.id or object_id(project, item.type, item.key),
            type=item.type,
            key=item.key,
            tags=list(item.tags),
            properties=dict(item.properties),
            labels=list(item.labels),
            text=text,
            text_hash=text_hash(text),
            text_version=TEXT_VERSION,
        )

    @staticmethod
    def relationship_text(
        type_: str, source: Endpoint, target: Endpoint, label: str | None, description: str | None
    ) -> str:
        """Seed 000's triplet text, with ``: description`` when one exists."""
        return triplet_text(source.name, type_, target.name, label=label, description=description)

    def relationship_row(
        self, project: str, item: RelationshipIn, source: Endpoint, target: Endpoint
    ) -> RelationshipRow:
        """A write-ready relationship row with resolved endpoints."""
        text = self.relationship_text(item.type, source, target, item.label, item.description)
        return RelationshipRow(
            id=item.id or relationship_id(project, item.type, source.id, target.id),
            type=item.type,
            source_id=source.id,
            target_id=target.id,
            label=item.label,
            properties=dict(item.properties),
            weight=item.weight,
            valid_from=item.valid_from,
            valid_to=item.valid_to,
            description=item.description,
            source_chunks=list(item.source_chunks),
            text=text,
            text_hash=text_hash(text),
            text_version=TEXT_VERSION,
        )

    @staticmethod
    def chunk_text(item: ChunkIn, source_title: str | None) -> tuple[str, str]:
        """(text, hash) of a chunk."""
        text = chunk_text(item.text, source_title)
        return text, text_hash(text)


Rules = Callable[[], TextRules]
"""Returns the text rules. Called only once a row is built, so a write that fails
validation never makes the engine load its embedder (the rules need its tokenizer)."""


def resolve_endpoints(
    store: GraphReads, project: str, refs: Sequence[str | ObjectRef]
) -> tuple[dict[str | ObjectRef, Endpoint], list[str | ObjectRef]]:
    """Resolve ids and ``{type, key}`` refs to live objects; return (found, missing)."""
    ids = [r for r in refs if isinstance(r, str)]
    natural = [r for r in refs if isinstance(r, ObjectRef)]
    found: dict[str | ObjectRef, Endpoint] = {}
    for key, endpoint in store.endpoints(project, ids).items():
        found[key] = endpoint
    for ref, endpoint in store.resolve(project, natural).items():
        found[ref] = endpoint
    missing = list(dict.fromkeys(r for r in refs if r not in found))
    return found, missing


def describe_ref(ref: str | ObjectRef) -> str:
    """A readable reference for error messages."""
    return ref if isinstance(ref, str) else f"{ref.type}/{ref.key}"


def require_endpoints(
    store: GraphReads, project: str, items: Sequence[RelationshipIn]
) -> dict[str | ObjectRef, Endpoint]:
    """Resolve every endpoint of ``items`` or raise naming the missing ones.

    Raises:
        NotFound: An endpoint is not a live object of the project.
    """
    refs: list[str | ObjectRef] = []
    for item in items:
        refs.extend((item.source, item.target))
    found, missing = resolve_endpoints(store, project, refs)
    if missing:
        shown = ", ".join(describe_ref(r) for r in missing[:10])
        raise NotFound(
            f"relationship endpoint(s) not found in project {project!r}: {shown}",
            details={"missing": [describe_ref(r) for r in missing]},
        )
    return found


def rewritten(r: Relationship, **changes: Any) -> RelationshipIn:
    """A stored relationship as the input that writes it again, with ``changes`` (any
    of :class:`RelationshipIn`'s fields; an unknown one is refused by the model)."""
    fields: dict[str, Any] = {
        "id": r.id,
        "type": r.type,
        "source": r.source_id,
        "target": r.target_id,
        "label": r.label,
        "properties": r.properties,
        "weight": r.weight,
        "valid_from": r.valid_from,
        "valid_to": r.valid_to,
        "description": r.description,
        "source_chunks": list(r.source_chunks),
    }
    return RelationshipIn(**{**fields, **changes})


def refresh_relationship_texts(store: TextStore, project: str, rels: Sequence[Relationship]) -> int:
    """Rebuild the triplet texts of ``rels`` from their endpoints' current names.

    Returns the number of relationships whose text changed (they become pending).
    """
    ends = store.endpoints(project, [i for r in rels for i in (r.source_id, r.target_id)])
    updates = []
    for r in rels:
        if r.source_id in ends and r.target_id in ends:
            text = TextRules.relationship_text(
                r.type, ends[r.source_id], ends[r.target_id], r.label, r.description
            )
            updates.append(TextUpdate(r.id, text, text_hash(text), TEXT_VERSION))
    return store.set_texts(project, Kind.RELATIONSHIP, updates)
