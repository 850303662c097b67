"""API keys over a real server: hashed storage, 401s, scopes, project binding, keyless mode."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, ClassVar

import anyio
import httpx
import pytest
from starlette.datastructures import Headers, QueryParams

from kgsearch import Engine, InvalidRequest, NotFound, connect
from kgsearch.api.app import create_app
from kgsearch.api.auth import KEY_FRESH_SECONDS, KeyCache
from kgsearch.keys import Forbidden, Unauthorized, parse_scopes
from kgsearch.testing import FakeEmbedder

Serve = Callable[..., str]
Http = Callable[..., httpx.Client]

ADA = {"type": "Person", "key": "ada", "properties": {"name": "Ada"}}


@pytest.fixture
def base(base_url: str) -> str:
    """A keyed server over ``api_engine``."""
    return base_url


def test_keys_are_stored_as_digests_only(api_engine: Engine, tmp_path: Path) -> None:
    key, record = api_engine.create_api_key("alpha", "read", name="ci")

    with sqlite3.connect(tmp_path / "api.db") as db:
        rows = db.execute("SELECT id, key_hash FROM api_keys").fetchall()

    secret = key.split("_", 2)[2]  # the secret itself may hold "_"
    assert len(secret) == 43
    assert key.startswith(f"kgs_{record.id}_")
    assert [r[0] for r in rows] == [record.id]
    assert secret not in rows[0][1] and key not in rows[0][1]
    assert len(rows[0][1]) == 64


def test_authenticate_returns_the_key_record(api_engine: Engine) -> None:
    key, record = api_engine.create_api_key("alpha", "write,read", name="ci")

    assert api_engine.authenticate(key) == record
    assert record.scopes == ["read", "write"]


@pytest.mark.parametrize(
    "presented",
    ["", "nonsense", "kgs_000000000000_" + "A" * 43, "Bearer kgs_x_y"],
)
def test_bad_keys_are_unauthorized(api_engine: Engine, presented: str) -> None:
    with pytest.raises(Unauthorized):
        api_engine.authenticate(presented)


def test_a_key_with_a_wrong_secret_is_unauthorized(api_engine: Engine) -> None:
    key, _ = api_engine.create_api_key("alpha", "read")

    with pytest.raises(Unauthorized):
        api_engine.authenticate(key[:-1] + ("A" if key[-1] != "A" else "B"))


def test_unknown_scopes_are_rejected() -> None:
    with pytest.raises(InvalidRequest) as caught:
        parse_scopes("read,owner")

    assert caught.value.details == {"unknown": ["owner"]}


def test_listing_and_revoking_keys(api_engine: Engine) -> None:
    _, a = api_engine.create_api_key("alpha", "read")
    _, b = api_engine.create_api_key("beta", "read")

    api_engine.revoke_api_key(a.id)

    assert [k.id for k in api_engine.api_keys()] == [a.id, b.id]
    assert [k.id for k in api_engine.api_keys(project="beta")] == [b.id]
    assert api_engine.api_keys(project="alpha")[0].revoked_at is not None
    with pytest.raises(NotFound):
        api_engine.revoke_api_key(a.id)


def test_a_request_without_a_key_is_401(base: str, http: Http) -> None:
    response = http(base).get("/api/graph/objects")

    assert response.status_code == 401
    assert response.json()["error"]["code"] == "unauthorized"
    assert response.headers["www-authenticate"] == "Bearer"


class Clock:
    """Monotonic seconds a test moves by hand."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(module_server: tuple[Any, str]) -> Iterator[Clock]:
    """The module server's key cache, on a clock the test moves."""
    state = module_server[0].state
    clock, previous = Clock(), state.key_cache
    state.key_cache = KeyCache(clock=clock)
    yield clock
    state.key_cache = previous


def test_a_revoked_key_is_refused_within_a_second(
    base: str, http: Http, api_engine: Engine, clock: Clock
) -> None:
    key, record = api_engine.create_api_key("alpha", "read")
    c = http(base, key)
    assert c.get("/api/graph/objects").status_code == 200

    api_engine.revoke_api_key(record.id)
    clock.now += KEY_FRESH_SECONDS - 0.01
    within = c.get("/api/graph/objects").status_code
    clock.now += 0.01
    response = c.get("/api/graph/objects")

    assert within == 200  # the documented second a server may still trust the key
    assert (response.status_code, response.json()["error"]["message"]) == (
        401,
        "this API key was revoked",
    )


