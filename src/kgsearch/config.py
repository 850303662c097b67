"""Settings, read only at the edges (CLI, server factories, ``Engine.from_settings``).

Precedence: explicit argument or CLI flag > ``KGSEARCH_*`` environment variables
(nested with ``__``, e.g. ``KGSEARCH_STORE__URL``) > ``kgsearch.toml`` in the
working directory (or the file named by ``KGSEARCH_CONFIG``) > defaults.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

from kgsearch.urls import redact_url

__all__ = [
    "BudgetSettings",
    "EmbedSettings",
    "ExtractSettings",
    "LLMSettings",
    "SearchSettings",
    "Settings",
    "StoreSettings",
    "config_path",
]


class StoreSettings(BaseModel):
    """Where the graph lives."""

    model_config = ConfigDict(extra="forbid")

    url: str = Field(
        default="kgsearch.db",
        description="sqlite:///path.db, a path, :memory:, or postgresql://…",
    )
    project: str = Field(default="default", description="Project used when none is given")
    read_url: str | None = Field(
        default=None,
        description="postgresql://… of a read replica of url: searches and listings read "
        "there, writes and workers use url",
    )


class EmbedSettings(BaseModel):
    """Which embedder and how the lifecycle retries."""

    model_config = ConfigDict(extra="forbid")

    model: str = Field(
        default="bundled", description="provider:model, e.g. openai:text-embedding-3-small"
    )
    base_url: str | None = Field(default=None, description="OpenAI-compatible endpoint")
    api_key: SecretStr | None = Field(default=None, description="Key for the HTTP provider")
    batch_size: int = Field(default=512, ge=1, le=10_000)
    max_attempts: int = Field(default=5, ge=1, le=100)
    backoff_seconds: float = Field(default=1.0, ge=0)
    enrichment_config: Path | None = Field(default=None, description="Per-type enrichment JSON")
    fast_queries: bool | None = Field(
        default=None,
        description="The bundled model embeds search queries through its int8 query graph "
        "(about a third less CPU a query; on by default for bundled, false embeds them "
        "exactly as documents)",
    )


class SearchSettings(BaseModel):
    """Search defaults."""

    model_config = ConfigDict(extra="forbid")

    rrf_k: int = Field(default=60, ge=1)
    limit: int = Field(default=10, ge=1, le=100)
    query_deadline_seconds: float = Field(
        default=5.0, gt=0, description="A search waits this long for a remote query embedding"
    )
    breaker_failures: int = Field(
        default=3, ge=1, description="Query embedding failures in a row that open the breaker"
    )
    breaker_cooldown_seconds: float = Field(
        default=30.0, ge=0, description="Searches skip a failing embedder this long"
    )


class LLMSettings(BaseModel):
    """The chat model used by LLM extraction (and later descriptions and reports)."""

    model_config = ConfigDict(extra="forbid")

    model: str = Field(
        default="openai:gpt-4o-mini",
        description="provider:model, e.g. openai:gpt-4o-mini or ollama:llama3.1",
    )
    base_url: str | None = Field(
        default=None, description="OpenAI-compatible endpoint (Ollama, vLLM, llama.cpp…)"
    )
    api_key: SecretStr | None = Field(default=None, description="Key for the HTTP provider")
    timeout: float = Field(default=120.0, gt=0, description="Seconds per request")
    max_retries: int = Field(default=4, ge=0, le=20)
    max_concurrency: int = Field(default=4, ge=1, le=256)
    deadline_seconds: float = Field(
        default=300.0, gt=0, description="A call (retries included) is given up after this"
    )
    breaker_failures: int = Field(
        default=3, ge=1, description="LLM failures in a row that stop runs for the cooldown"
    )
    breaker_cooldown_seconds: float = Field(
        default=60.0, ge=0, description="Calls are refused this long after the failures"
    )
    answer_deadline_seconds: float = Field(
        default=120.0,
        gt=0,
        description="An answer (ask) waits this long for the model, streamed or not; a "
        "stream still running then is cut",
    )
    keywords_deadline_seconds: float = Field(
        default=10.0,
        gt=0,
        description="A search with keywords=llm waits this long for the query's keywords, "
        "then searches with the query as it is",
    )
    cache: bool = Field(default=True, description="Keep replies in the store's LLM cache")
    record: Path | None = Field(default=None, description="Append every call to this file")
    replay: Path | None = Field(
        default=None, description="Answer only from a file written by record (no model calls)"
    )


class ExtractSettings(BaseModel):
    """Text → graph extraction (``kgsearch ingest``)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    extractor: str = Field(default="spacy", description="spacy (offline), llm or none")
    domain: str = Field(default="general", description="Prompt domain of the LLM extractor")
    chunk_chars: int = Field(default=1200, ge=100, le=100_000)
    gleanings: int = Field(default=0, ge=0, le=5, description="Extra 'what was missed' passes")
    max_relationships: int | None = Field(default=None, ge=1, description="Cap per chunk")
    pack_chars: int = Field(
        default=0, ge=0, description="Pack chunks shorter than this into one LLM call"
    )
    min_description_length: int = Field(default=50, ge=0)
    check_names_in_text: bool = Field(
        default=True, description="Look for each entity's name in its chunk (grounding)"
    )
    strict_grounding: bool = Field(
        default=False,
        description="Reject entities the chunk does not spell (default: keep, as a signal)",
    )
    entity_types: list[str] | None = Field(default=None, description="Override the domain's")
    instructions: str | None = Field(default=None, description="Extra prompt instructions")
    examples: list[dict[str, Any]] | None = Field(
        default=None, description="Few-shot examples {text, entities, relationships}"
    )
    language: str | None = Field(default=None, description="Language of descriptions")
    schema_: str | dict[str, Any] | None = Field(
        default=None,
        alias="schema",
        description="Graph schema for --extractor llm: a .toml/.json/.yaml file or an inline table",
    )
    schema_label_similarity: float | None = Field(
        default=None,
        gt=0,
        le=1,
        description="Map off-schema labels by embedding at this cosine (0.85 tried; off)",
    )
    summaries: Literal["extractive", "llm"] = Field(
        default="extractive",
        description="Long merged descriptions: central sentences (offline) or LLM summaries",
    )
    batch_size: int = Field(
        default=64, ge=1, le=1000, description="Chunks claimed, extracted and written together"
    )
    max_attempts: int = Field(default=3, ge=1, le=100)
    backoff_seconds: float = Field(default=2.0, ge=0)
    lease_seconds: float = Field(
        default=600.0,
        gt=0,
        description="A claimed chunk is taken over by another worker after this long",
    )
    max_reply_chars: int = Field(
        default=1_000_000,
        ge=1000,
        description="A longer LLM reply fails its chunk unread (and leaves the cache)",
    )


