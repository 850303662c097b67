"""An extraction made elsewhere, replayed as an extractor.

:class:`ImportedExtractor` answers a chunk with the imported record whose passage text
matches it (:func:`kgsearch.extract.openie.text_key`), so imported LLM output goes
through the same tasks, records, quality filter and graph build as a live extractor.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from kgsearch.extract.openie import OpenIERecord, index_by_text, text_key
from kgsearch.extract.schema import ChunkText, ExtractionResult

__all__ = ["ImportedExtractor"]


class ImportedExtractor:
    """Answers from imported extraction records, by passage text.

    Args:
        records: The imported records.
        source: Where they came from (a file path); part of the version.
    """

    def __init__(self, records: Sequence[OpenIERecord], *, source: str) -> None:
        self._index = index_by_text(records)
        digest = hashlib.sha256()
        for record in records:
            digest.update(record.passage.encode("utf-8", "surrogatepass"))
            digest.update(record.graph.model_dump_json().encode())
        models = sorted({r.model for r in records if r.model})
        self._version = (
            f"imported:{','.join(models) or 'unknown'}:{source}:{digest.hexdigest()[:16]}"
        )
        self._name = records[0].extractor if records else "openie"

    @property
    def name(self) -> str:
        """The records' extractor label (``openie``)."""
        return self._name

    @property
    def version(self) -> str:
        """The models, the source and a digest of the records."""
        return self._version

    def extract(self, chunks: Sequence[ChunkText]) -> list[ExtractionResult]:
        """The record of each chunk's text; a chunk with none gets an error result."""
        results = []
        for chunk in chunks:
            record = self._index.get(text_key(chunk.text))
            if record is None:
                results.append(
                    ExtractionResult(
                        chunk_id=chunk.id,
                        extractor=self._name,
                        error="no imported extraction matches this chunk's text",
                    )
                )
            else:
                results.append(record.result(chunk.id))
        return results
