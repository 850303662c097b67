"""The document value: a document's text, its sections and where it came from.

It sits on the floor of values beside :mod:`kgsearch.model`, because two floors use
it: the readers in :mod:`kgsearch.io.documents` make documents, and the write path
(:mod:`kgsearch.writes.documents`) stores them, so no import runs up a floor.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["Document", "Section", "Span"]

Span = tuple[int, int]
"""A ``[start, end)`` character range."""


@dataclass(frozen=True)
class Section:
    """A part of a document under one heading: chunks never span two sections.

    Attributes:
        path: The heading titles, outer to inner (``("Guide", "Install", "Linux")``);
            empty for text before the first heading or a document without headings.
        text: The section's text (a Markdown section keeps its heading line).
        unmined: Ranges of ``text`` kept for reading but not mined for entities (code
            blocks, inline code, tables), in order and not overlapping.
    """

    path: tuple[str, ...]
    text: str
    unmined: tuple[Span, ...] = ()

    @property
    def title(self) -> str:
        """The path as one string, ``Guide > Install > Linux`` (empty without headings)."""
        return " > ".join(self.path)


@dataclass(frozen=True)
class Document:
    """A document's text and where it came from.

    Attributes:
        source_id: The source row it becomes (``doc:<path>``, or ``text-<digest>``).
        title: A display title (the file name).
        text: The document's whole text.
        uri: ``file://`` URI of the file, if any.
        sha256: Digest of the text, to tell an unchanged document on re-ingest.
        metadata: Extra facts kept on the source (path, format, bytes).
        sections: The text's sections in order; empty means one section, the whole
            text, with no heading.
    """

    source_id: str
    title: str
    text: str
    uri: str | None = None
    sha256: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)
    sections: tuple[Section, ...] = ()
