"""API keys: generation, hashing, verification and scopes (used by the REST and MCP servers).

A key looks like ``kgs_<id>_<secret>``: ``id`` (12 hex characters) names the stored
record, ``secret`` is 256 random bits. Only the SHA-256 digest of the secret is
stored; a key is checked by looking the record up by id and comparing digests in
constant time. A fast hash is the right tool here: a 256-bit random secret cannot
be guessed, so the slow, salted password hashes (scrypt, argon2) that protect
low-entropy passwords would only add latency to every request.

Each key is bound to exactly one project and carries scopes:

* ``read``  — lookups, listings, search, RAG context, embedding status;
* ``write`` — creates, updates, deletes, ingestion, backfill and retry;
* ``debug`` — search debug output (``includeDebug``) and ``explain``;
* ``llm``   — calls that spend on the chat model: answers (``ask``), searches with
  ``keywords: "llm"``, extraction previews with an LLM extractor, LLM community
  reports; each also needs the route's own scope and is held to the server's budget;
* ``admin`` — every scope above, and the project's LLM usage (``GET /api/usage``).

A key holds only the scopes it was created with: keys made before ``llm`` existed
do not spend (``kgsearch keys create --scopes read,llm`` makes one that does).

:func:`create_api_key`, :func:`authenticate` and :func:`revoke_api_key` work over any
:class:`KeyRecords` (every store is one), so this module needs no store import.

The errors raised here extend the one kgsearch tree::

    KgsearchError
    ├── Unauthorized   401  unauthorized   no key, malformed, unknown or revoked
    └── Forbidden      403  forbidden      missing scope, or another project named
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import re
import secrets
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Literal, Protocol, get_args

from pydantic import BaseModel, ConfigDict, Field

from kgsearch.errors import Forbidden, InvalidRequest, NotFound, Unauthorized

__all__ = [
    "ALL_SCOPES",
    "ApiKey",
    "Forbidden",
    "KeyLimits",
    "KeyRecords",
    "Scope",
    "Unauthorized",
    "authenticate",
    "check_project",
    "check_scope",
    "create_api_key",
    "generate_key",
    "hash_secret",
    "holds",
    "is_loopback",
    "parse_key",
    "parse_scopes",
    "revoke_api_key",
    "verify_secret",
]

Scope = Literal["read", "write", "debug", "llm", "admin"]
ALL_SCOPES: tuple[Scope, ...] = get_args(Scope)
_PREFIX = "kgs"
_KEY = re.compile(r"^kgs_([0-9a-f]{12})_([A-Za-z0-9_-]{43})$")


def _default_scopes() -> list[Scope]:
    return ["read"]


class KeyLimits(BaseModel):
    """One key's own LLM budget (``kgsearch keys limit``); a field left None takes the
    server's ``[budget] key_*`` value, and 0 turns that limit off for the key."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    requests_per_minute: int | None = Field(default=None, ge=0)
    tokens_per_minute: int | None = Field(default=None, ge=0)
    tokens_per_day: int | None = Field(default=None, ge=0)
    cost_per_day_usd: float | None = Field(default=None, ge=0, allow_inf_nan=False)


class ApiKey(BaseModel):
    """A stored API key's public record (never the secret nor its hash).

    Attributes:
        id: The public key id (the ``<id>`` part of the key).
        project: The only project this key can read or write.
        scopes: What the key may do.
        name: A human label.
        created_at: When the key was made.
        revoked_at: When it was revoked, or None while it is active.
        llm_limits: The key's own LLM budget, or None for the server's.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    project: str
    scopes: list[Scope] = Field(default_factory=_default_scopes)
    name: str | None = None
    created_at: datetime
    revoked_at: datetime | None = None
    llm_limits: KeyLimits | None = None

    @property
    def active(self) -> bool:
        """Whether the key can still be used."""
        return self.revoked_at is None


def parse_scopes(scopes: str | Iterable[str]) -> list[Scope]:
    """Normalise scopes (``"read,write"`` or an iterable) into a sorted, unique list.

    Raises:
        InvalidRequest: A scope is unknown or none is given.
    """
    items = scopes.split(",") if isinstance(scopes, str) else list(scopes)
    names = [s.strip() for s in items if s.strip()]
    unknown = sorted(set(names) - set(ALL_SCOPES))
    if unknown:
        raise InvalidRequest(
            f"unknown scope(s) {', '.join(unknown)}; known: {', '.join(ALL_SCOPES)}",
            details={"unknown": unknown},
        )
    if not names:
        raise InvalidRequest(f"give at least one scope ({', '.join(ALL_SCOPES)})")
    return [s for s in ALL_SCOPES if s in names]


def hash_secret(secret: str) -> str:
    """The stored digest of a key's secret (hex SHA-256)."""
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def generate_key() -> tuple[str, str, str]:
    """A new key: ``(plaintext key, key id, digest to store)``.

    The plaintext is shown to the user once and never stored.
    """
    key_id = secrets.token_hex(6)
    secret = secrets.token_urlsafe(32)
    return f"{_PREFIX}_{key_id}_{secret}", key_id, hash_secret(secret)


