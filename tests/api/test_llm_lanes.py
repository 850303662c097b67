"""A slow chat model never slows search (issue 32, item 1): requests that wait for the
model run on a lane of their own, so plain searches keep their threads.

A real uvicorn server; the chat model is the real OpenAI-compatible client pointed at a
real loopback chat server that takes :data:`SLOW` seconds per answer. Four answers are
held in flight (three plain, one streamed) on a server with two search threads; plain
searches made meanwhile must come back long before the model does. Before the lanes,
the answers took both search threads and every search waited for the model.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from chat_server import ChatServer, chat_reply, sse_reply, start_chat_server
from fault_provider import FaultyProvider

from kgsearch import Engine, ObjectIn, RelationshipIn, connect
from kgsearch.api.app import create_app
from kgsearch.config import LLMSettings
from kgsearch.testing import FakeEmbedder

SLOW = 8.0  # seconds the model takes per answer
ANSWER = "Ada works for Acme [R1]."

Serve = Callable[..., str]


@pytest.fixture
def slow_chat() -> Iterator[ChatServer]:
    stopping = threading.Event()

    def answer_slowly(number: int, body: dict[str, Any]) -> tuple[Any, ...]:
        stopping.wait(SLOW)
        if body.get("stream"):
            return sse_reply(["Ada works ", "for Acme [R1]."])
        return (200, chat_reply(ANSWER))

    server, httpd = start_chat_server(answer_slowly, stopping)
    yield server
    stopping.set()
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture
def engine(tmp_path: Path, slow_chat: ChatServer) -> Iterator[Engine]:
    llm = LLMSettings(model="openai:slow-model", base_url=slow_chat.url, cache=False, max_retries=0)
    with Engine(
        connect(str(tmp_path / "lanes.db")), embedder=FakeEmbedder(32), llm_settings=llm
    ) as engine:
        ada, acme = engine.add_objects(
            [
                ObjectIn(type="Person", key="ada", properties={"name": "Ada Lovelace"}),
                ObjectIn(type="Org", key="acme", properties={"name": "Acme"}),
            ]
        )
        engine.add_relationships([RelationshipIn(type="WORKS_FOR", source=ada.id, target=acme.id)])
        engine.embed_pending()
        yield engine


def test_plain_searches_do_not_wait_for_answers_in_flight(
    serve: Serve, engine: Engine, slow_chat: ChatServer
) -> None:
    base = serve(create_app(engine, keys=False, threads=2, llm_threads=4))
    answers: list[httpx.Response] = []

    def ask(stream: bool) -> None:
        body = {"query": "who does Ada work for", "stream": stream}
        answers.append(httpx.post(f"{base}/api/ask", json=body, timeout=SLOW * 4))

    askers = [threading.Thread(target=ask, args=(i == 3,)) for i in range(4)]
    for thread in askers:
        thread.start()
    deadline = time.monotonic() + SLOW
    while len(slow_chat.requests) < 4 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(slow_chat.requests) == 4  # every answer is now waiting for the model

    started = time.monotonic()
    for query in ("Ada Lovelace", "Acme", "who works for Acme", "Ada", "Acme Lovelace"):
        found = httpx.post(f"{base}/api/search/unified", json={"query": query}, timeout=SLOW)
        assert found.status_code == 200, found.text
        assert found.json()["results"]
    searching = time.monotonic() - started
    still_waiting = sum(thread.is_alive() for thread in askers)

    for thread in askers:
        thread.join(SLOW * 4)
    assert searching < SLOW / 2, f"five searches took {searching:.1f} s behind the model"
    assert still_waiting == 4  # the searches did not wait for the answers to end
    assert sorted(r.status_code for r in answers) == [200] * 4
    plain = [r.json()["answer"] for r in answers if "event-stream" not in r.headers["content-type"]]
    assert plain == [ANSWER] * 3
    streamed = next(r.text for r in answers if "event-stream" in r.headers["content-type"])
    assert "event: answer" in streamed and "Ada works " in streamed


def test_the_llm_lane_bounds_the_answers_waiting_at_once(
    serve: Serve, engine: Engine, slow_chat: ChatServer
) -> None:
    base = serve(create_app(engine, keys=False, threads=2, llm_threads=1))
    done: list[float] = []

    def ask(stream: bool) -> None:
        body = {"query": "who does Ada work for", "stream": stream}
        response = httpx.post(f"{base}/api/ask", json=body, timeout=SLOW * 4)
        assert response.status_code == 200, response.text
        done.append(time.monotonic())

    started = time.monotonic()
    askers = [threading.Thread(target=ask, args=(stream,)) for stream in (False, True)]
    for thread in askers:
        thread.start()
    time.sleep(SLOW / 2)
    assert len(slow_chat.requests) == 1  # one lane token: the second answer waits
    for thread in askers:
        thread.join(SLOW * 4)
    assert len(done) == 2 and max(done) - started >= 2 * SLOW * 0.9


# A model call nobody waits for any more is dropped (its connection closed, its lane
# token freed), not left to run to its end: the faulty provider notes when the server's
# client drops a request it holds open.


@pytest.fixture
def faulty() -> Iterator[FaultyProvider]:
    served = FaultyProvider(slow_seconds=60.0)
    yield served
    served.stop()


def faulty_engine(path: Path, provider: FaultyProvider, **llm: Any) -> Engine:
    settings = LLMSettings(
        model="openai:fault", base_url=provider.url, cache=False, max_retries=0, **llm
    )
    engine = Engine(connect(str(path)), embedder=FakeEmbedder(32), llm_settings=settings)
    engine.add_objects([ObjectIn(type="Person", key="ada", properties={"name": "Ada Lovelace"})])
    engine.embed_pending()
    return engine


def dropped_within(provider: FaultyProvider, seconds: float) -> bool:
    end = time.monotonic() + seconds
    while not provider.dropped and time.monotonic() < end:
        time.sleep(0.05)
    return bool(provider.dropped)


def test_an_answer_whose_client_went_away_is_dropped(
    serve: Serve, faulty: FaultyProvider, tmp_path: Path
) -> None:
    with faulty_engine(tmp_path / "g.db", faulty) as engine:
        base = serve(create_app(engine, keys=False, threads=2, llm_threads=1))
        faulty.set_chat_mode("slow")  # 60 s per answer
        body = {"query": "who is Ada"}
        with pytest.raises(httpx.ReadTimeout):
            httpx.post(f"{base}/api/ask", json=body, timeout=1.5)
        gone = time.monotonic()
        assert dropped_within(faulty, 3.0), "the model call ran on for nobody"
        assert faulty.dropped[0] - gone < 2.0
        # the only LLM-lane token is free again: the next answer does not queue
        faulty.set_chat_mode("ok")
        answered = httpx.post(f"{base}/api/ask", json=body, timeout=10)
        assert answered.status_code == 200, answered.text


def test_a_stream_its_client_stopped_reading_is_dropped(
    serve: Serve, faulty: FaultyProvider, tmp_path: Path
) -> None:
    with faulty_engine(tmp_path / "g.db", faulty) as engine:
        base = serve(create_app(engine, keys=False, threads=2, llm_threads=1))
        faulty.set_chat_mode("trickle")  # a piece every 0.2 s, never ending
        body = {"query": "who is Ada", "stream": True}
        with httpx.stream("POST", f"{base}/api/ask", json=body, timeout=10) as response:
            lines = response.iter_lines()
            assert next(line for line in lines if line.startswith("data:"))
        gone = time.monotonic()
        assert dropped_within(faulty, 3.0), "the stream ran on for nobody"
        assert faulty.dropped[0] - gone < 2.0


def test_a_stalled_answer_stream_is_cut_at_the_answer_deadline(
    serve: Serve, faulty: FaultyProvider, tmp_path: Path
) -> None:
    with faulty_engine(tmp_path / "g.db", faulty, answer_deadline_seconds=1.5) as engine:
        base = serve(create_app(engine, keys=False, threads=2, llm_threads=1))
        faulty.set_chat_mode("stall")  # the first piece, then silence
        started = time.monotonic()
        body = {"query": "who is Ada", "stream": True}
        streamed = httpx.post(f"{base}/api/ask", json=body, timeout=30)
        took = time.monotonic() - started
        assert streamed.status_code == 200
        assert "Ada Lovelace " in streamed.text  # the piece that came
        assert "event: error" in streamed.text and "longer than 1.5 s" in streamed.text
        assert took < 1.5 + 3.0
        assert dropped_within(faulty, 2.0), "the stalled stream was left open"
