"""An embedder that answers known questions from vectors computed beforehand.

Benchmarks that time a search "excluding the query embedding" replay the question's
vector (no model time) and time the whole search: subtracting ``embedQueryMs`` instead
would also leave out the other texts a search embeds with its question (the anchored
leg's rest of the question, since the embed stage takes them in the same call), work a
peer system or an older version does not, or does mid-search. Any text not replayed is
embedded by the real model, as the search asks for it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np


class Replay:
    """``real`` with ``vectors`` (question text → vector) answered without the model."""

    def __init__(self, real: Any, vectors: Mapping[str, np.ndarray]) -> None:
        self.real = real
        self.vectors = vectors
        self.model_id, self.dims = real.model_id, real.dims

    def __getattr__(self, name: str) -> object:
        return getattr(self.real, name)

    def embed_query(self, text: str) -> np.ndarray:
        return self.vectors[text] if text in self.vectors else self.real.embed_query(text)

    def embed_queries(self, texts: Sequence[str]) -> list[np.ndarray]:
        missing = [t for t in texts if t not in self.vectors]
        many = getattr(self.real, "embed_queries", self.real.embed_documents)
        made = dict(zip(missing, many(missing), strict=True)) if missing else {}
        return [self.vectors[t] if t in self.vectors else made[t] for t in texts]


def replayed_engine(path: str, texts: Sequence[str]) -> Any:
    """An Engine over the store at ``path`` whose bundled model replays ``texts``'
    vectors (made here, in one batch), warmed as ``serve`` warms it, its vector indexes
    loaded: the setup of the benchmarks that time searches without the question's
    embedding."""
    from kgsearch import Engine, Kind, connect
    from kgsearch.embed import create_embedder

    real: Any = create_embedder("bundled")
    replay: Any = Replay(real, dict(zip(texts, real.embed_queries(texts), strict=True)))
    engine = Engine(connect(path), embedder=replay)
    for kind in (Kind.OBJECT, Kind.RELATIONSHIP):
        engine.store.wait_for_index("default", kind, 900)  # type: ignore[attr-defined]
    engine.warm()
    return engine
