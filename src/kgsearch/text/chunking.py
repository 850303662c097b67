"""Splitting free text into chunks (pure functions).

The splitter works on ranges of the text, so a piece knows which characters of the
text it holds: the ranges not to mine (code, tables) follow the text into its pieces,
and :func:`mask_spans` blanks them out before an extractor reads a chunk.
"""

from __future__ import annotations

import bisect
import hashlib
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from kgsearch.document_values import Section, Span

__all__ = [
    "Piece",
    "chunk_metadata",
    "content_digest",
    "mask_spans",
    "split_spans",
    "split_text",
    "unmined_spans",
]


def content_digest(text: str) -> str:
    """A stable 128-bit hex digest of a text (used for content-derived ids)."""
    return hashlib.blake2b(text.encode("utf-8"), digest_size=16).hexdigest()


_PARAGRAPH = re.compile(r"\n\s*\n")
_SENTENCE = re.compile(r"(?<=[.!?])\s+")
_MASKED = re.compile(r"[^\n]")


@dataclass
class Piece:
    """A chunk's text and the ranges of it not to mine."""

    text: str
    unmined: list[Span] = field(default_factory=list)


def _strip(text: str, start: int, end: int) -> Span:
    """``text[start:end].strip()`` as a range."""
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def _between(text: str, start: int, end: int, pattern: re.Pattern[str]) -> list[Span]:
    """The ranges ``pattern.split(text[start:end])`` would return."""
    out, at = [], start
    for match in pattern.finditer(text, start, end):
        out.append((at, match.start()))
        at = match.end()
    out.append((at, end))
    return out


def _units(text: str, max_chars: int) -> list[tuple[int, int, str]]:
    """The ranges to pack, each with the joiner that goes before it: paragraphs, long
    ones cut at sentences, then words."""
    units: list[tuple[int, int, str]] = []
    start, end = _strip(text, 0, len(text))
    for p_start, p_end in _between(text, start, end, _PARAGRAPH):
        joiner = "\n\n"
        whole = _strip(text, p_start, p_end)
        parts = (
            [whole]
            if p_end - p_start <= max_chars
            else _between(text, whole[0], whole[1], _SENTENCE)
        )
        for a, b in parts:
            while b - a > max_chars:
                cut = text.rfind(" ", a, a + max_chars + 1) - a
                cut = cut if cut > 0 else max_chars
                units.append((*_strip(text, a, a + cut), joiner))
                (a, b), joiner = _strip(text, a + cut, b), " "
            a, b = _strip(text, a, b)
            if a < b:
                units.append((a, b, joiner))
            joiner = " "
    return units


def split_spans(text: str, max_chars: int, unmined: Sequence[Span] = ()) -> list[Piece]:
    """Split text into pieces of at most ``max_chars``, carrying the ``unmined``
    ranges of ``text`` into each piece.

    Paragraphs are packed greedily, long ones split at sentences, then words;
    paragraphs are rejoined with a blank line, pieces of one paragraph with a space.
    """
    pieces: list[Piece] = []
    placed: list[list[tuple[int, int, int]]] = []  # per piece: (start, end, offset)
    for a, b, joiner in _units(text, max_chars):
        unit = text[a:b]
        if pieces and len(pieces[-1].text) + len(joiner) + len(unit) <= max_chars:
            pieces[-1].text += joiner
            placed[-1].append((a, b, len(pieces[-1].text)))
            pieces[-1].text += unit
        else:
            pieces.append(Piece(unit))
            placed.append([(a, b, 0)])
    spans = _joined(text, unmined)
    for piece, units in zip(pieces, placed, strict=True):
        for a, b, offset in units:
            for k in range(bisect.bisect_right(spans, a, key=lambda span: span[1]), len(spans)):
                lo, hi = spans[k]
                if lo >= b:
                    break
                piece.unmined.append((offset + max(lo, a) - a, offset + min(hi, b) - a))
        piece.unmined = _joined(piece.text, piece.unmined)
    return pieces


def _joined(text: str, spans: Iterable[Span]) -> list[Span]:
    """Sorted ranges, neighbours separated only by whitespace made one."""
    out: list[Span] = []
    for a, b in sorted(spans):
        if out and not text[out[-1][1] : a].strip():
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out


def chunk_metadata(section: Section, piece: Piece) -> dict[str, Any]:
    """A chunk's metadata: its section path (``section``, ``Guide > Install``, and
    ``section_path``) when it has one, and its ``unmined`` ranges when there are any."""
    metadata: dict[str, Any] = {}
    if section.path:
        metadata["section"] = section.title
        metadata["section_path"] = list(section.path)
    if piece.unmined:
        metadata["unmined"] = [list(span) for span in piece.unmined]
    return metadata


def split_text(text: str, max_chars: int) -> list[str]:
    """Split text into pieces of at most ``max_chars`` (see :func:`split_spans`)."""
    return [piece.text for piece in split_spans(text, max_chars)]


def unmined_spans(text: str, metadata: dict[str, Any]) -> list[Span]:
    """The well-formed ``unmined`` ranges of a chunk's metadata, clipped to its text
    (metadata can come from any client, so anything else is ignored)."""
    found = metadata.get("unmined")
    if not isinstance(found, list):
        return []
    spans: list[Span] = []
    for item in found:
        if (
            isinstance(item, list | tuple)
            and len(item) == 2
            and all(isinstance(x, int) and not isinstance(x, bool) for x in item)
        ):
            a, b = max(item[0], 0), min(item[1], len(text))
            if a < b:
                spans.append((a, b))
    return spans


def mask_spans(text: str, spans: Iterable[Span]) -> str:
    """``text`` with every character in ``spans`` but line breaks made a space, so
    offsets stay where they were and nothing in the ranges is read as words."""
    parts, at = [], 0
    for a, b in sorted(spans):
        a = max(a, at)
        if a < b:
            parts += [text[at:a], _MASKED.sub(" ", text[a:b])]
            at = b
    return "".join([*parts, text[at:]])
