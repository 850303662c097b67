"""Test helpers for kgsearch's own tests and for plugin authors.

- Deterministic fake embedders: :class:`FakeEmbedder` (also the ``fake:<dims>``
  provider, defined in :mod:`kgsearch.embed.fake`), :class:`FailingEmbedder` and
  :class:`FlakyEmbedder`; a deterministic extractor, :class:`FakeExtractor`.
- Slow-but-obvious oracles (:mod:`kgsearch.testing.oracles`): :func:`bfs`,
  :func:`cosine_scores` and :func:`assert_topk`.
- The fixture contract of the store conformance suite: :class:`StoreFactory`, and
  :class:`URLStoreFactory` implementing it for stores opened from a URL.

The suite itself is :mod:`kgsearch.testing.conformance`, imported only by the tests
that run it: it needs pytest and hypothesis, and this package needs neither.
"""

from __future__ import annotations

from kgsearch.embed.fake import FailingEmbedder, FakeEmbedder, FlakyEmbedder
from kgsearch.testing.extractors import FakeExtractor
from kgsearch.testing.oracles import Edge, assert_topk, bfs, cosine_scores
from kgsearch.testing.stores import StoreFactory, URLStoreFactory

__all__ = [
    "Edge",
    "FailingEmbedder",
    "FakeEmbedder",
    "FakeExtractor",
    "FlakyEmbedder",
    "StoreFactory",
    "URLStoreFactory",
    "assert_topk",
    "bfs",
    "cosine_scores",
]
