"""Store URLs as they may be shown: the password replaced, everything else kept.

A PostgreSQL URL may carry its password in the user part
(``postgresql://kg:secret@host/db``), as a ``password`` query parameter, or, as a
libpq keyword string, as ``password=secret``. Whatever prints or reports a store's
URL (``kgsearch stats``, ``config show``, error messages) shows it through
:func:`redact_url`. Standard library only, so the light CLI path can use it.
"""

from __future__ import annotations

import re
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

__all__ = ["MASK", "redact_url"]

MASK = "********"
_KEYWORD_PASSWORD = re.compile(r"(\bpassword\s*=\s*)('(?:[^'\\]|\\.)*'|\S+)", re.IGNORECASE)


def redact_url(url: str) -> str:
    """``url`` with any password in it replaced by :data:`MASK`.

    >>> redact_url("postgresql://kg:s3cret@db.example:5432/kg?sslmode=require")
    'postgresql://kg:********@db.example:5432/kg?sslmode=require'
    >>> redact_url("sqlite:///data/kgsearch.db")
    'sqlite:///data/kgsearch.db'
    """
    if "://" not in url:
        return _KEYWORD_PASSWORD.sub(lambda m: m.group(1) + MASK, url)
    try:
        parts = urlsplit(url)
        password = parts.password
    except ValueError:  # a malformed port or netloc: mask what looks like a password
        return _KEYWORD_PASSWORD.sub(lambda m: m.group(1) + MASK, url)
    pairs = parse_qsl(parts.query, keep_blank_values=True)
    in_query = any(key.lower() == "password" for key, _ in pairs)
    if password is None and not in_query:
        return url  # rebuilt, sqlite:///x would lose its empty host
    netloc = parts.netloc
    if password is not None:
        user, _, host = netloc.rpartition("@")
        name = user.partition(":")[0]
        netloc = f"{name}:{MASK}@{host}"
    query = parts.query
    if in_query:
        query = urlencode([(k, MASK if k.lower() == "password" else v) for k, v in pairs], safe="*")
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))
