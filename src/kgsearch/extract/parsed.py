"""What parsing one reply produced (:class:`Parsed`), shared by the reply formats'
readers (:mod:`kgsearch.extract.parse`, :mod:`kgsearch.extract.lines`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kgsearch.extract.schema import ExtractedEntity, ExtractedGraph, ExtractedRelation, Rejection

__all__ = ["MAX_MALFORMED", "PIECE_KEPT", "QUOTES", "Parsed", "unquote"]

MAX_MALFORMED = 100
"""Malformed pieces kept per reply with their text; more are only counted."""
PIECE_KEPT = 2000
"""Characters kept of a malformed piece."""
QUOTES = "\"'“”‘’`"


@dataclass
class Parsed:
    """One reply, parsed.

    Attributes:
        graph: Every entity and relationship that could be read.
        rejected: The pieces that looked like records but could not be read.
        format: ``json``, ``tuples``, ``brackets``, ``triples`` or ``none``.
        entity_tags: For packed calls, the chunk number each entity was tagged with
            (parallel to ``graph.entities``; None when untagged).
        relation_tags: The same for ``graph.relationships``.
        more_malformed: Malformed pieces past :data:`MAX_MALFORMED`, counted only.
    """

    graph: ExtractedGraph = field(default_factory=ExtractedGraph)
    rejected: list[Rejection] = field(default_factory=list)
    format: str = "none"
    entity_tags: list[int | None] = field(default_factory=list)
    relation_tags: list[int | None] = field(default_factory=list)
    more_malformed: int = 0

    @property
    def items(self) -> int:
        """Entities plus relationships read."""
        return len(self.graph.entities) + len(self.graph.relationships)

    @property
    def records(self) -> int:
        """Items read plus pieces rejected: every record the reply seemed to hold."""
        found = len(self.graph.entities) + len(self.graph.relationships)
        return found + len(self.rejected) + self.more_malformed

    def add_entity(self, entity: ExtractedEntity, tag: int | None = None) -> None:
        """Keep ``entity`` (with its chunk tag, if any)."""
        self.graph.entities.append(entity)
        self.entity_tags.append(tag)

    def add_relation(self, relation: ExtractedRelation, tag: int | None = None) -> None:
        """Keep ``relation`` (with its chunk tag, if any)."""
        self.graph.relationships.append(relation)
        self.relation_tags.append(tag)

    def malformed(self, item: dict[str, Any] | str) -> None:
        """Record a piece that looked like a record but could not be read (only the
        first :data:`MAX_MALFORMED` are kept; the rest are counted)."""
        if len(self.rejected) >= MAX_MALFORMED:
            self.more_malformed += 1
            return
        self.rejected.append(Rejection(kind="record", reason="malformed", item=item))


def unquote(value: str) -> str:
    """``value`` without surrounding quotes and spaces."""
    value = value.strip()
    if len(value) >= 2 and value[0] in QUOTES and value[-1] in QUOTES:
        return value[1:-1].strip()
    return value.strip(QUOTES).strip()
