"""The providers the engine composes for extraction: extractors by name and domain.

This is the one place that turns settings into an LLM client (recorded, replayed
and cached as configured) and an extractor, so nothing below the engine ever
chooses a provider.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import NoReturn

from pydantic import SecretStr

from kgsearch import registry
from kgsearch.config import ExtractSettings, LLMSettings, config_path
from kgsearch.embed.base import Embedder
from kgsearch.errors import InvalidRequest
from kgsearch.extract.conform import SimilarLabels
from kgsearch.extract.ontology import schema_from_setting
from kgsearch.extract.prompts import prompt_from_settings, with_schema
from kgsearch.extract.quality import QualityFiltered, QualityRules
from kgsearch.extract.run import LLMExtractor
from kgsearch.extract.schema import Extractor
from kgsearch.extract.spacy import SpacyExtractor
from kgsearch.http import CallGuard
from kgsearch.llm import create_llm
from kgsearch.llm.base import LLM
from kgsearch.llm.cache import CachedLLM, RecordingLLM, ReplayLLM, ResponseCache
from kgsearch.llm.guard import GuardedLLM
from kgsearch.registry import Registry

__all__ = [
    "EXTRACTORS",
    "EXTRACTOR_NAMES",
    "ExtractorFactory",
    "ExtractorInput",
    "extractor_factory",
    "forecast_extractor",
    "keywords_llm",
    "make_llm",
    "quality_rules",
]

ExtractorFactory = Callable[[str, str], Extractor]
"""Makes the extractor for a name (``spacy``, ``llm``) and a domain."""

EXTRACTOR_NAMES = registry.names("extractor")
"""The extractors a user chooses from (``none``: chunks only, no extraction)."""


@dataclass
class ExtractorInput:
    """What building an extractor may use.

    Attributes:
        settings: The extraction settings.
        llm: The chat-model settings.
        cache: The store's response cache, if any.
        guard: Deadline and breaker for provider calls, if any.
        domain: The domain the extractor is for.
        shared: Per-factory state a part keeps between domains (a loaded model).
        embedder: Returns the project's embedder (schema labels mapped by embedding).
    """

    settings: ExtractSettings
    llm: LLMSettings
    cache: ResponseCache | None
    guard: CallGuard | None
    domain: str
    shared: dict[str, Extractor] = field(default_factory=dict)
    embedder: Callable[[], Embedder] | None = None


EXTRACTORS: Registry[Callable[[ExtractorInput], Extractor]] = Registry("extractor")
"""Extractor builders by name (``none`` builds nothing: no extraction is run)."""


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
    embedder: Callable[[], Embedder] | None = None,
) -> ExtractorFactory:
    """The default extractor factory: spaCy offline, or the LLM extractor over the
    configured provider (every one through ``guard``). The spaCy model loads once, on
    first use, and is shared by every domain (it has none); ``embedder`` (the project's)
    is loaded only when a schema label needs mapping by embedding."""
    shared: dict[str, Extractor] = {}

    def make(name: str, domain: str) -> Extractor:
        if name == "openie":  # imported extractions, not a part that extracts
            raise InvalidRequest(
                "these chunks wait for an imported extraction: run "
                "`kgsearch ingest --extractions FILE` with its file again"
            )
        if name not in EXTRACTORS:
            _unknown(name)
        given = ExtractorInput(settings, llm, cache, guard, domain, shared, embedder)
        return EXTRACTORS.get(name)(given)

    return make


def _spacy(given: ExtractorInput) -> Extractor:
    """spaCy, loaded once per factory and shared by every domain (it has none)."""
    if "spacy" not in given.shared:
        rules = quality_rules(given.settings, extractive=True)
        given.shared["spacy"] = QualityFiltered(SpacyExtractor(), rules)
    return given.shared["spacy"]


def _llm(given: ExtractorInput) -> Extractor:
    settings = given.settings
    prompt = with_schema(
        prompt_from_settings({**settings.model_dump(exclude_none=True), "domain": given.domain}),
        schema_from_setting(settings.schema_, base=config_path().parent),
    )
    rules = quality_rules(settings, extractive=False)
    if settings.schema_label_similarity and given.embedder is not None:
        similar = SimilarLabels(given.embedder, threshold=settings.schema_label_similarity)
        rules = replace(rules, similar_labels=similar)
    return LLMExtractor(
        make_llm(given.llm, given.cache, given.guard),
        prompt,
        rules=rules,
        gleanings=settings.gleanings,
        pack_chars=settings.pack_chars,
        max_workers=given.llm.max_concurrency,
        max_reply_chars=settings.max_reply_chars,
    )


def _unknown(name: str) -> NoReturn:
    raise InvalidRequest(f"unknown extractor {name!r}; choose one of {', '.join(EXTRACTOR_NAMES)}")


def _none(given: ExtractorInput) -> Extractor:
    """``none`` extracts nothing: the caller runs no extraction, so a builder asked for
    it answers as for an unknown name."""
    return _unknown("none")


EXTRACTORS.register("spacy", _spacy)
EXTRACTORS.register("llm", _llm)
EXTRACTORS.register("none", _none)
