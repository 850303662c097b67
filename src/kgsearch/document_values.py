"""The document value: a document's text and where it came from.

It sits on the floor of values beside :mod:`kgsearch.model`, because two floors use
it: the readers in :mod:`kgsearch.io.documents` make documents, and the write path
(:mod:`kgsearch.writes.documents`) stores them, so no import runs up a floor.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["Document"]


@dataclass(frozen=True)
class Document:
    """A document's text and where it came from.

    Attributes:
        source_id: The source row it becomes (``doc:<path>``, or ``text-<digest>``).
        title: A display title (the file name).
        text: The document's text.
        uri: ``file://`` URI of the file, if any.
        sha256: Digest of the text, to tell an unchanged document on re-ingest.
        metadata: Extra facts kept on the source (path, format, bytes).
    """

    source_id: str
    title: str
    text: str
    uri: str | None = None
    sha256: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)
