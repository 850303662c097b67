"""CachedLLM, RecordingLLM and ReplayLLM: repeated requests answered without the model."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from chat_server import GPT4O_REPLY, GPT35_REPLY, ChatServer, Responder, replies_with

from kgsearch.errors import ConfigError, ProviderError
from kgsearch.llm import (
    LLM,
    CachedLLM,
    Completion,
    DictCache,
    FakeLLM,
    Message,
    OpenAIChat,
    RecordingLLM,
    ReplayLLM,
    ResponseCache,
    Usage,
    request_key,
)
from kgsearch.store import connect

Serve = Callable[[Responder], ChatServer]

PROMPT = [Message("system", "Extract entities."), Message("user", "Marley was dead.")]
SCHEMA = {"type": "object", "properties": {"entities": {"type": "array"}}}


def _chat(server: ChatServer) -> OpenAIChat:
    return OpenAIChat("gpt-4o", base_url=server.url, backoff=0.001)


def test_second_identical_call_makes_no_request_and_is_cached(serve: Serve) -> None:
    server = serve(replies_with(GPT4O_REPLY, prompt_tokens=1873, completion_tokens=231))
    with _chat(server) as chat:
        llm = CachedLLM(chat, DictCache())
        first = llm.complete(PROMPT, json_schema=SCHEMA)
        second = llm.complete(PROMPT, json_schema=SCHEMA)
    assert (first.cached, second, len(server.requests)) == (
        False,
        Completion(
            text=GPT4O_REPLY,
            usage=Usage(1873, 231),
            model="openai:gpt-4o",
            cached=True,
            finish_reason="stop",
        ),
        1,
    )


@pytest.mark.parametrize(
    "change",
    [
        {"temperature": 0.7},
        {"max_tokens": 100},
        {"json_schema": {"type": "object"}},
        {"messages": [Message("user", "Marley was dead.")]},
    ],
    ids=["temperature", "max_tokens", "json_schema", "messages"],
)
def test_any_difference_in_the_request_is_a_miss(change: dict[str, object]) -> None:
    fake = FakeLLM(default="reply")
    llm = CachedLLM(fake, DictCache())
    llm.complete(PROMPT, json_schema=SCHEMA)
    options: dict[str, object] = {"json_schema": SCHEMA, **change}
    messages = options.pop("messages", PROMPT)
    completion = llm.complete(messages, **options)  # type: ignore[arg-type]
    assert (completion.cached, len(fake.calls)) == (False, 2)


def test_another_model_is_a_miss() -> None:
    cache = DictCache()
    CachedLLM(FakeLLM(default="a", model="one"), cache).complete(PROMPT)
    other = FakeLLM(default="b", model="two")
    assert CachedLLM(other, cache).complete(PROMPT).text == "b"


def test_schema_key_order_does_not_matter() -> None:
    reordered = {"properties": {"entities": {"type": "array"}}, "type": "object"}
    assert request_key("m", PROMPT, json_schema=SCHEMA) == request_key(
        "m", PROMPT, json_schema=reordered
    )


def test_replies_are_kept_as_json_text_in_the_namespace() -> None:
    cache = DictCache()
    CachedLLM(FakeLLM(["hello"], model="m"), cache, namespace="extract").complete(PROMPT)
    stored = cache.cache_get("extract", request_key("fake:m", PROMPT))
    assert json.loads(stored or "null") == {
        "reply": "hello",
        "usage": {"prompt_tokens": 9, "completion_tokens": 2},
        "finish_reason": "stop",
        "model": "fake:m",
    }


def test_unreadable_cache_entry_is_a_miss_and_is_replaced() -> None:
    cache = DictCache()
    key = request_key("fake:m", PROMPT)
    cache.cache_put("llm", key, "{not json")
    completion = CachedLLM(FakeLLM(["fresh"], model="m"), cache).complete(PROMPT)
    assert (
        completion.text,
        completion.cached,
        json.loads(cache.cache_get("llm", key) or "")["reply"],
    ) == (
        "fresh",
        False,
        "fresh",
    )


def test_failed_call_is_not_cached() -> None:
    cache = DictCache()
    llm = CachedLLM(FakeLLM([ProviderError("down"), "ok"]), cache)
    with pytest.raises(ProviderError):
        llm.complete(PROMPT)
    assert (len(cache), llm.complete(PROMPT).text) == (0, "ok")


def test_a_forgotten_reply_is_asked_again_also_through_a_recorder(tmp_path: Path) -> None:
    fake = FakeLLM(["unusable", "better"], model="m")
    cached = CachedLLM(fake, DictCache())
    recorded = RecordingLLM(cached, tmp_path / "calls.jsonl")
    assert recorded.complete(PROMPT, json_schema=SCHEMA).text == "unusable"
    assert recorded.complete(PROMPT, json_schema=SCHEMA).cached
    recorded.forget(PROMPT, json_schema=SCHEMA)
    again = recorded.complete(PROMPT, json_schema=SCHEMA)
    assert (again.text, again.cached, len(fake.calls)) == ("better", False, 2)
    assert recorded.complete(PROMPT, json_schema=SCHEMA).cached


def test_sqlite_store_is_a_response_cache() -> None:
    store = connect(":memory:")
    try:
        cache: ResponseCache = store
        fake = FakeLLM(["from the model"])
        llm = CachedLLM(fake, cache)
        texts = [llm.complete(PROMPT).text, llm.complete(PROMPT).text]
    finally:
        store.close()
    assert (isinstance(store, ResponseCache), texts, len(fake.calls)) == (
        True,
        ["from the model", "from the model"],
        1,
    )


def test_wrappers_are_llms_and_pass_through_identity_and_cost() -> None:
    fake = FakeLLM(model="priced", price_per_million=2.0)
    wrapped: list[LLM] = [CachedLLM(fake, DictCache()), RecordingLLM(fake, "unused.jsonl")]
    assert [
        (isinstance(w, LLM), w.model_id, w.estimate_cost(Usage(10**6, 0))) for w in wrapped
    ] == [
        (True, "fake:priced", 2.0),
        (True, "fake:priced", 2.0),
    ]


def test_record_then_replay_answers_without_the_server(serve: Serve, tmp_path: Path) -> None:
    path = tmp_path / "llm.jsonl"
    server = serve(replies_with(GPT35_REPLY, model="gpt-3.5-turbo", finish_reason="length"))
    with _chat(server) as chat:
        recorder = RecordingLLM(chat, path)
        recorded = [
            recorder.complete(PROMPT, json_schema=SCHEMA, max_tokens=64),
            recorder.complete(PROMPT[1:], temperature=0.5),
        ]
    replay = ReplayLLM(path)
    replayed = [
        replay.complete(PROMPT, json_schema=SCHEMA, max_tokens=64),
        replay.complete(PROMPT[1:], temperature=0.5),
    ]
    assert (replay.model_id, replayed, len(server.requests)) == (
        "openai:gpt-4o",
        [
            Completion(
                text=c.text,
                usage=c.usage,
                model="openai:gpt-4o",
                cached=True,
                finish_reason="length",
            )
            for c in recorded
        ],
        2,
    )


def test_recording_lines_hold_request_and_reply(tmp_path: Path) -> None:
    path = tmp_path / "llm.jsonl"
    RecordingLLM(FakeLLM([GPT4O_REPLY], model="m"), path).complete(PROMPT, max_tokens=10)
    lines = [json.loads(line) for line in path.read_text("utf-8").splitlines()]
    assert lines == [
        {
            "key": request_key("fake:m", PROMPT, max_tokens=10),
            "model": "fake:m",
            "messages": [
                {"role": "system", "content": "Extract entities."},
                {"role": "user", "content": "Marley was dead."},
            ],
            "options": {"json_schema": None, "temperature": 0.0, "max_tokens": 10},
            "reply": GPT4O_REPLY,
            "usage": {"prompt_tokens": 9, "completion_tokens": len(GPT4O_REPLY) // 4 + 1},
            "finish_reason": "stop",
        }
    ]


def test_replay_miss_raises_provider_error(tmp_path: Path) -> None:
    path = tmp_path / "llm.jsonl"
    RecordingLLM(FakeLLM(["x"], model="m"), path).complete(PROMPT)
    key = request_key("fake:m", PROMPT, temperature=0.2)
    with pytest.raises(ProviderError) as caught:
        ReplayLLM(path).complete(PROMPT, temperature=0.2)
    assert caught.value.message == (
        f"no recorded reply for this request (key {key}) in {path}; record it again with --record."
    )


def test_replay_as_another_model_misses(tmp_path: Path) -> None:
    path = tmp_path / "llm.jsonl"
    RecordingLLM(FakeLLM(["x"], model="m"), path).complete(PROMPT)
    with pytest.raises(ProviderError):
        ReplayLLM(path, model_id="fake:other").complete(PROMPT)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "Cannot read the LLM recording"),
        ("", "holds no recorded replies; pass model_id=... to replay it."),
        ('{"key": "k", "reply": "r", "model": "m"}\n{"key": 1}\n', "line 2 is not a recorded"),
    ],
    ids=["missing", "empty", "bad-line"],
)
def test_unusable_recording_is_a_config_error(
    tmp_path: Path, content: str | None, message: str
) -> None:
    path = tmp_path / "llm.jsonl"
    if content is not None:
        path.write_text(content, encoding="utf-8")
    with pytest.raises(ConfigError, match=message):
        ReplayLLM(path)
