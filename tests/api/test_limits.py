"""Input limits and the one error shape: bad input is a 4xx with {"error": {...}}, never a 500."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from kgsearch import Engine

Http = Callable[..., httpx.Client]
APP_OPTIONS = {"max_body_bytes": 65_536}


@pytest.fixture
def c(base_url: str, http: Http, api_engine: Engine) -> httpx.Client:
    """A full-scope client of a server with a 64 KiB body limit."""
    key, _ = api_engine.create_api_key("alpha", "read,write,debug")
    return http(base_url, key)


def error(response: httpx.Response) -> tuple[int, str]:
    """(status, error code), after checking the error shape."""
    body = response.json()
    assert set(body) == {"error"}
    assert set(body["error"]) == {"code", "message", "details"}
    return response.status_code, body["error"]["code"]


def test_a_body_over_the_limit_is_413(c: httpx.Client) -> None:
    response = c.post("/api/text", json={"text": "x" * 70_000})

    assert error(response) == (413, "payload_too_large")
    assert response.json()["error"]["details"] == {"max_bytes": 65_536}


def test_a_streamed_body_over_the_limit_is_413(c: httpx.Client) -> None:
    def chunks() -> Iterator[bytes]:
        yield b'{"text": "'
        for _ in range(100):
            yield b"x" * 1000
        yield b'"}'

    response = c.post("/api/text", content=chunks(), headers={"content-type": "application/json"})

    assert "content-length" not in response.request.headers
    assert error(response) == (413, "payload_too_large")


def test_a_query_of_800_characters_is_accepted(c: httpx.Client) -> None:
    assert c.post("/api/search/unified", json={"query": "a" * 800}).status_code == 200


@pytest.mark.parametrize("path", ["/api/search/unified", "/api/search/context"])
def test_a_query_over_800_characters_is_400(c: httpx.Client, path: str) -> None:
    response = c.post(path, json={"query": "a" * 801})

    assert error(response) == (400, "invalid_request")
    assert response.json()["error"]["details"]["errors"][0]["loc"] == ["body", "query"]


@pytest.mark.parametrize(
    ("method", "path", "kwargs"),
    [
        ("POST", "/api/search/unified", {"json": {"query": "a", "limit": 101}}),
        ("POST", "/api/search/unified", {"json": {"query": "a", "limit": 0}}),
        ("POST", "/api/search/unified", {"json": {"query": ""}}),
        ("GET", "/api/graph/objects", {"params": {"limit": 101}}),
        ("GET", "/api/graph/relationships", {"params": {"limit": "many"}}),
        ("GET", "/api/graph/objects/x/neighbors", {"params": {"depth": 9}}),
        ("POST", "/api/graph/objects/bulk", {"json": {"items": []}}),
        (
            "POST",
            "/api/graph/objects/bulk",
            {"json": {"items": [{"type": "T", "key": "k"}] * 1001}},
        ),
        ("POST", "/api/graph/objects", {"json": {"type": "T", "key": "k", "colour": "red"}}),
        ("POST", "/api/graph/objects", {"json": {"type": " ", "key": "k"}}),
        ("POST", "/api/search/unified", {"json": {"query": "a", "resultTypes": "all"}}),
        ("POST", "/api/search/unified", {"json": {"query": "a", "recipe": "nope"}}),
        ("POST", "/api/search/unified", {"json": {"query": "a", "reranker": "node_distance"}}),
        ("POST", "/api/embeddings/backfill", {"json": {"batch_size": 0}}),
        ("GET", "/api/graph/objects/" + "x" * 201, {}),
        ("GET", "/api/graph/objects", {"params": {"cursor": "not-a-number"}}),
    ],
)
def test_invalid_input_is_400(
    c: httpx.Client, method: str, path: str, kwargs: dict[str, Any]
) -> None:
    assert error(c.request(method, path, **kwargs)) == (400, "invalid_request")


def test_unknown_query_parameters_are_rejected(c: httpx.Client) -> None:
    response = c.get("/api/graph/objects", params={"limt": 5})

    assert error(response) == (400, "invalid_request")
    assert response.json()["error"]["details"] == {
        "unknown": ["limt"],
        "known": ["cursor", "label", "limit", "project", "type"],
    }


def test_unknown_fields_are_named_in_the_details(c: httpx.Client) -> None:
    response = c.post("/api/search/unified", json={"query": "a", "topK": 3})

    assert response.json()["error"]["details"] == {
        "errors": [
            {
                "loc": ["body", "topK"],
                "msg": "Extra inputs are not permitted",
                "type": "extra_forbidden",
            }
        ]
    }


@pytest.mark.parametrize(
    "content",
    [
        b"",
        b"{",
        b"not json",
        b"[1, 2]",
        b'{"query": "\\ud800"}',
        b'{"type": "T", "key": "\\udfff"}',
    ],
)
def test_malformed_or_invalid_unicode_json_is_400(c: httpx.Client, content: bytes) -> None:
    for path in ("/api/search/unified", "/api/graph/objects"):
        response = c.post(path, content=content, headers={"content-type": "application/json"})
        assert error(response) == (400, "invalid_request")


def test_an_escaped_surrogate_pair_is_valid_text(c: httpx.Client) -> None:
    response = c.post(
        "/api/graph/objects",
        content=b'{"type": "T", "key": "smile \\ud83d\\ude00"}',
        headers={"content-type": "application/json"},
    )

    assert (response.status_code, response.json()["key"]) == (201, "smile \U0001f600")


def test_a_number_too_large_for_the_store_is_400(c: httpx.Client) -> None:
    response = c.post(
        "/api/search/unified",
        json={"query": "a", "filters": {"properties": {"year": 10**30}}},
    )

    assert error(response) == (400, "invalid_request")


def test_unknown_routes_and_methods_use_the_error_shape(c: httpx.Client) -> None:
    assert error(c.get("/api/nothing")) == (404, "not_found")
    assert error(c.put("/api/graph/objects")) == (405, "method_not_allowed")


def _nested(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {}
    for _ in range(depth):
        value = {"a": value}
    return value


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/api/graph/objects", {"type": "T", "key": "deep", "properties": _nested(300)}),
        ("/api/sources", {"id": "s-deep", "metadata": _nested(300)}),
        ("/api/text", {"text": "hello", "metadata": _nested(300)}),
    ],
)
def test_deeply_nested_json_is_refused_and_never_stored(
    c: httpx.Client, api_engine: Engine, path: str, body: dict[str, Any]
) -> None:
    response = c.post(path, json=body)

    assert error(response) == (400, "invalid_request")
    assert "nests deeper than 32 levels" in response.text
    assert api_engine.stats(project="alpha").counts == {
        "objects": 0,
        "relationships": 0,
        "chunks": 0,
        "sources": 0,
        "mentions": 0,
    }


def test_a_patch_with_deep_properties_is_refused(c: httpx.Client) -> None:
    created = c.post("/api/graph/objects", json={"type": "T", "key": "k"}).json()
    response = c.patch(f"/api/graph/objects/{created['id']}", json={"properties": _nested(100)})

    assert error(response) == (400, "invalid_request")
    assert c.get(f"/api/graph/objects/{created['id']}").status_code == 200  # still readable


@pytest.mark.parametrize("weight", ["1e999", "-1e999", "NaN", "Infinity"])
def test_a_non_finite_weight_is_refused(c: httpx.Client, weight: str) -> None:
    for key in ("a", "b"):
        c.post("/api/graph/objects", json={"type": "T", "key": key})
    body = (
        '{"type": "knows", "source": {"type": "T", "key": "a"}, '
        f'"target": {{"type": "T", "key": "b"}}, "weight": {weight}}}'
    )
    response = c.post(
        "/api/graph/relationships", content=body, headers={"content-type": "application/json"}
    )

    status, _ = error(response)
    assert status == 400
    assert c.get("/api/graph/relationships").json()["items"] == []


@pytest.mark.parametrize("instant", ["0001-01-01T00:00:00+14:00", "9999-12-31T23:59:59-14:00"])
def test_datetimes_past_the_utc_range_are_400(c: httpx.Client, instant: str) -> None:
    search = c.post("/api/search/unified", json={"query": "a", "filters": {"as_of": instant}})
    for key in ("a", "b"):
        c.post("/api/graph/objects", json={"type": "T", "key": key})
    edge = c.post(
        "/api/graph/relationships",
        json={
            "type": "r",
            "source": {"type": "T", "key": "a"},
            "target": {"type": "T", "key": "b"},
            "valid_from": instant,
        },
    )

    assert error(search) == (400, "invalid_request") and "out of range" in search.text
    assert error(edge) == (400, "invalid_request")
    assert c.get("/health").status_code == 200  # the connection is still served


@pytest.mark.parametrize("cursor", ["9" * 40, "-5", "1e5"])
def test_a_cursor_no_store_handed_out_is_400_without_internals(
    c: httpx.Client, cursor: str
) -> None:
    response = c.get("/api/graph/objects", params={"cursor": cursor})

    assert error(response) == (400, "invalid_request")
    assert "invalid cursor" in response.text and "SQLite" not in response.text
