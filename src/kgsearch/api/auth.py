"""Who is calling: API-key authentication, scopes and the project a request may touch.

Every route depends on :func:`require` with the scope it needs. With keys on (the
default) the key in ``Authorization: Bearer <key>`` decides the project; a project
named anywhere else (``X-Kgsearch-Project`` header, ``project`` query parameter or
body field) must be that same project, or the request gets 403. In keyless mode,
which :func:`kgsearch.api.create_app` only enables when asked and which answers
loopback clients only, the header or query parameter selects the project.

A key read from the store is trusted for :data:`KEY_FRESH_SECONDS` (:class:`KeyCache`):
a key revoked (or given other limits) with ``kgsearch keys`` is refused by every
server process within that second, not on the very next request.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Annotated

import anyio
from fastapi import Depends, Query, Request
from fastapi.routing import APIRoute
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from kgsearch.engine import Engine
from kgsearch.errors import InvalidRequest
from kgsearch.keys import (
    ALL_SCOPES,
    ApiKey,
    Forbidden,
    KeyLimits,
    Scope,
    Unauthorized,
    check_project,
    holds,
    is_loopback,
)

__all__ = [
    "KEY_FRESH_SECONDS",
    "PROJECT_HEADER",
    "KeyCache",
    "Principal",
    "current_engine",
    "get_engine",
    "is_loopback",
    "require",
]

PROJECT_HEADER = "X-Kgsearch-Project"

KEY_FRESH_SECONDS = 1.0
"""How long a key read from the store is trusted: a revocation (or new limits) made
anywhere reaches every server process within this time."""
_bearer = HTTPBearer(auto_error=False, description="An API key from `kgsearch keys create`")


@dataclass(frozen=True)
class Principal:
    """The caller of one request: its project, scopes, key id (None when keyless) and
    the key's own LLM limits (None: the server's)."""

    project: str
    scopes: frozenset[Scope]
    key_id: str | None = None
    llm_limits: KeyLimits | None = None

    def allows(self, scope: Scope) -> bool:
        """Whether the caller holds ``scope``."""
        return holds(self.scopes, scope)

    def need(self, scope: Scope) -> None:
        """Raise unless the caller holds ``scope``.

        Raises:
            Forbidden: The scope is missing.
        """
        if not self.allows(scope):
            hint = (
                "; it calls the chat model, which a key may do only when granted 'llm' "
                f"(`kgsearch keys create --project {self.project} --scopes read,llm`)"
                if scope == "llm"
                else ""
            )
            raise Forbidden(
                f"this request needs the {scope!r} scope, which the API key lacks{hint}",
                details={"required_scope": scope, "scopes": sorted(self.scopes)},
            )

    def check_body(self, project: str | None) -> None:
        """Raise if a request body names another project.

        Raises:
            Forbidden: ``project`` is set and is not the caller's project.
        """
        if project is not None and project != self.project:
            raise Forbidden(
                "the body names another project than the one this request is bound to",
                details={"project": project},
            )


class KeyCache:
    """The key records the store gave for presented keys, each trusted for ``ttl``
    seconds. Reading the key on every request was a tenth of the event loop's samples
    (a statement, a row decoded and a digest; py-spy on a server under
    ``scripts/bench_load.py --canned-search``); a client sends the same key request
    after request. Only keys the store accepted are held
    (a bad key is read again each time), with the engine that accepted them, by their
    SHA-256 (no secret stays in the process after its request), and only on the event
    loop's thread (no lock).

    Args:
        ttl: Seconds a record is trusted; 0 holds none.
        size: Keys held at most (all are dropped when full: a server sees few keys).
        clock: Monotonic seconds (tests pass their own).
    """

    def __init__(
        self,
        ttl: float = KEY_FRESH_SECONDS,
        *,
        size: int = 1024,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.ttl = ttl
        self.size = size
        self.clock = clock
        self._held: dict[bytes, tuple[float, Engine, ApiKey]] = {}

    def get(self, engine: Engine, presented: str) -> ApiKey | None:
        """The record held for ``presented`` from ``engine``, while fresh."""
        digest = _digest(presented)
        held = self._held.get(digest)
        if held is None:
            return None
        until, source, key = held
        if source is not engine or self.clock() >= until:
            del self._held[digest]
            return None
        return key

    def put(self, engine: Engine, presented: str, key: ApiKey) -> None:
        """Hold ``key``, which ``engine`` gave for ``presented``."""
        if self.ttl <= 0:
            return
        if len(self._held) >= self.size:
            self._held.clear()
        self._held[_digest(presented)] = (self.clock() + self.ttl, engine, key)


def _digest(presented: str) -> bytes:
    return hashlib.sha256(presented.encode("utf-8", "surrogatepass")).digest()


def get_engine(request: Request) -> Engine:
    """The app's engine (set by ``create_app``)."""
    engine: Engine = request.app.state.engine
    return engine


async def current_engine(request: Request) -> Engine:
    """:func:`get_engine` as a route dependency. It is ``async`` so that FastAPI calls
    it on the event loop: a plain ``def`` dependency runs on a worker thread, one more
    thread hand-off per request for a lookup in ``app.state``."""
    return get_engine(request)


