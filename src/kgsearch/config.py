"""Settings, read only at the edges (CLI, server factories, ``Engine.from_settings``).

Precedence: explicit argument or CLI flag > ``KGSEARCH_*`` environment variables
(nested with ``__``, e.g. ``KGSEARCH_STORE__URL``) > ``kgsearch.toml`` in the
working directory (or the file named by ``KGSEARCH_CONFIG``) > defaults.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, SecretStr
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

__all__ = ["EmbedSettings", "SearchSettings", "Settings", "StoreSettings", "config_path"]


class StoreSettings(BaseModel):
    """Where the graph lives."""

    model_config = ConfigDict(extra="forbid")

    url: str = Field(
        default="kgsearch.db",
        description="sqlite:///path.db, a path, :memory:, or postgresql://…",
    )
    project: str = Field(default="default", description="Project used when none is given")


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


class SearchSettings(BaseModel):
    """Search defaults."""

    model_config = ConfigDict(extra="forbid")

    rrf_k: int = Field(default=60, ge=1)
    limit: int = Field(default=10, ge=1, le=100)


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
        if self.embed.api_key is not None:
            data["embed"]["api_key"] = "********"
        return data
