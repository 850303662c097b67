"""English function words that carry no meaning of their own, shared by the BM25
query builder (they match most rows and slow an OR query down) and the multi-hop
name linker (a span of them is never a name); each adds a few words of its own."""

from __future__ import annotations

__all__ = ["STOPWORDS"]

STOPWORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "by",
        "did",
        "do",
        "does",
        "for",
        "from",
        "has",
        "have",
        "how",
        "in",
        "is",
        "it",
        "its",
        "of",
        "on",
        "or",
        "that",
        "the",
        "this",
        "to",
        "was",
        "were",
        "what",
        "when",
        "where",
        "which",
        "who",
        "whom",
        "whose",
        "why",
        "with",
    ]
)
