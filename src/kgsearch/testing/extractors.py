"""FakeExtractor: a deterministic extractor for unit tests (no model, no spaCy).

Every run of capitalised words is an entity of type ``thing``; consecutive entities
in a sentence are related (``appears_with``), described by the sentence. A chunk
containing ``fail_marker`` comes back with an error and a raw reply (an unparseable
model reply), and ``raise_on`` makes the whole batch raise (a provider outage).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Sequence
from itertools import pairwise

from kgsearch.errors import ProviderError
from kgsearch.extract.schema import (
    ChunkText,
    ExtractedEntity,
    ExtractedGraph,
    ExtractedRelation,
    ExtractionResult,
)

__all__ = ["FakeExtractor"]

_NAME = re.compile(r"\b[A-Z][\w'-]+(?:\s+[A-Z][\w'-]+)*")
_SENTENCE = re.compile(r"(?<=[.!?])\s+")


class FakeExtractor:
    """Capitalised words → entities, neighbours in a sentence → relationships.

    Args:
        version: Part of each chunk's task input hash (change it to re-extract).
        fail_marker: Chunks containing it fail with an unparseable "reply".
        raise_on: Batches with a chunk containing it raise ProviderError.
    """

    name = "fake"

    def __init__(
        self, *, version: str = "1", fail_marker: str = "UNPARSEABLE", raise_on: str = "OUTAGE"
    ) -> None:
        self._version = version
        self.fail_marker = fail_marker
        self.raise_on = raise_on
        self.calls: list[str] = []
        self._lock = threading.Lock()

    @property
    def version(self) -> str:
        """``fake@<version>``."""
        return f"fake@{self._version}"

    def extract(self, chunks: Sequence[ChunkText]) -> list[ExtractionResult]:
        """One result per chunk, in order."""
        with self._lock:
            self.calls.extend(c.id for c in chunks)
        if any(self.raise_on in c.text for c in chunks):
            raise ProviderError("fake provider is down")
        return [self._one(c) for c in chunks]

    def _one(self, chunk: ChunkText) -> ExtractionResult:
        if self.fail_marker in chunk.text:
            return ExtractionResult(
                chunk_id=chunk.id,
                extractor=self.name,
                model="fake:model",
                error="reply could not be parsed",
                raw=[f"garbage reply for {chunk.id}"],
            )
        entities: dict[str, ExtractedEntity] = {}
        relations: list[ExtractedRelation] = []
        for sentence in _SENTENCE.split(chunk.text):
            names = [m.group(0) for m in _NAME.finditer(sentence)]
            for name in names:
                entities.setdefault(name, ExtractedEntity(name=name, type="thing"))
            for a, b in pairwise(names):
                if a != b:
                    relations.append(
                        ExtractedRelation(
                            source=a, target=b, relation="appears_with", description=sentence
                        )
                    )
        return ExtractionResult(
            chunk_id=chunk.id,
            graph=ExtractedGraph(entities=list(entities.values()), relationships=relations),
            extractor=self.name,
            model="fake:model",
            cost_usd=0.0,
        )
