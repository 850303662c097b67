"""create_embedder / register_embedder: the provider:model registry."""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest

from kgsearch import embed
from kgsearch.embed import (
    BundledEmbedder,
    Embedder,
    OpenAIEmbedder,
    create_embedder,
    embedder_names,
    register_embedder,
)
from kgsearch.errors import ConfigError, MissingCredentials, MissingDependency
from kgsearch.testing import FakeEmbedder


@pytest.fixture
def restore_registry() -> Iterator[None]:
    saved = dict(embed.EMBEDDERS._parts)
    yield
    embed.EMBEDDERS._parts.clear()
    embed.EMBEDDERS._parts.update(saved)


def test_builtin_provider_names() -> None:
    assert embedder_names() == ["bundled", "fake", "fastembed", "openai", "sentence-transformers"]


@pytest.mark.parametrize("spec", ["bundled", "bundled:", "bundled:all-MiniLM-L6-v2-int8"])
def test_bundled_specs_build_the_bundled_embedder(spec: str) -> None:
    embedder = create_embedder(spec)
    assert (type(embedder), embedder.model_id) == (BundledEmbedder, "bundled:all-MiniLM-L6-v2-int8")


def test_bundled_passes_options() -> None:
    assert create_embedder("bundled", batch_size=8)._batch_size == 8  # type: ignore[attr-defined]


@pytest.mark.parametrize("spec", ["bundled:fast", "bundled:all-MiniLM-L6-v2-int8pc"])
def test_bundled_fast_specs_build_the_requantised_model_with_its_own_id(spec: str) -> None:
    embedder = create_embedder(spec)  # nothing is built or loaded until the first text
    assert (type(embedder), embedder.model_id, embedder.dims) == (
        BundledEmbedder,
        "bundled:all-MiniLM-L6-v2-int8pc",
        384,
    )


def test_bundled_with_another_model_is_a_config_error() -> None:
    with pytest.raises(ConfigError) as caught:
        create_embedder("bundled:bge-small")
    assert caught.value.message == (
        "The bundled embedder has 'all-MiniLM-L6-v2-int8' (the default) and "
        "'all-MiniLM-L6-v2-int8pc' ('bundled:fast'), not 'bge-small'."
    )


def test_openai_spec_builds_openai_embedder() -> None:
    embedder = create_embedder("openai:nomic-embed-text", base_url="http://localhost:11434/v1")
    assert (type(embedder), embedder.model_id) == (OpenAIEmbedder, "openai:nomic-embed-text")


def test_openai_defaults_to_the_openai_api_and_needs_a_key() -> None:
    with pytest.raises(MissingCredentials):
        create_embedder("openai:text-embedding-3-small")


def test_openai_without_model_is_a_config_error() -> None:
    with pytest.raises(ConfigError) as caught:
        create_embedder("openai")
    assert caught.value.message == "The openai embedder needs a model: use 'openai:<model>'."


def test_sentence_transformers_spec_reaches_the_adapter(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)
    with pytest.raises(MissingDependency):
        create_embedder("sentence-transformers:all-MiniLM-L6-v2")


def test_fastembed_spec_reaches_the_adapter(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "fastembed", None)
    with pytest.raises(MissingDependency):
        create_embedder("fastembed:BAAI/bge-small-en-v1.5")


def test_fake_spec_builds_fake_with_dims() -> None:
    embedder = create_embedder("fake:16")
    assert (type(embedder), embedder.model_id, embedder.dims) == (FakeEmbedder, "fake:16", 16)


def test_fake_without_dims_defaults_to_64() -> None:
    assert create_embedder("fake").dims == 64


@pytest.mark.parametrize("spec", ["fake:abc", "fake:0", "fake:-3"])
def test_fake_with_bad_dims_is_a_config_error(spec: str) -> None:
    with pytest.raises(ConfigError, match="fake embedder dims must be a positive integer"):
        create_embedder(spec)


def test_unknown_provider_lists_the_known_ones() -> None:
    with pytest.raises(ConfigError) as caught:
        create_embedder("cohere:embed-v3")
    assert caught.value.message == (
        "Unknown embedder provider 'cohere' in 'cohere:embed-v3'; known providers: "
        "bundled, fake, fastembed, openai, sentence-transformers."
    )


@pytest.mark.usefixtures("restore_registry")
def test_registered_factory_receives_model_and_options() -> None:
    received = []

    def factory(model: str, /, **options: object) -> Embedder:
        received.append((model, options))
        return FakeEmbedder(8)

    register_embedder("custom", factory)
    create_embedder("custom:my/model:v2", flag=True)
    assert received == [("my/model:v2", {"flag": True})]


@pytest.mark.parametrize("name", ["", "has:colon"])
def test_register_rejects_bad_names(name: str) -> None:
    with pytest.raises(ValueError, match="invalid embedder provider name"):
        register_embedder(name, lambda model, /, **options: FakeEmbedder())
