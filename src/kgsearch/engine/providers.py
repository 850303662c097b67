"""The providers the engine composes for extraction: extractors by name and domain.

This is the one place that turns settings into an LLM client (recorded, replayed
and cached as configured) and an extractor, so nothing below the engine ever
chooses a provider.
"""

from __future__ import annotations

from collections.abc import Callable

from pydantic import SecretStr

from kgsearch.config import ExtractSettings, LLMSettings
from kgsearch.errors import InvalidRequest
from kgsearch.extract.prompts import prompt_from_settings
from kgsearch.extract.quality import QualityFiltered, QualityRules
from kgsearch.extract.run import LLMExtractor
from kgsearch.extract.schema import Extractor
from kgsearch.extract.spacy import SpacyExtractor
from kgsearch.http import CallGuard
from kgsearch.llm import create_llm
from kgsearch.llm.base import LLM
from kgsearch.llm.cache import CachedLLM, RecordingLLM, ReplayLLM, ResponseCache
from kgsearch.llm.guard import GuardedLLM

__all__ = [
    "EXTRACTOR_NAMES",
    "ExtractorFactory",
    "extractor_factory",
    "forecast_extractor",
    "keywords_llm",
    "make_llm",
    "quality_rules",
]

ExtractorFactory = Callable[[str, str], Extractor]
"""Makes the extractor for a name (``spacy``, ``llm``) and a domain."""

EXTRACTOR_NAMES = ("spacy", "llm", "none")


def make_llm(
    settings: LLMSettings, cache: ResponseCache | None, guard: CallGuard | None = None
) -> LLM:
    """The chat model settings name: replayed from a file, or the provider (through
    ``guard``: deadline and breaker) behind the store's response cache, with every
    call recorded to a file when asked."""
    if settings.replay is not None:
        llm: LLM = ReplayLLM(settings.replay)
    else:
        key = settings.api_key.get_secret_value() if settings.api_key is not None else None
        options = {
            "timeout": settings.timeout,
            "max_retries": settings.max_retries,
            "max_concurrency": settings.max_concurrency,
            **{k: v for k, v in (("base_url", settings.base_url), ("api_key", key)) if v},
        }
        llm = create_llm(settings.model, **options)
        if guard is not None:
            llm = GuardedLLM(llm, guard)
        if settings.cache and cache is not None:
            llm = CachedLLM(llm, cache)
    if settings.record is not None:
        llm = RecordingLLM(llm, settings.record)
    return llm


def keywords_llm(
    settings: LLMSettings,
    cache: ResponseCache | None,
    guard: CallGuard,
    llm: LLM | None = None,
) -> LLM:
    """The chat model a ``keywords="llm"`` search asks: ``llm`` if given, else the
    configured one with one retry and a client timeout of the keywords deadline; in
    both cases through ``guard`` (the search's short deadline and its own breaker)
    and behind the store's response cache, so a repeated query costs no call."""
    if llm is None:
        deadline = settings.keywords_deadline_seconds
        fast = settings.model_copy(update={"timeout": deadline, "max_retries": 1})
        return make_llm(fast, cache, guard)
    llm = GuardedLLM(llm, guard)
    return CachedLLM(llm, cache) if settings.cache and cache is not None else llm


def quality_rules(settings: ExtractSettings, *, extractive: bool) -> QualityRules:
    """The quality filter of settings. Extractive descriptions (a sentence of the
    chunk, as spaCy gives) skip the minimum-length rule, which is there for written
    descriptions: a short sentence is still a fact."""
    return QualityRules(
        min_description_length=0 if extractive else settings.min_description_length,
        check_in_text=settings.check_names_in_text,
        strict_in_text=settings.strict_grounding,
        max_relationships=settings.max_relationships,
    )


def forecast_extractor(
    settings: ExtractSettings, llm: LLMSettings, name: str, domain: str
) -> Extractor:
    """An extractor for dry-run forecasts only: prompt and price, no credentials
    needed (its model is never called)."""
    placeholder = llm.model_copy(
        update={"api_key": llm.api_key or SecretStr("dry-run"), "record": None, "replay": None}
    )
    return extractor_factory(settings, placeholder, None)(name, domain)


def extractor_factory(
    settings: ExtractSettings,
    llm: LLMSettings,
    cache: ResponseCache | None,
    guard: CallGuard | None = None,
) -> ExtractorFactory:
    """The default extractor factory: spaCy offline, or the LLM extractor over the
    configured provider (every one through ``guard``). The spaCy model loads once, on
    first use, and is shared by every domain (it has none)."""
    spacy: list[Extractor] = []

    def make(name: str, domain: str) -> Extractor:
        if name == "spacy":
            if not spacy:
                rules = quality_rules(settings, extractive=True)
                spacy.append(QualityFiltered(SpacyExtractor(), rules))
            return spacy[0]
        if name == "llm":
            prompt = prompt_from_settings(
                {**settings.model_dump(exclude_none=True), "domain": domain}
            )
            return LLMExtractor(
                make_llm(llm, cache, guard),
                prompt,
                rules=quality_rules(settings, extractive=False),
                gleanings=settings.gleanings,
                pack_chars=settings.pack_chars,
                max_workers=llm.max_concurrency,
                max_reply_chars=settings.max_reply_chars,
            )
        if name == "openie":
            raise InvalidRequest(
                "these chunks wait for an imported extraction: run "
                "`kgsearch ingest --extractions FILE` with its file again"
            )
        raise InvalidRequest(
            f"unknown extractor {name!r}; choose one of {', '.join(EXTRACTOR_NAMES)}"
        )

    return make
