"""A model call given up is dropped, not left running (issue 32, item 1).

The real OpenAI-compatible client against a real loopback provider
(tests/fault_provider.py) that holds requests open and notes when the client drops
the connection. Before cancellation, a call past its guard's deadline kept its
connection (and the client's concurrency slot, and the guard's thread) until the
client's own timeout, here 30 s.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest
from fault_provider import FaultyProvider

from kgsearch.cancel import CallCancelled, Cancel, cancellable, cancellable_transport
from kgsearch.embed.guard import EmbedderUnavailable, QueryGuard
from kgsearch.embed.openai import OpenAIEmbedder
from kgsearch.errors import ProviderError
from kgsearch.http import CallGuard, ProviderSkipped
from kgsearch.llm.base import Message
from kgsearch.llm.guard import GuardedLLM, LLMUnavailable, llm_guard
from kgsearch.llm.openai import OpenAIChat

CLIENT_TIMEOUT = 30.0  # what a dropped call would otherwise hold its connection for
DEADLINE = 1.0
QUESTION = [Message("user", "Who wrote the first program?")]


@pytest.fixture
def provider() -> Iterator[FaultyProvider]:
    served = FaultyProvider(slow_seconds=CLIENT_TIMEOUT)
    yield served
    served.stop()


@pytest.fixture
def chat(provider: FaultyProvider) -> Iterator[OpenAIChat]:
    with OpenAIChat(
        "fault", base_url=provider.url, timeout=CLIENT_TIMEOUT, max_retries=0, max_concurrency=1
    ) as model:
        yield model


def wait_until(check: object, seconds: float) -> bool:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if check():  # type: ignore[operator]
            return True
        time.sleep(0.02)
    return False


def test_the_transport_has_the_cancellable_connections() -> None:
    transport = cancellable_transport()
    # a later httpx without this pool would leave calls to the client's timeout
    assert type(transport._pool._network_backend).__name__ == "_Backend"
    transport.close()


@pytest.mark.parametrize("mode", ["slow", "stall"])
def test_a_call_past_its_deadline_is_dropped_at_once(
    provider: FaultyProvider, chat: OpenAIChat, mode: str
) -> None:
    provider.set_chat_mode(mode)
    guarded = GuardedLLM(chat, llm_guard(deadline=DEADLINE, workers=1))
    started = time.monotonic()
    with pytest.raises(LLMUnavailable, match="longer than 1 s"):
        guarded.complete(QUESTION)
    assert wait_until(lambda: provider.dropped, 2.0), "the request was left running"
    assert provider.dropped[0] - started < DEADLINE + 1.0
    # its thread and the client's only slot are free again: the next call is answered
    provider.set_chat_mode("ok")
    assert '"entities"' in guarded.complete(QUESTION).text


@pytest.mark.parametrize("mode", ["stall", "trickle"])
def test_a_stalled_or_endless_stream_is_cut_at_its_deadline(
    provider: FaultyProvider, chat: OpenAIChat, mode: str
) -> None:
    provider.set_chat_mode(mode)
    guarded = GuardedLLM(chat, llm_guard(deadline=DEADLINE, workers=1))
    pieces: list[str] = []
    started = time.monotonic()
    with pytest.raises(LLMUnavailable):
        guarded.complete_streaming(QUESTION, on_text=pieces.append)
    assert pieces[0] == "Ada Lovelace "
    assert wait_until(lambda: provider.dropped, 2.0), "the stream was left open"
    assert provider.dropped[0] - started < DEADLINE + 1.0
    provider.set_chat_mode("ok")
    assert guarded.complete_streaming(QUESTION, on_text=pieces.append).text.startswith("Ada")


def test_a_caller_gone_cancels_its_call_without_counting_a_failure(
    provider: FaultyProvider, chat: OpenAIChat
) -> None:
    provider.set_chat_mode("slow")
    guard = CallGuard("the LLM", deadline=CLIENT_TIMEOUT, failures=1, workers=1)
    request = Cancel()
    threading.Timer(0.5, request.cancel, args=("the client went away",)).start()
    started = time.monotonic()
    with cancellable(request), pytest.raises(ProviderSkipped, match="client went away"):
        guard.call(chat.complete, QUESTION)
    assert time.monotonic() - started < 2.0
    assert wait_until(lambda: provider.dropped, 1.0)
    assert not guard.is_open  # one failure would have opened it


def test_a_cancelled_call_is_not_retried(provider: FaultyProvider) -> None:
    provider.set_chat_mode("slow")
    request = Cancel()
    with OpenAIChat("fault", base_url=provider.url, timeout=CLIENT_TIMEOUT, max_retries=3) as m:
        threading.Timer(0.3, request.cancel, args=("deadline",)).start()
        with cancellable(request), pytest.raises(CallCancelled):
            m.complete(QUESTION)
    assert provider.calls == 1


def test_a_wait_ends_when_the_parent_is_cancelled() -> None:
    parent = Cancel()
    child = Cancel(parent)
    threading.Timer(0.1, parent.cancel, args=("gone",)).start()
    started = time.monotonic()
    assert child.wait(10.0) is True
    assert time.monotonic() - started < 1.0
    assert (child.cancelled, child.reason) == (True, "gone")
    assert Cancel().wait(0.05) is False


def test_a_call_waits_no_longer_than_its_callers_deadline(
    provider: FaultyProvider, chat: OpenAIChat
) -> None:
    # a search that queued for its thread has only the rest of its deadline left
    provider.set_chat_mode("slow")
    guard = CallGuard("the LLM", deadline=CLIENT_TIMEOUT, failures=1, workers=1)
    started = time.monotonic()
    with cancellable(Cancel(deadline=started + 0.5)), pytest.raises(ProviderError) as raised:
        guard.call(chat.complete, QUESTION)
    assert time.monotonic() - started < 1.5
    assert raised.value.details == {"deadline": pytest.approx(0.5, abs=0.05)}
    assert wait_until(lambda: provider.dropped, 1.0)  # dropped, not left running
    assert not guard.is_open  # the caller's haste is not the provider's failure


def test_a_call_past_its_callers_deadline_is_skipped_at_once(provider: FaultyProvider) -> None:
    guard = CallGuard("the LLM", deadline=CLIENT_TIMEOUT)
    with cancellable(Cancel(deadline=time.monotonic() - 0.1)), pytest.raises(ProviderSkipped):
        guard.call(lambda: pytest.fail("the provider was called"))
    assert provider.calls == 0


def test_a_query_embedding_past_its_deadline_is_dropped(provider: FaultyProvider) -> None:
    provider.set_mode("hang")
    embedder = OpenAIEmbedder(
        "fault", base_url=provider.url, dims=8, timeout=CLIENT_TIMEOUT, max_retries=0
    )
    guard = QueryGuard(deadline=0.5, workers=1)
    with pytest.raises(EmbedderUnavailable, match=r"longer than 0\.5 s"):
        guard.embed(embedder.embed_query, "Ada")
    assert wait_until(lambda: provider.dropped, 1.5), "the request was left running"
    provider.set_mode("ok")
    assert len(guard.embed(embedder.embed_query, "Ada")) == 8  # its only thread is free