def _query_names(route: APIRoute) -> frozenset[str]:
    """The query parameters a route declares, its dependencies' included."""
    names: set[str] = set()
    stack = [route.dependant]
    while stack:
        dependant = stack.pop()
        names |= {f.alias for f in dependant.query_params}
        stack.extend(dependant.dependencies)
    return frozenset(names)


def _reject_unknown_query(request: Request) -> None:
    route = request.scope.get("route")
    if isinstance(route, APIRoute):
        known = _query_names(route)
        unknown = sorted(set(request.query_params) - known)
        if unknown:
            raise InvalidRequest(
                f"unknown query parameter(s): {', '.join(unknown)}",
                details={"unknown": unknown, "known": sorted(known)},
            )


def _one(values: list[str], what: str) -> str | None:
    if len(values) > 1:
        raise InvalidRequest(f"send at most one {what}", details={"got": values})
    return values[0] if values else None


def _named_project(request: Request, query: str | None) -> str | None:
    header = _one(request.headers.getlist(PROJECT_HEADER), f"{PROJECT_HEADER} header")
    query = _one(request.query_params.getlist("project"), "project query parameter")
    if header is not None and query is not None and header != query:
        raise InvalidRequest(
            f"the {PROJECT_HEADER} header and the project query parameter disagree",
            details={"header": header, "query": query},
        )
    named = header if header is not None else query
    if named is not None and not (named.strip() and len(named) <= 200):
        raise InvalidRequest("project must be a non-blank name of at most 200 characters")
    return named


def _hostname(value: str) -> str:
    """The host of a ``Host`` header or an origin's authority, without its port."""
    if value.startswith("["):  # [::1]:8000
        return value[1:].partition("]")[0]
    return value.rsplit(":", 1)[0] if value.count(":") == 1 else value


def _check_loopback_names(request: Request) -> None:
    """In keyless mode a request must be addressed to a loopback name, and a browser's
    ``Origin`` must be one too: a web page that rebinds its own name to 127.0.0.1
    sends its own name in ``Host`` and is refused (DNS rebinding)."""
    host = request.headers.get("host", "")
    if not is_loopback(_hostname(host)):
        raise Forbidden(
            f"keyless mode answers requests addressed to localhost only, not Host {host!r}"
        )
    origin = request.headers.get("origin")
    if origin is not None and origin != "null":
        authority = origin.partition("://")[2].split("/", 1)[0]
        if not is_loopback(_hostname(authority)):
            raise Forbidden(f"keyless mode refuses requests from the page at {origin!r}")
    elif origin == "null":
        raise Forbidden("keyless mode refuses requests from opaque origins")


async def _authenticate(
    request: Request, credentials: HTTPAuthorizationCredentials | None
) -> ApiKey:
    """The key record of the presented key: the one :class:`KeyCache` holds, or read
    from the store (a revoked key stops working within :data:`KEY_FRESH_SECONDS`,
    whichever process revoked it). A store answering in-process
    (SQLite: an indexed read and a SHA-256, 16 µs of CPU, on the loop thread's own
    connection, never behind a write) is read here, on the event loop; handing it to a
    worker thread and back took 115 µs. A server store's read is a round trip, which
    goes to a worker thread so the event loop never waits on it."""
    if credentials is None:
        raise Unauthorized(
            "missing API key: send `Authorization: Bearer <key>`; "
            "create one with `kgsearch keys create --project P --scopes read`"
        )
    engine = get_engine(request)
    presented = credentials.credentials
    keys: KeyCache | None = getattr(request.app.state, "key_cache", None)
    held = keys.get(engine, presented) if keys is not None else None
    if held is not None:
        return held
    if engine.store.server_reads:
        key = await anyio.to_thread.run_sync(engine.authenticate, presented)
    else:
        key = engine.authenticate(presented)
    if keys is not None:
        keys.put(engine, presented, key)
    return key


def require(scope: Scope) -> Callable[..., Awaitable[Principal]]:
    """A dependency that authenticates the request and checks ``scope``. It is ``async``
    (as :func:`current_engine`), so FastAPI runs it on the event loop: a plain ``def``
    dependency cost every request a hand-off to a worker thread and back.

    Raises (from the dependency):
        InvalidRequest: An unknown query parameter (strict, like bodies).
        Unauthorized: Keys are required and none valid was sent.
        Forbidden: Missing scope, another project named, or keyless mode from a
            non-loopback client.
    """

    async def dependency(
        request: Request,
        credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
        project: Annotated[
            str | None,
            Query(
                max_length=200,
                description="The project; with a key it must be the key's own project",
            ),
        ] = None,
    ) -> Principal:
        _reject_unknown_query(request)
        named = _named_project(request, project)
        if request.app.state.require_keys:
            key = await _authenticate(request, credentials)
            check_project(key, named)
            principal = Principal(key.project, frozenset(key.scopes), key.id, key.llm_limits)
        else:
            client = request.client.host if request.client else None
            if not is_loopback(client):
                raise Forbidden("keyless mode serves loopback clients only; use an API key")
            _check_loopback_names(request)
            default = get_engine(request).project
            principal = Principal(named or default, frozenset(ALL_SCOPES))
        principal.need(scope)
        return principal

    return dependency