def parse_key(key: str) -> tuple[str, str]:
    """Split a presented key into ``(key id, secret)``.

    Raises:
        Unauthorized: The key is not shaped like a kgsearch key.
    """
    match = _KEY.match(key.strip())
    if match is None:
        raise Unauthorized("malformed API key; keys look like kgs_<id>_<secret>")
    return match.group(1), match.group(2)


def verify_secret(secret: str, stored_hash: str) -> bool:
    """Whether ``secret`` matches the stored digest (constant-time comparison)."""
    return hmac.compare_digest(hash_secret(secret), stored_hash)


def holds(scopes: Iterable[Scope], scope: Scope) -> bool:
    """Whether ``scopes`` grant ``scope`` (``admin`` grants every one)."""
    held = set(scopes)
    return scope in held or "admin" in held


def check_scope(key: ApiKey, scope: Scope) -> None:
    """Raise unless ``key`` carries ``scope`` (or ``admin``).

    Raises:
        Forbidden: The scope is missing.
    """
    if not holds(key.scopes, scope):
        raise Forbidden(
            f"this API key lacks the {scope!r} scope; create one with "
            f"`kgsearch keys create --project {key.project} --scopes {scope}`",
            details={"required_scope": scope, "scopes": list(key.scopes)},
        )


def check_project(key: ApiKey, named: str | None) -> None:
    """Raise if a request names a project other than the key's own.

    Raises:
        Forbidden: ``named`` is set and differs from the key's project.
    """
    if named is not None and named != key.project:
        raise Forbidden(
            "this API key is bound to another project; a key can only reach its own project",
            details={"project": named},
        )


def is_loopback(host: str | None) -> bool:
    """Whether ``host`` is a loopback address (127.0.0.0/8, ::1 or ``localhost``),
    the only place the servers' keyless mode answers."""
    if host is None:
        return False
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


class KeyRecords(Protocol):
    """Where key records and secret digests are kept (the stores' key methods).

    Declared here rather than imported from :mod:`kgsearch.store.base`, which imports
    :class:`ApiKey` from this module.
    """

    def create_api_key(self, key: ApiKey, key_hash: str) -> None:
        """Store a new key record with the digest of its secret."""
        ...

    def find_api_key(self, key_id: str) -> tuple[ApiKey, str] | None:
        """The record and secret digest of a key id (revoked ones included), or None."""
        ...

    def revoke_api_key(self, key_id: str) -> bool:
        """Revoke an active key; False when no active key has this id."""
        ...


def create_api_key(
    records: KeyRecords, project: str, scopes: str | Iterable[str], *, name: str | None = None
) -> tuple[str, ApiKey]:
    """Make and store a key bound to ``project``.

    Args:
        records: Where the key is stored.
        project: The only project the key can reach.
        scopes: ``"read,write"`` or an iterable of scopes.
        name: A human label.

    Returns:
        The plaintext key (shown once, never stored) and its record.

    Raises:
        InvalidRequest: A scope is unknown or none is given.
    """
    record = ApiKey(
        id="", project=project, scopes=parse_scopes(scopes), name=name, created_at=datetime.now(UTC)
    )
    key, key_id, digest = generate_key()
    record = record.model_copy(update={"id": key_id})
    records.create_api_key(record, digest)
    return key, record


def authenticate(records: KeyRecords, key: str) -> ApiKey:
    """Return the active key record matching a presented key.

    Raises:
        Unauthorized: The key is malformed, unknown or revoked.
    """
    key_id, secret = parse_key(key)
    found = records.find_api_key(key_id)
    if found is None or not verify_secret(secret, found[1]):
        raise Unauthorized("invalid API key")
    if not found[0].active:
        raise Unauthorized("this API key was revoked")
    return found[0]


def revoke_api_key(records: KeyRecords, key_id: str) -> None:
    """Revoke a key; later requests with it get 401 (from a running server within
    ``api.auth.KEY_FRESH_SECONDS``, the time it trusts a key it has read).

    Raises:
        NotFound: No active key has this id.
    """
    if not records.revoke_api_key(key_id):
        raise NotFound(f"no active API key {key_id!r}; see `kgsearch keys list`")
