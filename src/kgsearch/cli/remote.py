"""The CLI's fast path: send a search (or a stats read) to a local ``kgsearch serve``
of the same store.

``kgsearch serve`` writes a small discovery file while it runs (:func:`announce`): its
URL, pid, store identity, whether it wants an API key and a fingerprint of the
settings that shape a search. ``kgsearch search`` (:func:`search_via_server`) and
``kgsearch stats`` (:func:`stats_via_server`) look up the file of their store, check
the pid is alive and the fingerprint matches, and ask the server with the standard
library's ``http.client``; on any failure they return None and the command runs in
process. An explicit server (``--server URL``
or ``KGSEARCH_SERVER``) is used as given.

Light on purpose: no engine, no pydantic, no httpx; start-up is the point.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from kgsearch.query_embedding import planned_queries

__all__ = [
    "API_KEY_ENV",
    "RUNTIME_ENV",
    "SERVER_ENV",
    "announce",
    "client_url",
    "discovery_path",
    "find_server",
    "queries_of",
    "search_via_server",
    "settings_fingerprint",
    "stats_via_server",
    "store_identity",
    "store_settings",
    "withdraw",
]

SERVER_ENV = "KGSEARCH_SERVER"
"""A server URL the CLI sends searches to (as ``--server``)."""
API_KEY_ENV = "KGSEARCH_API_KEY"
"""The API key the CLI sends to a server that wants one."""
RUNTIME_ENV = "KGSEARCH_RUNTIME_DIR"
"""Where discovery files live (default: ``$XDG_RUNTIME_DIR/kgsearch``, else a
per-user directory under the temporary directory)."""

_TIMEOUT = 60.0
# Variables that say where the store is, which project, or how to reach a server:
# they do not change what a search of a given store and project returns.
_PLACE_ENV = frozenset(
    {
        "KGSEARCH_DB",
        "KGSEARCH_STORE__URL",
        "KGSEARCH_STORE__PROJECT",
        "KGSEARCH_CONFIG",
        SERVER_ENV,
        API_KEY_ENV,
        RUNTIME_ENV,
    }
)


def config_file() -> Path:
    """The TOML settings file (as :func:`kgsearch.config.config_path`)."""
    return Path(os.environ.get("KGSEARCH_CONFIG", "kgsearch.toml"))


def _toml_store() -> dict[str, Any] | None:
    """The TOML file's ``[store]`` table ({} without a file), or None when the file
    cannot be read or parsed (the settings model reports that)."""
    path = config_file()
    if not path.is_file():
        return {}
    import tomllib  # stdlib, imported only when there is a file to read

    try:
        store = tomllib.loads(path.read_text(encoding="utf-8")).get("store", {})
    except (OSError, ValueError):
        return None
    return store if isinstance(store, dict) else None


_TRUE = frozenset({"1", "true", "yes", "on", "t", "y"})
_FALSE = frozenset({"0", "false", "no", "off", "f", "n"})


def queries_of(model_id: str | None) -> str | None:
    """How a search would embed its queries for a store embedded with ``model_id``
    (:func:`kgsearch.query_embedding.planned_queries`), by the ``[embed] fast_queries``
    setting's precedence (environment, then ``kgsearch.toml``) read without the
    settings model; None when that cannot say (another provider, a value only the
    settings model reads)."""
    value: object = _env("KGSEARCH_EMBED__FAST_QUERIES")
    if value is None:
        path = config_file()
        if path.is_file():
            import tomllib  # stdlib, imported only when there is a file to read

            try:
                embed = tomllib.loads(path.read_text(encoding="utf-8")).get("embed", {})
            except (OSError, ValueError):
                return None
            value = embed.get("fast_queries") if isinstance(embed, dict) else None
    if isinstance(value, str):
        word = value.strip().lower()
        value = True if word in _TRUE else False if word in _FALSE else value
    if value is not None and not isinstance(value, bool):
        return None
    return planned_queries(model_id, value)


def _env(name: str) -> str | None:
    # pydantic-settings matches environment names case-insensitively
    for key, value in os.environ.items():
        if key.upper() == name:
            return value
    return None


def store_settings(db: str | None, project: str | None) -> tuple[str, str] | None:
    """The store URL and project a command would use, by the settings' precedence
    (flag, then environment, then ``kgsearch.toml``, then the defaults), without
    loading the settings model; ``db`` already holds ``--db`` or its variables.

    None when only the settings model can say: the TOML file does not parse, a value
    is not a string or is empty, the ``[store]`` table has other keys, or
    ``KGSEARCH_STORE`` gives the section as JSON.
    """
    store = _toml_store()
    if store is None or set(store) - {"url", "project"} or _env("KGSEARCH_STORE") is not None:
        return None
    chosen: list[str] = []
    for given, variable, key, default in (
        (db, "KGSEARCH_STORE__URL", "url", "kgsearch.db"),
        (project, "KGSEARCH_STORE__PROJECT", "project", "default"),
    ):
        value = given or _env(variable)
        if value is None:
            value = store.get(key, default)
        if not isinstance(value, str) or not value:
            return None
        chosen.append(value)
    return chosen[0], chosen[1]


def resolve_store(db: str | None, project: str | None) -> tuple[str, str]:
    """The store URL and project a command would use (:func:`store_settings`), the
    defaults' where only the settings model could say (a server of another store is
    then not found, and the command reports the settings' error in process)."""
    return store_settings(db, project) or (db or "kgsearch.db", project or "default")


