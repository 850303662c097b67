"""Test helpers for kgsearch's own tests and for plugin authors.

The deterministic fake embedders live in :mod:`kgsearch.embed.fake` (they are also the
``fake:<dims>`` provider) and are re-exported here, so a plugin's tests need only this
package: ``from kgsearch.testing import FakeEmbedder``.
"""

from __future__ import annotations

from kgsearch.embed.fake import FailingEmbedder, FakeEmbedder, FlakyEmbedder

__all__ = ["FailingEmbedder", "FakeEmbedder", "FlakyEmbedder"]
