"""OpenAIEmbedder against a real HTTP server on 127.0.0.1 that speaks /v1/embeddings."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np
import pytest

from kgsearch.embed.openai import OpenAIEmbedder, UnexpectedDimensions
from kgsearch.errors import MissingCredentials, ProviderError
from kgsearch.testing import FakeEmbedder

# (request number from 1, request body) -> (status, JSON body or raw text[, headers])
Responder = Callable[[int, dict[str, Any]], tuple[Any, ...]]

DIMS = 8
_fake = FakeEmbedder(DIMS)


def _raw_vector(text: str) -> list[float]:
    """The server's deterministic vector for ``text``: the fake's, scaled to length 3."""
    return [float(x) * 3.0 for x in _fake.embed_query(text)]


def embeddings_ok(number: int, body: dict[str, Any]) -> tuple[int, Any]:
    data = [
        {"object": "embedding", "index": i, "embedding": _raw_vector(text)}
        for i, text in enumerate(body["input"])
    ]
    return 200, {"object": "list", "data": data, "model": body["model"]}


@dataclass
class Server:
    """A running local server plus every request it has received."""

    url: str
    requests: list[dict[str, Any]] = field(default_factory=list)

    @property
    def inputs(self) -> list[list[str]]:
        return [request["body"]["input"] for request in self.requests]


@pytest.fixture
def serve() -> Iterator[Callable[[Responder], Server]]:
    """Start servers that answer POST /v1/embeddings with a responder; stop them after."""
    running: list[ThreadingHTTPServer] = []

    def start(responder: Responder) -> Server:
        server = Server(url="")
        lock = threading.Lock()

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with lock:
                    server.requests.append(
                        {
                            "path": self.path,
                            "authorization": self.headers.get("Authorization"),
                            "body": body,
                        }
                    )
                    number = len(server.requests)
                status, payload, *extra = (
                    responder(number, body) if self.path == "/v1/embeddings" else (404, "nope")
                )
                raw = payload if isinstance(payload, str) else json.dumps(payload)
                encoded = raw.encode()
                self.send_response(status)
                for name, value in (extra[0] if extra else {}).items():
                    self.send_header(name, value)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(encoded)))
                self.end_headers()
                self.wfile.write(encoded)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=httpd.serve_forever, args=(0.01,), daemon=True).start()
        running.append(httpd)
        server.url = f"http://127.0.0.1:{httpd.server_address[1]}/v1"
        return server

    yield start
    for httpd in running:
        httpd.shutdown()
        httpd.server_close()


def _embedder(server: Server, **options: Any) -> OpenAIEmbedder:
    options.setdefault("backoff", 0.001)
    return OpenAIEmbedder("test-embed", base_url=server.url, **options)


def _unit(text: str) -> np.ndarray:
    return _fake.embed_query(text)


def test_embeds_documents_in_order(serve: Callable[[Responder], Server]) -> None:
    server = serve(embeddings_ok)
    texts = ["Ada works for Acme", "eggs and flour", "graph search"]
    with _embedder(server) as embedder:
        vectors = embedder.embed_documents(texts)
    assert np.allclose(np.stack(vectors), np.stack([_unit(t) for t in texts]), atol=1e-6)


def test_vectors_are_normalised_to_unit_length(serve: Callable[[Responder], Server]) -> None:
    server = serve(embeddings_ok)
    with _embedder(server) as embedder:
        vector = embedder.embed_documents(["Ada works for Acme"])[0]
    assert (vector.dtype, round(float(np.linalg.norm(vector)), 5)) == (np.dtype("float32"), 1.0)


def test_posts_model_and_inputs_to_embeddings_path(serve: Callable[[Responder], Server]) -> None:
    server = serve(embeddings_ok)
    with _embedder(server) as embedder:
        embedder.embed_documents(["hello"])
    assert server.requests == [
        {
            "path": "/v1/embeddings",
            "authorization": None,
            "body": {"model": "test-embed", "input": ["hello"]},
        }
    ]


def test_sends_api_key_as_bearer_token(serve: Callable[[Responder], Server]) -> None:
    server = serve(embeddings_ok)
    with _embedder(server, api_key="sk-test") as embedder:
        embedder.embed_documents(["hello"])
    assert [r["authorization"] for r in server.requests] == ["Bearer sk-test"]


def test_documents_are_sent_in_batches(serve: Callable[[Responder], Server]) -> None:
    server = serve(embeddings_ok)
    with _embedder(server, batch_size=2) as embedder:
        embedder.embed_documents(["a", "b", "c", "d", "e"])
    assert server.inputs == [["a", "b"], ["c", "d"], ["e"]]


def test_empty_text_is_sent_as_a_space(serve: Callable[[Responder], Server]) -> None:
    server = serve(embeddings_ok)
    with _embedder(server) as embedder:
        embedder.embed_documents(["", "x"])
    assert server.inputs == [[" ", "x"]]


def test_empty_list_sends_no_request(serve: Callable[[Responder], Server]) -> None:
    server = serve(embeddings_ok)
    with _embedder(server) as embedder:
        assert embedder.embed_documents([]) == []
    assert server.requests == []


def test_response_items_are_put_back_in_input_order(
    serve: Callable[[Responder], Server],
) -> None:
    def reversed_ok(number: int, body: dict[str, Any]) -> tuple[int, Any]:
        status, payload = embeddings_ok(number, body)
        payload["data"].reverse()
        return status, payload

    server = serve(reversed_ok)
    with _embedder(server) as embedder:
        vectors = embedder.embed_documents(["first text", "second text"])
    assert np.allclose(np.stack(vectors), np.stack([_unit("first text"), _unit("second text")]))


def test_dims_are_discovered_with_a_probe(serve: Callable[[Responder], Server]) -> None:
    server = serve(embeddings_ok)
    with _embedder(server) as embedder:
        assert (embedder.dims, server.inputs) == (8, [["dimension probe"]])


def test_dims_are_discovered_from_the_first_embedding(
    serve: Callable[[Responder], Server],
) -> None:
    server = serve(embeddings_ok)
    with _embedder(server) as embedder:
        embedder.embed_documents(["hello"])
        assert (embedder.dims, len(server.requests)) == (8, 1)


def test_declared_dims_need_no_request(serve: Callable[[Responder], Server]) -> None:
    server = serve(embeddings_ok)
    with _embedder(server, dims=8) as embedder:
        assert (embedder.dims, server.requests) == (8, [])


def test_wrong_dims_are_a_provider_failure(serve: Callable[[Responder], Server]) -> None:
    server = serve(embeddings_ok)
    with _embedder(server, dims=16) as embedder, pytest.raises(UnexpectedDimensions) as caught:
        embedder.embed_documents(["hello"])
    assert caught.value.details == {"model_id": "openai:test-embed", "expected": 16, "got": 8}


def test_retries_two_server_errors_then_succeeds(serve: Callable[[Responder], Server]) -> None:
    def fail_twice(number: int, body: dict[str, Any]) -> tuple[int, Any]:
        return (500, {"error": "overloaded"}) if number <= 2 else embeddings_ok(number, body)

    server = serve(fail_twice)
    with _embedder(server) as embedder:
        vector = embedder.embed_documents(["hello"])[0]
    assert (np.allclose(vector, _unit("hello")), len(server.requests)) == (True, 3)


def test_retries_rate_limit_after_retry_after_seconds(
    serve: Callable[[Responder], Server],
) -> None:
    def limited_once(number: int, body: dict[str, Any]) -> tuple[Any, ...]:
        if number == 1:
            return 429, {"error": "slow down"}, {"Retry-After": "0.2"}
        return embeddings_ok(number, body)

    server = serve(limited_once)
    started = time.monotonic()
    with _embedder(server) as embedder:
        embedder.embed_documents(["hello"])
    assert (len(server.requests), time.monotonic() - started >= 0.2) == (2, True)


def test_http_date_retry_after_falls_back_to_backoff(
    serve: Callable[[Responder], Server],
) -> None:
    def limited_once(number: int, body: dict[str, Any]) -> tuple[Any, ...]:
        if number == 1:
            return 429, {}, {"Retry-After": "Wed, 21 Oct 2065 07:28:00 GMT"}
        return embeddings_ok(number, body)

    server = serve(limited_once)
    started = time.monotonic()
    with _embedder(server) as embedder:
        embedder.embed_documents(["hello"])
    assert (len(server.requests), time.monotonic() - started < 1) == (2, True)


def test_persistent_server_error_raises_after_retries(
    serve: Callable[[Responder], Server],
) -> None:
    server = serve(lambda number, body: (500, {"error": "boom"}))
    started = time.monotonic()
    with _embedder(server, max_retries=3) as embedder, pytest.raises(ProviderError) as caught:
        embedder.embed_documents(["hello"])
    assert (caught.value.details, len(server.requests), time.monotonic() - started < 2) == (
        {
            "url": f"{server.url}/embeddings",
            "status": 500,
            "body": '{"error": "boom"}',
            "attempts": 4,
        },
        4,
        True,
    )


def test_provider_error_message_has_status_and_body(serve: Callable[[Responder], Server]) -> None:
    server = serve(lambda number, body: (503, "upstream down"))
    with _embedder(server, max_retries=0) as embedder, pytest.raises(ProviderError) as caught:
        embedder.embed_documents(["hello"])
    assert caught.value.message == (
        f"{server.url}/embeddings answered HTTP 503 after 1 attempt(s): upstream down"
    )


def test_client_error_is_not_retried(serve: Callable[[Responder], Server]) -> None:
    server = serve(lambda number, body: (400, {"error": "bad model"}))
    with _embedder(server) as embedder, pytest.raises(ProviderError):
        embedder.embed_documents(["hello"])
    assert len(server.requests) == 1


def test_unauthorized_without_key_raises_missing_credentials(
    serve: Callable[[Responder], Server],
) -> None:
    server = serve(lambda number, body: (401, {"error": "no key"}))
    with _embedder(server) as embedder, pytest.raises(MissingCredentials) as caught:
        embedder.embed_documents(["hello"])
    assert caught.value.message == (
        f"{server.url}/embeddings answered 401 Unauthorized and no API key is configured: "
        "set KGSEARCH_EMBED__API_KEY."
    )


def test_unauthorized_with_key_raises_provider_error(serve: Callable[[Responder], Server]) -> None:
    server = serve(lambda number, body: (401, {"error": "bad key"}))
    with _embedder(server, api_key="sk-wrong") as embedder, pytest.raises(ProviderError) as caught:
        embedder.embed_documents(["hello"])
    assert type(caught.value) is ProviderError


def test_non_json_body_raises_provider_error(serve: Callable[[Responder], Server]) -> None:
    server = serve(lambda number, body: (200, "<html>proxy login</html>"))
    with _embedder(server) as embedder, pytest.raises(ProviderError) as caught:
        embedder.embed_documents(["hello"])
    assert caught.value.message == (
        f"{server.url}/embeddings returned a non-JSON body: <html>proxy login</html>"
    )


def test_response_without_data_raises_provider_error(
    serve: Callable[[Responder], Server],
) -> None:
    server = serve(lambda number, body: (200, {"object": "list"}))
    with _embedder(server) as embedder, pytest.raises(ProviderError) as caught:
        embedder.embed_documents(["hello"])
    assert caught.value.message == (
        f"{server.url}/embeddings did not return an embeddings response: KeyError('data')"
    )


def test_wrong_number_of_vectors_raises_provider_error(
    serve: Callable[[Responder], Server],
) -> None:
    def one_vector(number: int, body: dict[str, Any]) -> tuple[int, Any]:
        return 200, {"data": [{"index": 0, "embedding": _raw_vector("x")}]}

    server = serve(one_vector)
    with _embedder(server) as embedder, pytest.raises(ProviderError) as caught:
        embedder.embed_documents(["a", "b"])
    assert caught.value.details == {"url": f"{server.url}/embeddings", "shape": [1, 8]}


def test_zero_vector_raises_provider_error(serve: Callable[[Responder], Server]) -> None:
    server = serve(lambda number, body: (200, {"data": [{"index": 0, "embedding": [0.0] * 8}]}))
    with _embedder(server) as embedder, pytest.raises(ProviderError) as caught:
        embedder.embed_documents(["hello"])
    assert caught.value.message == "openai:test-embed returned a zero or non-finite vector."


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def test_unreachable_server_raises_provider_error_after_retries() -> None:
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    with (
        OpenAIEmbedder("m", base_url=url, max_retries=2, backoff=0.001) as embedder,
        pytest.raises(ProviderError) as caught,
    ):
        embedder.embed_documents(["hello"])
    assert caught.value.details == {"url": f"{url}/embeddings", "attempts": 3}


def test_openai_without_api_key_raises_missing_credentials() -> None:
    with pytest.raises(MissingCredentials) as caught:
        OpenAIEmbedder("text-embedding-3-small", base_url="https://api.openai.com/v1")
    assert caught.value.message == (
        "No API key for https://api.openai.com/v1: set KGSEARCH_EMBED__API_KEY "
        "(or pass api_key=...)."
    )


def test_identity_and_token_estimate() -> None:
    with OpenAIEmbedder("nomic-embed-text", base_url="http://localhost:1/v1") as embedder:
        assert (embedder.model_id, embedder.max_tokens, embedder.count_tokens("x" * 10)) == (
            "openai:nomic-embed-text",
            512,
            3,
        )


@pytest.mark.parametrize(
    ("options", "message"),
    [({"batch_size": 0}, "batch_size must be positive"), ({"dims": 0}, "dims must be positive")],
)
def test_constructor_rejects_non_positive_sizes(options: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        OpenAIEmbedder("m", base_url="http://localhost:1/v1", **options)


def test_a_query_embedding_is_tried_once(serve: Callable[[Responder], Server]) -> None:
    server = serve(lambda number, body: (500, {"error": "boom"}))
    with _embedder(server, max_retries=3) as embedder, pytest.raises(ProviderError):
        embedder.embed_query("hello")
    assert len(server.requests) == 1  # a search has a deadline; retries would outlive it