def store_identity(url: str) -> str | None:
    """One name per store, whatever the spelling: a SQLite file's real path, a server
    URL without its password; None for an in-memory store (no server shares it)."""
    if url == ":memory:":
        return None
    if "://" in url and not url.startswith("sqlite:///"):
        parts = urlsplit(url)
        user = f"{parts.username}@" if parts.username else ""
        port = f":{parts.port}" if parts.port else ""
        return f"{parts.scheme}://{user}{parts.hostname or ''}{port}{parts.path}"
    path = url.removeprefix("sqlite:///")
    return "sqlite:" + os.path.realpath(path) if path else None


def settings_fingerprint() -> str:
    """A digest of the settings that shape a search: every ``KGSEARCH_*`` variable
    but those that only place the store or the server, and the TOML file's bytes."""
    import hashlib  # stdlib (its OpenSSL library): imported when a server is looked for

    digest = hashlib.sha256()
    for key, value in sorted((k.upper(), v) for k, v in os.environ.items()):
        if key.startswith("KGSEARCH_") and key not in _PLACE_ENV:
            digest.update(f"{key}={value}\0".encode())
    path = config_file()
    if path.is_file():
        digest.update(path.read_bytes())
    return digest.hexdigest()[:32]


def runtime_dir() -> Path:
    """The directory of discovery files."""
    given = os.environ.get(RUNTIME_ENV)
    if given:
        return Path(given)
    xdg = os.environ.get("XDG_RUNTIME_DIR")
    if xdg:
        return Path(xdg) / "kgsearch"
    import tempfile  # stdlib, imported only when neither directory is set

    user = os.getuid() if hasattr(os, "getuid") else os.getlogin()
    return Path(tempfile.gettempdir()) / f"kgsearch-{user}"


def discovery_path(identity: str) -> Path:
    """The discovery file of a store."""
    import hashlib

    name = hashlib.sha256(identity.encode()).hexdigest()[:24]
    return runtime_dir() / f"server-{name}.json"


def client_url(host: str, port: int) -> str:
    """The URL a local client reaches a server listening on ``host``:``port`` by."""
    if host in ("", "0.0.0.0"):
        host = "127.0.0.1"
    elif host == "::":
        host = "::1"
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def announce(identity: str, url: str, *, auth: bool) -> Path:
    """Write the discovery file of a server now answering at ``url`` (atomically)."""
    path = discovery_path(identity)
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    record = {
        "url": url,
        "pid": os.getpid(),
        "store": identity,
        "auth": auth,
        "settings": settings_fingerprint(),
    }
    partial = path.with_suffix(f".{os.getpid()}.tmp")
    partial.write_text(json.dumps(record), encoding="utf-8")
    partial.replace(path)
    return path


def withdraw(identity: str) -> None:
    """Remove the discovery file, if it is still this process's."""
    path = discovery_path(identity)
    record = _read(path)
    if record is not None and record.get("pid") == os.getpid():
        path.unlink(missing_ok=True)


def _read(path: Path) -> dict[str, Any] | None:
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) else None


def _alive(pid: object) -> bool:
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, someone else's
        return True
    except OSError:
        return False
    return True