class BudgetSettings(BaseModel):
    """Limits on LLM spend by the servers' callers (docs/reliability.md): per API key
    and per project, over spending requests (answers, LLM keywords, extraction
    previews, LLM community reports). 0 turns a limit off."""

    model_config = ConfigDict(extra="forbid")

    key_requests_per_minute: int = Field(default=10, ge=0)
    key_tokens_per_minute: int = Field(default=20_000, ge=0)
    key_tokens_per_day: int = Field(default=200_000, ge=0)
    key_cost_per_day_usd: float = Field(
        default=1.0, ge=0, description="Counted where the provider's price is known"
    )
    project_requests_per_minute: int = Field(default=30, ge=0)
    project_tokens_per_minute: int = Field(default=60_000, ge=0)
    project_tokens_per_day: int = Field(default=1_000_000, ge=0)
    project_cost_per_day_usd: float = Field(default=5.0, ge=0)


def config_path() -> Path:
    """The TOML file settings are read from (it need not exist)."""
    return Path(os.environ.get("KGSEARCH_CONFIG", "kgsearch.toml"))


class Settings(BaseSettings):
    """All kgsearch settings; see the module docstring for precedence."""

    model_config = SettingsConfigDict(
        env_prefix="KGSEARCH_", env_nested_delimiter="__", extra="forbid"
    )

    store: StoreSettings = StoreSettings()
    embed: EmbedSettings = EmbedSettings()
    search: SearchSettings = SearchSettings()
    llm: LLMSettings = LLMSettings()
    extract: ExtractSettings = ExtractSettings()
    budget: BudgetSettings = BudgetSettings()

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        """Arguments, then environment, then ``kgsearch.toml``."""
        return (
            init_settings,
            env_settings,
            TomlConfigSettingsSource(settings_cls, toml_file=config_path()),
        )

    def masked(self) -> dict[str, Any]:
        """Effective settings as a dict with secrets masked."""
        data = self.model_dump(mode="json")
        data["extract"]["schema"] = data["extract"].pop("schema_")
        data["store"]["url"] = redact_url(self.store.url)
        if self.store.read_url is not None:
            data["store"]["read_url"] = redact_url(self.store.read_url)
        if self.embed.api_key is not None:
            data["embed"]["api_key"] = "********"
        if self.llm.api_key is not None:
            data["llm"]["api_key"] = "********"
        return data
