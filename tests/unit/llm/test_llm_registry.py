"""create_llm / register_llm: the provider:model registry for chat models."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from chat_server import GPT4O_REPLY, ChatServer, Responder, replies_with

from kgsearch import llm as llm_package
from kgsearch.errors import ConfigError, MissingCredentials
from kgsearch.llm import (
    LLM,
    FakeLLM,
    Message,
    OpenAIChat,
    Usage,
    create_llm,
    llm_names,
    register_llm,
)


@pytest.fixture
def restore_registry() -> Iterator[None]:
    saved = dict(llm_package.LLMS._parts)
    yield
    llm_package.LLMS._parts.clear()
    llm_package.LLMS._parts.update(saved)


def test_builtin_provider_names() -> None:
    assert llm_names() == ["fake", "ollama", "openai"]


def test_openai_spec_builds_a_chat_client_for_the_openai_api() -> None:
    with create_llm("openai:gpt-4o-mini", api_key="sk-test") as llm:  # type: ignore[attr-defined]
        assert (type(llm), llm.model_id, llm._url, llm.estimate_cost(Usage(10**6, 0))) == (
            OpenAIChat,
            "openai:gpt-4o-mini",
            "https://api.openai.com/v1/chat/completions",
            0.15,
        )


def test_openai_api_needs_a_key() -> None:
    with pytest.raises(MissingCredentials):
        create_llm("openai:gpt-4o-mini")


def test_ollama_defaults_to_the_local_server_without_key_or_price() -> None:
    with create_llm("ollama:llama3.1") as llm:  # type: ignore[attr-defined]
        assert (llm.model_id, llm._url, llm._has_key, llm.estimate_cost(Usage(10**6, 10**6))) == (
            "ollama:llama3.1",
            "http://localhost:11434/v1/chat/completions",
            False,
            0.0,
        )


def test_ollama_options_reach_the_client(serve: Callable[[Responder], ChatServer]) -> None:
    server = serve(replies_with(GPT4O_REPLY))
    llm = create_llm("ollama:llama3.1", base_url=server.url, timeout=5.0)
    assert llm.complete([Message("user", "hi")]).text == GPT4O_REPLY
    assert (server.bodies[0]["model"], server.requests[0]["authorization"]) == ("llama3.1", None)


@pytest.mark.parametrize(("spec", "model_id"), [("fake", "fake:scripted"), ("fake:x", "fake:x")])
def test_fake_spec_builds_the_scripted_fake(spec: str, model_id: str) -> None:
    llm = create_llm(spec, replies=["scripted reply"])
    assert (type(llm), llm.model_id, llm.complete([Message("user", "q")]).text) == (
        FakeLLM,
        model_id,
        "scripted reply",
    )


@pytest.mark.parametrize("provider", ["openai", "ollama"])
def test_http_provider_without_model_is_a_config_error(provider: str) -> None:
    with pytest.raises(ConfigError) as caught:
        create_llm(provider, api_key="sk")
    assert caught.value.message == f"The {provider} LLM needs a model: use '{provider}:<model>'."


def test_unknown_provider_lists_the_known_ones() -> None:
    with pytest.raises(ConfigError) as caught:
        create_llm("anthropic:claude")
    assert caught.value.message == (
        "Unknown LLM provider 'anthropic' in 'anthropic:claude'; "
        "known providers: fake, ollama, openai."
    )


@pytest.mark.usefixtures("restore_registry")
def test_registered_factory_receives_model_and_options() -> None:
    received = []

    def factory(model: str, /, **options: object) -> LLM:
        received.append((model, options))
        return FakeLLM()

    register_llm("custom", factory)
    create_llm("custom:org/model:v2", flag=True)
    assert (received, "custom" in llm_names()) == ([("org/model:v2", {"flag": True})], True)


@pytest.mark.parametrize("name", ["", "has:colon"])
def test_register_rejects_bad_names(name: str) -> None:
    with pytest.raises(ValueError, match="invalid LLM provider name"):
        register_llm(name, lambda model, /, **options: FakeLLM())
