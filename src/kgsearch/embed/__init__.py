"""Embedding providers and the ``provider:model`` registry that builds them.

``create_embedder("openai:text-embedding-3-small", api_key=...)`` splits the spec at the
first colon, looks the provider up in :data:`EMBEDDERS` (a :class:`kgsearch.registry.Registry`,
the one every seam uses) and calls the factory with the model part and the options.
Built-in providers register through :func:`register_embedder`, the same call a plugin
uses; their names are declared in :data:`kgsearch.registry.BUILTINS`.
"""

from __future__ import annotations

from typing import Any, Protocol

from kgsearch.embed.base import Embedder, Vector, batched, unit_vectors
from kgsearch.embed.bundled import FAST_MODEL, MODEL, BundledEmbedder
from kgsearch.embed.fake import FakeEmbedder
from kgsearch.embed.fastembed import FastEmbedEmbedder
from kgsearch.embed.openai import OpenAIEmbedder
from kgsearch.embed.sentence_transformers import SentenceTransformersEmbedder
from kgsearch.errors import ConfigError
from kgsearch.http import OPENAI_BASE_URL
from kgsearch.registry import Registry

__all__ = [
    "EMBEDDERS",
    "BundledEmbedder",
    "Embedder",
    "EmbedderFactory",
    "FastEmbedEmbedder",
    "OpenAIEmbedder",
    "SentenceTransformersEmbedder",
    "Vector",
    "batched",
    "create_embedder",
    "embedder_names",
    "register_embedder",
    "unit_vectors",
]


_BUNDLED_MODELS = {"": MODEL, MODEL: MODEL, "fast": FAST_MODEL, FAST_MODEL: FAST_MODEL}
"""``bundled``'s model names; ``fast`` is short for the per-channel re-quantised model."""


class EmbedderFactory(Protocol):
    """Builds an embedder from the model part of a spec and keyword options."""

    def __call__(self, model: str, /, **options: Any) -> Embedder:
        """Return the embedder for ``model`` (``""`` when the spec has no colon)."""
        ...


EMBEDDERS: Registry[EmbedderFactory] = Registry(
    "embedder", error=ConfigError, label="embedder provider", specs=True
)
"""Embedder providers by name."""


def register_embedder(name: str, factory: EmbedderFactory) -> None:
    """Make ``create_embedder("<name>:<model>")`` call ``factory(model, **options)``.

    Registering an existing name replaces its factory.

    Args:
        name: The provider part of a spec; must not contain a colon.
        factory: Called with the model part and the options given to create_embedder.
    """
    EMBEDDERS.register(name, factory)


def embedder_names() -> list[str]:
    """The registered provider names, sorted."""
    return sorted(EMBEDDERS.names())


def create_embedder(spec: str, **options: Any) -> Embedder:
    """Build the embedder a ``provider:model`` spec names.

    Args:
        spec: ``bundled`` (the offline default), ``bundled:fast`` (the same model
            re-quantised, about twice as fast), ``openai:<model>``,
            ``sentence-transformers:<name or path>``, ``fastembed:<name>`` or
            ``fake:<dims>``.
        **options: Keyword arguments for the provider's constructor, e.g.
            ``base_url`` and ``api_key`` for ``openai``.

    Returns:
        The embedder.

    Raises:
        ConfigError: The provider is unknown or the model part is invalid.
        MissingDependency: The provider's optional extra is not installed.
        MissingCredentials: The provider needs an API key that was not given.
    """
    provider, _, model = spec.partition(":")
    if provider not in EMBEDDERS:
        raise ConfigError(
            f"Unknown embedder provider {provider!r} in {spec!r}; "
            f"known providers: {', '.join(embedder_names())}.",
            details={"spec": spec, "known": embedder_names()},
        )
    return EMBEDDERS.get(provider)(model, **options)


def _require_model(provider: str, model: str) -> str:
    if not model:
        raise ConfigError(
            f"The {provider} embedder needs a model: use '{provider}:<model>'.",
            details={"provider": provider},
        )
    return model


def _bundled(model: str, /, **options: Any) -> Embedder:
    if model not in _BUNDLED_MODELS:
        raise ConfigError(
            f"The bundled embedder has {MODEL!r} (the default) and {FAST_MODEL!r} "
            f"('bundled:fast'), not {model!r}.",
            details={"provider": "bundled", "model": model},
        )
    return BundledEmbedder(model=_BUNDLED_MODELS[model], **options)


def _openai(model: str, /, **options: Any) -> Embedder:
    options.setdefault("base_url", OPENAI_BASE_URL)
    return OpenAIEmbedder(_require_model("openai", model), **options)


def _sentence_transformers(model: str, /, **options: Any) -> Embedder:
    return SentenceTransformersEmbedder(_require_model("sentence-transformers", model), **options)


def _fastembed(model: str, /, **options: Any) -> Embedder:
    return FastEmbedEmbedder(_require_model("fastembed", model), **options)


def _fake(model: str, /, **options: Any) -> Embedder:
    if model and not (model.isdigit() and int(model) > 0):
        raise ConfigError(
            f"fake embedder dims must be a positive integer, not {model!r}.",
            details={"provider": "fake", "model": model},
        )
    return FakeEmbedder(int(model or 64), **options)


register_embedder("bundled", _bundled)
register_embedder("openai", _openai)
register_embedder("sentence-transformers", _sentence_transformers)
register_embedder("fastembed", _fastembed)
register_embedder("fake", _fake)