def find_server(identity: str) -> dict[str, Any] | None:
    """The running server of this store with the same search settings, if any: a
    file whose process is gone (a killed server) or whose settings differ is ignored."""
    record = _read(discovery_path(identity))
    if record is None or record.get("store") != identity or not _alive(record.get("pid")):
        return None
    if record.get("settings") != settings_fingerprint() or not isinstance(record.get("url"), str):
        return None
    return record


def _call(url: str, method: str, path: str, body: Any, headers: dict[str, str]) -> Any:
    """Send a request (a JSON body unless None) and read the JSON answer.

    Raises:
        OSError: No connection, a broken one, or an answer other than 200.
        ValueError: Not an http(s) URL, or not JSON.
    """
    import http.client  # stdlib, imported when a server is asked (not for --help)

    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"not an http(s) URL: {url!r}")
    kind = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
    connection = kind(parts.hostname, parts.port, timeout=_TIMEOUT)
    if body is not None:
        headers = {"Content-Type": "application/json", **headers}
    try:
        connection.request(
            method,
            parts.path.rstrip("/") + path,
            body=None if body is None else json.dumps(body).encode(),
            headers=headers,
        )
        response = connection.getresponse()
        data = response.read()
    except http.client.HTTPException as exc:
        raise ConnectionError(f"{type(exc).__name__}: {exc}") from exc
    finally:
        connection.close()
    if response.status != 200:
        raise ConnectionError(f"HTTP {response.status}")
    return json.loads(data)


def _server_for(
    db: str | None, project: str | None, server: str | None
) -> tuple[str | None, dict[str, str], str | None]:
    """The server to ask and the headers to send (project, key), or ``(None, {},
    reason)`` when there is no usable server of this store."""
    url, chosen = resolve_store(db, project)
    key = os.environ.get(API_KEY_ENV)
    if server is None:
        identity = store_identity(url)
        record = find_server(identity) if identity is not None else None
        if record is None:
            return None, {}, "no running server of this store"
        if record.get("auth", True) and not key:
            return None, {}, f"the server wants an API key: set {API_KEY_ENV}"
        server = str(record["url"])
    headers = {"X-Kgsearch-Project": chosen}
    if key:
        headers["Authorization"] = f"Bearer {key}"
    return server, headers, None


def search_via_server(
    request: dict[str, Any],
    *,
    db: str | None,
    project: str | None,
    debug: bool,
    server: str | None,
) -> tuple[dict[str, Any] | None, str | None]:
    """Run a search (the CLI's request: snake_case fields) on a server.

    Returns:
        The response as JSON (``results``, ``metadata``…) and the server's URL, or
        ``(None, reason)`` when no server answered: there is none for this store, it
        is gone, it refused (no key, another project) or failed; the caller then
        searches in process.
    """
    server, headers, reason = _server_for(db, project, server)
    if server is None:
        return None, reason
    body = {**request, "include_debug": debug} if debug else request
    try:
        found = _call(server, "POST", "/api/search/unified", body, headers)
    except (OSError, ValueError) as exc:
        return None, f"{server}: {exc}"
    if not isinstance(found, dict) or not isinstance(found.get("results"), list):
        return None, f"{server}: not a search response"
    return found, server


def stats_via_server(
    *, db: str | None, project: str | None, server: str | None = None
) -> tuple[dict[str, Any] | None, str | None]:
    """The project's row counts from ``server`` or the running server of this store
    (``GET /api/graph/stats``), as ``Engine.stats`` gives them in process, a found
    server's store URL spelled as this process would spell it; ``(None, reason)`` when
    no server answered.
    """
    given = server
    server, headers, reason = _server_for(db, project, server)
    if server is None:
        return None, reason
    try:
        found = _call(server, "GET", "/api/graph/stats", None, headers)
    except (OSError, ValueError) as exc:
        return None, f"{server}: {exc}"
    if not isinstance(found, dict) or not isinstance(found.get("counts"), dict):
        return None, f"{server}: not a stats response"
    url, _ = resolve_store(db, project)
    if given is None and "://" not in url and url != ":memory:":
        found["store"] = "sqlite:///" + str(Path(url))  # a bare path, as SQLite spells it
    elif given is None and url.startswith("sqlite:///"):
        found["store"] = url
    return found, server
