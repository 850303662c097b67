"""OpenAIChat against a real HTTP server on 127.0.0.1 replaying recorded model replies."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from chat_server import (
    FENCED_REPLY,
    GPT4O_REPLY,
    GPT35_REPLY,
    ChatServer,
    Hang,
    Responder,
    chat_reply,
    replies_with,
)

from kgsearch.errors import MissingCredentials, ProviderError
from kgsearch.llm import LLM, Completion, Message, OpenAIChat, Usage

Serve = Callable[[Responder], ChatServer]

PROMPT = [
    Message("system", "Extract entities and relationships."),
    Message("user", "Marley was dead: to begin with."),
]
SCHEMA = {
    "title": "Extraction graph",
    "type": "object",
    "properties": {"entities": {"type": "array"}},
}
REJECT_FORMAT = (400, {"error": {"message": "Unrecognized request argument: response_format"}})


def _chat(server: ChatServer, model: str = "gpt-4o", **options: Any) -> OpenAIChat:
    options.setdefault("backoff", 0.001)
    return OpenAIChat(model, base_url=server.url, **options)


def test_is_an_llm() -> None:
    with OpenAIChat("m", base_url="http://localhost:1/v1") as llm:
        assert isinstance(llm, LLM)


def test_reply_text_usage_and_finish_reason_are_parsed(serve: Serve) -> None:
    server = serve(replies_with(GPT4O_REPLY, prompt_tokens=1873, completion_tokens=231))
    with _chat(server) as llm:
        completion = llm.complete(PROMPT)
    assert completion == Completion(
        text=GPT4O_REPLY,
        usage=Usage(prompt_tokens=1873, completion_tokens=231),
        model="openai:gpt-4o",
        cached=False,
        finish_reason="stop",
    )


def test_truncated_reply_reports_finish_reason_length(serve: Serve) -> None:
    server = serve(replies_with(GPT35_REPLY, model="gpt-3.5-turbo", finish_reason="length"))
    with _chat(server, "gpt-3.5-turbo") as llm:
        completion = llm.complete(PROMPT, max_tokens=160)
    assert (completion.text, completion.finish_reason) == (GPT35_REPLY, "length")


def test_posts_model_messages_and_options(serve: Serve) -> None:
    server = serve(replies_with(GPT4O_REPLY))
    with _chat(server) as llm:
        llm.complete(PROMPT, temperature=0.3, max_tokens=500)
    assert [{k: r[k] for k in ("path", "authorization", "body")} for r in server.requests] == [
        {
            "path": "/v1/chat/completions",
            "authorization": None,
            "body": {
                "model": "gpt-4o",
                "messages": [
                    {"role": "system", "content": "Extract entities and relationships."},
                    {"role": "user", "content": "Marley was dead: to begin with."},
                ],
                "temperature": 0.3,
                "max_tokens": 500,
            },
        }
    ]


def test_sends_api_key_as_bearer_token(serve: Serve) -> None:
    server = serve(replies_with(GPT4O_REPLY))
    with _chat(server, api_key="sk-test") as llm:
        llm.complete(PROMPT)
    assert [r["authorization"] for r in server.requests] == ["Bearer sk-test"]


def test_missing_usage_is_estimated_at_four_characters_per_token(serve: Serve) -> None:
    server = serve(replies_with(GPT4O_REPLY, prompt_tokens=None))
    with _chat(server) as llm:
        usage = llm.complete(PROMPT).usage
    prompt_chars = sum(len(m.content) for m in PROMPT)
    assert usage == Usage(prompt_chars // 4 + 1, len(GPT4O_REPLY) // 4 + 1)


@pytest.mark.parametrize(
    "text",
    [FENCED_REPLY, '```json\n{"entities": [{"name": "Scrooge", "type": "person"}]}\n```'],
    ids=["recorded-fence", "json-fence"],
)
def test_fenced_reply_is_returned_verbatim(serve: Serve, text: str) -> None:
    server = serve(replies_with(text))
    with _chat(server) as llm:
        assert llm.complete(PROMPT, json_schema=SCHEMA).text == text


def test_rate_limit_waits_for_retry_after_then_succeeds(serve: Serve) -> None:
    def limited_once(number: int, body: dict[str, Any]) -> tuple[Any, ...]:
        if number == 1:
            return 429, {"error": {"message": "Rate limit reached"}}, {"Retry-After": "0.3"}
        return 200, chat_reply(GPT4O_REPLY)

    server = serve(limited_once)
    with _chat(server) as llm:  # backoff 1 ms: only Retry-After explains a 0.3 s gap
        text = llm.complete(PROMPT).text
    gap = server.requests[1]["at"] - server.requests[0]["at"]
    assert (text, len(server.requests), gap >= 0.3) == (GPT4O_REPLY, 2, True)


def test_server_error_then_success(serve: Serve) -> None:
    def fail_once(number: int, body: dict[str, Any]) -> tuple[Any, ...]:
        return (500, {"error": "overloaded"}) if number == 1 else (200, chat_reply(GPT4O_REPLY))

    server = serve(fail_once)
    with _chat(server) as llm:
        text = llm.complete(PROMPT).text
    assert (text, len(server.requests)) == (GPT4O_REPLY, 2)


def test_repeated_server_errors_raise_provider_error(serve: Serve) -> None:
    server = serve(lambda number, body: (500, {"error": "boom"}))
    with _chat(server, max_retries=2) as llm, pytest.raises(ProviderError) as caught:
        llm.complete(PROMPT)
    assert (caught.value.details, len(server.requests)) == (
        {
            "url": f"{server.url}/chat/completions",
            "status": 500,
            "body": '{"error": "boom"}',
            "attempts": 3,
        },
        3,
    )


def test_client_error_is_not_retried_and_names_status_and_body(serve: Serve) -> None:
    server = serve(lambda number, body: (404, {"error": "model 'gpt-5o' not found"}))
    with _chat(server) as llm, pytest.raises(ProviderError) as caught:
        llm.complete(PROMPT)
    assert (caught.value.message, len(server.requests)) == (
        f"{server.url}/chat/completions answered HTTP 404 after 1 attempt(s): "
        '{"error": "model \'gpt-5o\' not found"}',
        1,
    )


def test_hang_past_the_timeout_raises_provider_error_naming_it(serve: Serve) -> None:
    server = serve(lambda number, body: (200, Hang(5.0)))
    started = time.monotonic()
    with _chat(server, timeout=0.2, max_retries=1) as llm, pytest.raises(ProviderError) as caught:
        llm.complete(PROMPT)
    assert (caught.value.message, len(server.requests), time.monotonic() - started < 1.5) == (
        f"{server.url}/chat/completions timed out after 0.2 s on each of 2 attempt(s); "
        "raise the timeout if the server is just slow.",
        2,
        True,
    )


def test_invalid_json_body_raises_provider_error(serve: Serve) -> None:
    cut = json.dumps(chat_reply(GPT4O_REPLY))[:80]
    server = serve(lambda number, body: (200, cut))
    with _chat(server) as llm, pytest.raises(ProviderError) as caught:
        llm.complete(PROMPT)
    assert caught.value.message == (
        f"{server.url}/chat/completions returned a non-JSON body: {cut}"
    )


def test_body_cut_short_by_the_connection_raises_provider_error(serve: Serve) -> None:
    raw = json.dumps(chat_reply(GPT4O_REPLY))
    promised = {"Content-Length": str(len(raw) + 100)}
    server = serve(lambda number, body: (200, raw, promised))
    with _chat(server, max_retries=1) as llm, pytest.raises(ProviderError) as caught:
        llm.complete(PROMPT)
    assert (caught.value.details, len(server.requests)) == (
        {"url": f"{server.url}/chat/completions", "attempts": 2},
        2,
    )


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        ({"object": "list"}, "did not return a chat completion: KeyError('choices')"),
        (
            {"choices": []},
            "did not return a chat completion: IndexError('list index out of range')",
        ),
    ],
)
def test_body_that_is_not_a_chat_completion_raises(
    serve: Serve, payload: dict[str, Any], message: str
) -> None:
    server = serve(lambda number, body: (200, payload))
    with _chat(server) as llm, pytest.raises(ProviderError) as caught:
        llm.complete(PROMPT)
    assert caught.value.message == f"{server.url}/chat/completions {message}"


def test_refusal_without_content_raises(serve: Serve) -> None:
    reply = chat_reply("")
    reply["choices"][0]["message"] = {"role": "assistant", "content": None, "refusal": "No."}
    server = serve(lambda number, body: (200, reply))
    with _chat(server) as llm, pytest.raises(ProviderError) as caught:
        llm.complete(PROMPT, json_schema=SCHEMA)
    assert caught.value.message == "openai:gpt-4o returned no text: No."


def test_auto_json_mode_sends_the_schema(serve: Serve) -> None:
    server = serve(replies_with(GPT4O_REPLY))
    with _chat(server) as llm:
        llm.complete(PROMPT, json_schema=SCHEMA)
    assert server.bodies[0]["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "Extraction_graph", "schema": SCHEMA},
    }


def test_auto_json_mode_falls_back_once_and_remembers(serve: Serve) -> None:
    def no_response_format(number: int, body: dict[str, Any]) -> tuple[Any, ...]:
        return REJECT_FORMAT if "response_format" in body else (200, chat_reply(GPT4O_REPLY))

    server = serve(no_response_format)
    with _chat(server) as llm:
        texts = [llm.complete(PROMPT, json_schema=SCHEMA).text for _ in range(2)]
    assert (texts, ["response_format" in b for b in server.bodies]) == (
        [GPT4O_REPLY, GPT4O_REPLY],
        [True, False, False],
    )


def test_auto_json_mode_does_not_fall_back_on_other_client_errors(serve: Serve) -> None:
    server = serve(lambda number, body: (400, {"error": {"message": "context length exceeded"}}))
    with _chat(server) as llm, pytest.raises(ProviderError):
        llm.complete(PROMPT, json_schema=SCHEMA)
    assert len(server.requests) == 1


def test_schema_json_mode_does_not_fall_back(serve: Serve) -> None:
    server = serve(lambda number, body: REJECT_FORMAT)
    with _chat(server, json_mode="schema") as llm, pytest.raises(ProviderError) as caught:
        llm.complete(PROMPT, json_schema=SCHEMA)
    assert (caught.value.details["status"], len(server.requests)) == (400, 1)


@pytest.mark.parametrize(
    ("json_mode", "expected"),
    [("object", {"type": "json_object"}), ("off", None)],
)
def test_object_and_off_json_modes(serve: Serve, json_mode: str, expected: Any) -> None:
    server = serve(replies_with(GPT4O_REPLY))
    with _chat(server, json_mode=json_mode) as llm:
        llm.complete(PROMPT, json_schema=SCHEMA)
    assert server.bodies[0].get("response_format") == expected


def test_max_concurrency_caps_requests_in_flight(serve: Serve) -> None:
    def slow(number: int, body: dict[str, Any]) -> tuple[Any, ...]:
        time.sleep(0.1)
        return 200, chat_reply(body["messages"][-1]["content"])

    server = serve(slow)
    results: dict[int, str] = {}
    with _chat(server, max_concurrency=3) as llm:

        def ask(i: int) -> None:
            results[i] = llm.complete([Message("user", f"question {i}")]).text

        threads = [threading.Thread(target=ask, args=(i,)) for i in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert (results, server.peak) == ({i: f"question {i}" for i in range(8)}, 3)


def test_openai_without_api_key_raises_missing_credentials() -> None:
    with pytest.raises(MissingCredentials) as caught:
        OpenAIChat("gpt-4o-mini", base_url="https://api.openai.com/v1")
    assert caught.value.message == (
        "No API key for https://api.openai.com/v1: set KGSEARCH_LLM__API_KEY (or pass api_key=...)."
    )


def test_unauthorized_without_key_raises_missing_credentials(serve: Serve) -> None:
    server = serve(lambda number, body: (401, {"error": "no key"}))
    with _chat(server) as llm, pytest.raises(MissingCredentials):
        llm.complete(PROMPT)


def test_unauthorized_with_key_raises_provider_error(serve: Serve) -> None:
    server = serve(lambda number, body: (401, {"error": "bad key"}))
    with _chat(server, api_key="sk-wrong") as llm, pytest.raises(ProviderError) as caught:
        llm.complete(PROMPT)
    assert type(caught.value) is ProviderError


@pytest.mark.parametrize(
    ("model", "usage", "cost"),
    [
        ("gpt-4o", Usage(1_000_000, 1_000_000), 12.5),
        ("gpt-4o-mini", Usage(2_000, 1_000), 0.0009),
        ("gpt-4.1", Usage(1_000_000, 0), 2.0),
        ("gpt-4.1-mini", Usage(0, 1_000_000), 1.6),
        ("gpt-3.5-turbo", Usage(1_000_000, 1_000_000), 2.0),
        ("gpt-4o-2024-05-13", Usage(1_000, 1_000), None),
    ],
)
def test_cost_at_openai_list_prices(model: str, usage: Usage, cost: float | None) -> None:
    with OpenAIChat(model, base_url="https://api.openai.com/v1", api_key="sk") as llm:
        estimate = llm.estimate_cost(usage)
    assert estimate == (pytest.approx(cost) if cost is not None else None)


def test_other_servers_have_no_price_unless_given() -> None:
    url = "http://localhost:8000/v1"
    with (
        OpenAIChat("gpt-4o", base_url=url) as unpriced,
        OpenAIChat("llama", base_url=url, prices=(1.0, 3.0)) as priced,
    ):
        costs = (unpriced.estimate_cost(Usage(10, 10)), priced.estimate_cost(Usage(10**6, 10**6)))
    assert costs == (None, 4.0)


def test_model_id_names_the_provider() -> None:
    with OpenAIChat("llama3.1", base_url="http://localhost:1/v1", provider="vllm") as llm:
        assert llm.model_id == "vllm:llama3.1"


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"max_concurrency": 0}, "max_concurrency must be at least 1"),
        ({"json_mode": "yaml"}, "unknown json_mode 'yaml'"),
    ],
)
def test_constructor_rejects_bad_options(options: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        OpenAIChat("m", base_url="http://localhost:1/v1", **options)
