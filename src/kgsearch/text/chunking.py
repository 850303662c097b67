"""Splitting free text into chunks (pure functions)."""

from __future__ import annotations

import hashlib
import re

__all__ = ["content_digest", "split_text"]


def content_digest(text: str) -> str:
    """A stable 128-bit hex digest of a text (used for content-derived ids)."""
    return hashlib.blake2b(text.encode("utf-8"), digest_size=16).hexdigest()


_PARAGRAPH = re.compile(r"\n\s*\n")
_SENTENCE = re.compile(r"(?<=[.!?])\s+")


def split_text(text: str, max_chars: int) -> list[str]:
    """Split text into pieces of at most ``max_chars``.

    Paragraphs are packed greedily, long ones split at sentences, then words;
    paragraphs are rejoined with a blank line, pieces of one paragraph with a space.
    """
    units: list[tuple[str, str]] = []
    for para in _PARAGRAPH.split(text.strip()):
        joiner = "\n\n"
        parts = [para.strip()] if len(para) <= max_chars else _SENTENCE.split(para.strip())
        for part in parts:
            while len(part) > max_chars:
                cut = part.rfind(" ", 0, max_chars + 1)
                cut = cut if cut > 0 else max_chars
                units.append((part[:cut].strip(), joiner))
                part, joiner = part[cut:].strip(), " "
            if part.strip():
                units.append((part.strip(), joiner))
            joiner = " "
    pieces: list[str] = []
    for unit, joiner in units:
        if pieces and len(pieces[-1]) + len(joiner) + len(unit) <= max_chars:
            pieces[-1] += joiner + unit
        else:
            pieces.append(unit)
    return pieces