@pytest.fixture
def key_reads(api_engine: Engine, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The keys the server reads from the store, in order, from now on."""
    authenticate = api_engine.authenticate
    reads: list[str] = []

    def counting(presented: str) -> object:
        reads.append(presented)
        return authenticate(presented)

    monkeypatch.setattr(api_engine, "authenticate", counting)
    return reads


def test_a_key_is_read_from_the_store_once_a_second(
    base: str, http: Http, api_engine: Engine, clock: Clock, key_reads: list[str]
) -> None:
    key, _ = api_engine.create_api_key("alpha", "read")
    c = http(base, key)
    statuses = [c.get("/api/graph/objects").status_code for _ in range(3)]
    clock.now += KEY_FRESH_SECONDS
    statuses.append(c.get("/api/graph/objects").status_code)

    assert (statuses, key_reads) == ([200] * 4, [key, key])


def test_a_refused_key_is_read_again_on_each_request(
    base: str, http: Http, api_engine: Engine, clock: Clock, key_reads: list[str]
) -> None:
    key, _ = api_engine.create_api_key("alpha", "read")
    wrong = key[:-1] + ("A" if key[-1] != "A" else "B")
    c = http(base, wrong)
    statuses = [c.get("/api/graph/objects").status_code for _ in range(2)]

    assert (statuses, key_reads) == ([401, 401], [wrong, wrong])


def test_a_held_key_is_trusted_only_for_the_engine_that_read_it(api_engine: Engine) -> None:
    key, record = api_engine.create_api_key("alpha", "read")
    cache = KeyCache(clock=Clock())
    cache.put(api_engine, key, record)
    other = Engine(connect(":memory:"), embedder=FakeEmbedder(32))
    try:
        assert (cache.get(api_engine, key), cache.get(other, key)) == (record, None)
    finally:
        other.close()


@pytest.mark.parametrize("server_reads", [False, True])
def test_a_key_is_read_on_the_event_loop_unless_reads_are_server_round_trips(
    base: str, http: Http, api_engine: Engine, monkeypatch: pytest.MonkeyPatch, server_reads: bool
) -> None:
    # a SQLite store's key read costs less than handing it to a worker thread and back;
    # a store whose reads are server round trips (PostgreSQL's) has it read off the loop,
    # whatever the store says of its vector legs
    monkeypatch.setattr(api_engine.store, "server_reads", server_reads)
    monkeypatch.setattr(api_engine.store, "parallel_vector_legs", False)
    key, _ = api_engine.create_api_key("alpha", "read")
    authenticate = api_engine.authenticate
    on_loop: list[bool] = []

    def noting(presented: str) -> object:
        try:
            asyncio.get_running_loop()
            on_loop.append(True)
        except RuntimeError:
            on_loop.append(False)
        return authenticate(presented)

    monkeypatch.setattr(api_engine, "authenticate", noting)

    assert http(base, key).get("/api/graph/objects").status_code == 200
    assert on_loop == [not server_reads]


@pytest.mark.parametrize(
    ("scopes", "method", "path", "body", "allowed"),
    [
        ("read", "GET", "/api/graph/objects", None, True),
        ("read", "POST", "/api/graph/objects", ADA, False),
        ("write", "POST", "/api/graph/objects", ADA, True),
        ("write", "GET", "/api/graph/objects", None, False),
        ("write", "GET", "/api/embeddings/status", None, False),
        ("read", "POST", "/api/embeddings/backfill", {}, False),
        ("read", "POST", "/api/embeddings/retry", {}, False),
        ("read", "POST", "/api/text", {"text": "hi"}, False),
        ("read", "POST", "/api/search/unified", {"query": "ada"}, True),
        ("read", "POST", "/api/search/unified", {"query": "ada", "includeDebug": True}, False),
        ("read", "POST", "/api/search/context", {"query": "ada", "includeDebug": True}, False),
        ("read", "POST", "/api/search/explain", {"query": "ada"}, False),
        ("read,debug", "POST", "/api/search/explain", {"query": "ada"}, True),
        ("read,debug", "POST", "/api/search/unified", {"query": "a", "includeDebug": True}, True),
    ],
)
def test_scopes_decide_what_a_key_may_do(
    base: str,
    http: Http,
    api_engine: Engine,
    scopes: str,
    method: str,
    path: str,
    body: object,
    allowed: bool,
) -> None:
    key, _ = api_engine.create_api_key("alpha", scopes)

    response = http(base, key).request(method, path, json=body)

    assert (response.status_code < 400) is allowed, response.text
    if not allowed:
        assert (response.status_code, response.json()["error"]["code"]) == (403, "forbidden")


def test_a_key_without_debug_gets_no_debug_output(
    base: str, http: Http, api_engine: Engine
) -> None:
    key, _ = api_engine.create_api_key("alpha", "read")

    plain = http(base, key).post("/api/search/unified", json={"query": "ada"}).json()
    asked = http(base, key).post("/api/search/unified", json={"query": "a", "includeDebug": True})

    assert plain["debug"] is None
    assert asked.status_code == 403
    assert "debug" not in asked.json()


@pytest.mark.parametrize(
    ("where", "request_kwargs"),
    [
        ("query", {"params": {"project": "beta"}}),
        ("header", {"headers": {"X-Kgsearch-Project": "beta"}}),
        ("body", {"json": {**ADA, "project": "beta"}}),
    ],
)
def test_naming_another_project_is_forbidden(
    base: str, http: Http, api_engine: Engine, where: str, request_kwargs: dict[str, object]
) -> None:
    key, _ = api_engine.create_api_key("alpha", "read,write")
    method = "POST" if where == "body" else "GET"

    response = http(base, key).request(method, "/api/graph/objects", **request_kwargs)  # type: ignore[arg-type]

    assert (response.status_code, response.json()["error"]["code"]) == (403, "forbidden")


def test_naming_the_own_project_is_fine(base: str, http: Http, api_engine: Engine) -> None:
    key, _ = api_engine.create_api_key("alpha", "read,write")

    created = http(base, key).post(
        "/api/graph/objects", json={**ADA, "project": "alpha"}, params={"project": "alpha"}
    )

    assert (created.status_code, created.json()["project"]) == (201, "alpha")


def test_keyless_mode_serves_loopback_in_the_named_project(
    serve: Serve, http: Http, api_engine: Engine
) -> None:
    base = serve(create_app(api_engine, keys=False))

    created = http(base, None, **{"X-Kgsearch-Project": "gamma"}).post(
        "/api/graph/objects", json=ADA
    )
    default = http(base).get("/api/graph/objects").json()

    assert (created.status_code, created.json()["project"]) == (201, "gamma")
    assert default["items"] == []
    assert (
        http(base)
        .post("/api/search/unified", json={"query": "ada", "includeDebug": True})
        .json()["debug"]
        is not None
    )


def test_keyless_mode_refuses_non_loopback_clients() -> None:
    from kgsearch.api.auth import require

    class Client:
        host = "10.1.2.3"

    class State:
        require_keys = False

    class App:
        state = State()

    class Request:
        headers = Headers({})
        scope: ClassVar[dict[str, str]] = {}
        query_params = QueryParams("")
        client = Client()
        app = App()

    with pytest.raises(Forbidden):
        anyio.run(require("read"), Request(), None)


@pytest.mark.parametrize(
    "headers",
    [
        {"Host": "attacker.example"},
        {"Host": "attacker.example:8000"},
        {"Origin": "http://attacker.example"},
        {"Origin": "null"},
    ],
)
def test_keyless_mode_refuses_requests_for_other_names(
    serve: Serve, http: Http, api_engine: Engine, headers: dict[str, str]
) -> None:
    base = serve(create_app(api_engine, keys=False))

    response = http(base, None, **headers).post("/api/graph/objects", json=ADA)

    assert response.status_code == 403
    assert "keyless mode" in response.json()["error"]["message"]
    assert api_engine.list_rows("object").items == []


@pytest.mark.parametrize(
    "headers",
    [
        {"Host": "localhost:8000"},
        {"Host": "127.0.0.1"},
        {"Host": "[::1]:9000"},
        {"Origin": "http://localhost:5173"},
    ],
)
def test_keyless_mode_serves_loopback_names(
    serve: Serve, http: Http, api_engine: Engine, headers: dict[str, str]
) -> None:
    base = serve(create_app(api_engine, keys=False))

    assert http(base, None, **headers).post("/api/graph/objects", json=ADA).status_code == 201


def test_two_project_headers_are_refused(serve: Serve, http: Http, api_engine: Engine) -> None:
    key, _ = api_engine.create_api_key("alpha", "read,write")
    base = serve(create_app(api_engine))
    with httpx.Client(base_url=base) as c:
        response = c.get(
            "/api/graph/objects",
            headers=[
                ("Authorization", f"Bearer {key}"),
                ("X-Kgsearch-Project", "alpha"),
                ("X-Kgsearch-Project", "beta"),
            ],
        )
        twice = c.get(
            "/api/graph/objects?project=alpha&project=beta",
            headers={"Authorization": f"Bearer {key}"},
        )

    assert response.status_code == 400 and "at most one" in response.text
    assert twice.status_code == 400
