"""The providers the engine composes for extraction: extractors by name and domain.

This is the one place that turns settings into an LLM client (with the store's
response cache in front of it) and an extractor, so nothing below the engine ever
chooses a provider.
"""

from __future__ import annotations

from collections.abc import Callable

from kgsearch.config import ExtractSettings, LLMSettings
from kgsearch.errors import InvalidRequest
from kgsearch.extract.schema import Extractor
from kgsearch.store.base import Store

__all__ = ["EXTRACTOR_NAMES", "ExtractorFactory", "extractor_factory"]

ExtractorFactory = Callable[[str, str], Extractor]
"""Makes the extractor for a name (``spacy``, ``llm``) and a domain."""

EXTRACTOR_NAMES = ("spacy", "llm", "none")


def extractor_factory(
    settings: ExtractSettings, llm: LLMSettings, store: Store
) -> ExtractorFactory:
    """The default extractor factory: spaCy offline, or the LLM extractor over the
    configured provider behind the store's response cache."""

    def make(name: str, domain: str) -> Extractor:
        raise InvalidRequest(
            f"unknown extractor {name!r}; choose one of {', '.join(EXTRACTOR_NAMES)}"
        )

    return make
