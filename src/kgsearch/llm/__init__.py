"""LLM providers and the ``provider:model`` registry that builds them.

``create_llm("openai:gpt-4o-mini", api_key=...)`` splits the spec at the first colon,
looks the provider up in :data:`LLMS` (a :class:`kgsearch.registry.Registry`, the one
every seam uses) and calls the factory with the model part and the options, the same
way :func:`kgsearch.embed.create_embedder` does.
Built-in providers register through :func:`register_llm`, the call a plugin uses:
``openai`` (api.openai.com, or any OpenAI-compatible server through ``base_url``),
``ollama`` (a local Ollama at ``http://localhost:11434/v1``, no key, free) and ``fake``
(the scripted :class:`FakeLLM`). Caching and record/replay wrap any of them
(:mod:`kgsearch.llm.cache`).
"""

from __future__ import annotations

from typing import Any, Protocol

from kgsearch.errors import ConfigError
from kgsearch.http import OPENAI_BASE_URL
from kgsearch.llm.base import LLM, Completion, Message, Usage
from kgsearch.llm.cache import (
    CachedLLM,
    DictCache,
    RecordingLLM,
    ReplayLLM,
    ResponseCache,
    cache_scope,
    request_key,
)
from kgsearch.llm.fake import FakeLLM
from kgsearch.llm.openai import OPENAI_PRICES, OpenAIChat
from kgsearch.registry import Registry

__all__ = [
    "LLM",
    "LLMS",
    "OLLAMA_BASE_URL",
    "OPENAI_PRICES",
    "CachedLLM",
    "Completion",
    "DictCache",
    "FakeLLM",
    "LLMFactory",
    "Message",
    "OpenAIChat",
    "RecordingLLM",
    "ReplayLLM",
    "ResponseCache",
    "Usage",
    "cache_scope",
    "create_llm",
    "llm_names",
    "register_llm",
    "request_key",
]

OLLAMA_BASE_URL = "http://localhost:11434/v1"


class LLMFactory(Protocol):
    """Builds a chat model from the model part of a spec and keyword options."""

    def __call__(self, model: str, /, **options: Any) -> LLM:
        """Return the model for ``model`` (``""`` when the spec has no colon)."""
        ...


LLMS: Registry[LLMFactory] = Registry("llm", error=ConfigError, label="LLM provider", specs=True)
"""Chat-model providers by name."""


def register_llm(name: str, factory: LLMFactory) -> None:
    """Make ``create_llm("<name>:<model>")`` call ``factory(model, **options)``.

    Registering an existing name replaces its factory.

    Args:
        name: The provider part of a spec; must not contain a colon.
        factory: Called with the model part and the options given to create_llm.
    """
    LLMS.register(name, factory)


def llm_names() -> list[str]:
    """The registered provider names, sorted."""
    return sorted(LLMS.names())


def create_llm(spec: str, **options: Any) -> LLM:
    """Build the chat model a ``provider:model`` spec names.

    Args:
        spec: ``openai:<model>``, ``ollama:<model>`` or ``fake[:<name>]``.
        **options: Keyword arguments for the provider's constructor, e.g.
            ``api_key``, ``base_url``, ``timeout`` or ``max_concurrency`` for
            ``openai`` and ``ollama``.

    Returns:
        The model.

    Raises:
        ConfigError: The provider is unknown or the model part is missing.
        MissingCredentials: The provider needs an API key that was not given.
    """
    provider, _, model = spec.partition(":")
    if provider not in LLMS:
        raise ConfigError(
            f"Unknown LLM provider {provider!r} in {spec!r}; "
            f"known providers: {', '.join(llm_names())}.",
            details={"spec": spec, "known": llm_names()},
        )
    return LLMS.get(provider)(model, **options)


def _require_model(provider: str, model: str) -> str:
    if not model:
        raise ConfigError(
            f"The {provider} LLM needs a model: use '{provider}:<model>'.",
            details={"provider": provider},
        )
    return model


def _openai(model: str, /, **options: Any) -> LLM:
    options.setdefault("base_url", OPENAI_BASE_URL)
    return OpenAIChat(_require_model("openai", model), **options)


def _ollama(model: str, /, **options: Any) -> LLM:
    options.setdefault("base_url", OLLAMA_BASE_URL)
    options.setdefault("provider", "ollama")
    # The model runs on the user's own machine: no per-token price.
    options.setdefault("prices", (0.0, 0.0))
    return OpenAIChat(_require_model("ollama", model), **options)


def _fake(model: str, /, **options: Any) -> LLM:
    return FakeLLM(model=model or "scripted", **options)


register_llm("openai", _openai)
register_llm("ollama", _ollama)
register_llm("fake", _fake)
