"""Keywords from the query (LightRAG's query keywords): themes and specifics.

With ``keywords="llm"`` a search first asks the chat model for two lists: high-level
keywords (the themes the question is about: "influence", "collaboration") and
low-level keywords (the entities and specifics it names: "Ada Lovelace",
"Analytical Engine"). The relationship legs then search the high-level ones and the
object legs the low-level ones (each leg's vector embeds its keyword string, BM25
searches it); the chunk legs keep the query as it is.

The reply is parsed tolerantly (JSON inside code fences, prose around it, a string
where a list was asked for). Keyword extraction never fails a search: an error, a
timeout (the engine's guard), an unparsable reply or two empty lists all fall back
to the query as it is, and the search says so (``metadata.keywords.source ==
"fallback"`` with the reason, plus a warning). Replies go through the engine's LLM
response cache, so a repeated query costs no model call (``source == "cache"``); an
unparsable reply is dropped from the cache so the next search asks again.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from kgsearch.llm.base import LLM, Forgetting, Message

__all__ = [
    "KEYWORDS_SCHEMA",
    "MAX_KEYWORDS",
    "KeywordReplyError",
    "QueryKeywords",
    "extract_keywords",
    "keyword_messages",
    "parse_keywords",
    "skipped",
]

Source = Literal["llm", "cache", "fallback", "skipped"]

MAX_KEYWORDS = 10
"""Keywords kept per list (the first ones the model gave)."""

_MAX_KEYWORD_CHARS = 100
_REPLY_TOKENS = 300

KEYWORDS_SCHEMA: dict[str, Any] = {
    "title": "Query keywords",
    "type": "object",
    "properties": {
        "high_level_keywords": {"type": "array", "items": {"type": "string"}},
        "low_level_keywords": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["high_level_keywords", "low_level_keywords"],
    "additionalProperties": False,
}

_SYSTEM = """You turn a search question into keywords for a knowledge graph search.

Give two lists:
- high_level_keywords: the broad themes, concepts or kinds of relation the question \
is about (for example "career", "scientific collaboration", "causes of failure").
- low_level_keywords: the specific entities, names, places, dates, titles and terms \
the question mentions or asks about, written as they would appear in a text.

Use the question's own language. Keep each keyword short (one to four words). Leave \
a list empty when the question has nothing for it; never invent entities the \
question does not name or clearly imply.

Answer with one JSON object and nothing else:
{"high_level_keywords": [...], "low_level_keywords": [...]}

Example question: Which films did the director of Jesse James make after 2010?
Example answer: {"high_level_keywords": ["film direction", "filmography"], \
"low_level_keywords": ["Jesse James", "director", "2010"]}"""


class KeywordReplyError(ValueError):
    """A model reply that holds no keyword object (kept internal: a search falls back)."""


@dataclass(frozen=True)
class QueryKeywords:
    """The keywords a search ran with, and where they came from.

    Attributes:
        high_level: Themes (drive the relationship legs); empty: those legs keep the query.
        low_level: Entities and specifics (drive the object legs); empty: likewise.
        source: ``llm`` (the model answered), ``cache`` (the response cache did, no
            call), ``fallback`` (the call failed, timed out or its reply was unusable:
            the query as it is) or ``skipped`` (nothing for keywords to steer: the
            request searches no objects or relationships).
        model: The chat model asked (None when none was).
        reason: Why the keywords fell back or were skipped.
        ms: Time spent getting them.
    """

    high_level: tuple[str, ...] = ()
    low_level: tuple[str, ...] = ()
    source: Source = "fallback"
    model: str | None = None
    reason: str | None = None
    ms: float = field(default=0.0, compare=False)

    @property
    def high_text(self) -> str | None:
        """The relationship legs' query text, or None to keep the query."""
        return ", ".join(self.high_level) or None

    @property
    def low_text(self) -> str | None:
        """The object legs' query text, or None to keep the query."""
        return ", ".join(self.low_level) or None

    def metadata(self) -> dict[str, Any]:
        """The search metadata's ``keywords`` entry."""
        found: dict[str, Any] = {
            "source": self.source,
            "highLevel": list(self.high_level),
            "lowLevel": list(self.low_level),
            "ms": round(self.ms, 3),
        }
        if self.model is not None:
            found["model"] = self.model
        if self.reason is not None:
            found["reason"] = self.reason
        return found

    def describe(self) -> str:
        """One line for an explained search: where the keywords came from, which legs
        search what."""
        if self.source in ("fallback", "skipped"):
            return f"{self.source}: the query as it is everywhere ({self.reason})"
        where = "the response cache" if self.source == "cache" else self.model
        low = f"object legs search {self.low_text!r}" if self.low_text else "object legs: query"
        high = (
            f"relationship legs search {self.high_text!r}"
            if self.high_text
            else "relationship legs: query"
        )
        return f"{self.source} ({where}): {low}; {high}; chunk legs: query"

    def warning(self) -> str | None:
        """The user-facing note of a fallback (None otherwise)."""
        if self.source != "fallback":
            return None
        return f"keyword extraction fell back to the query as it is: {self.reason}"


def skipped(reason: str) -> QueryKeywords:
    """Keywords that were not asked for (nothing to steer)."""
    return QueryKeywords(source="skipped", reason=reason)


def keyword_messages(query: str) -> list[Message]:
    """The chat messages asking for the keywords of ``query``."""
    return [Message("system", _SYSTEM), Message("user", f"Question: {query}")]


_FENCE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.DOTALL)


def parse_keywords(reply: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The (high-level, low-level) keywords of a model reply.

    Accepts the JSON object bare, inside a code fence, or with prose before or after
    it; ``high_level``/``low_level`` as key names too; a comma-separated string for a
    list. Keywords are trimmed, blank ones dropped, repeats (ignoring case) dropped,
    at most :data:`MAX_KEYWORDS` per list and 100 characters each.

    Raises:
        KeywordReplyError: No JSON object with either list is in the reply.
    """
    for candidate in _candidates(reply):
        found = _keyword_object(candidate)
        if found is not None:
            return found
    shown = " ".join(reply.split())[:120]
    raise KeywordReplyError(f"no keyword JSON in the model's reply ({shown!r})")


def _candidates(reply: str) -> list[str]:
    """Texts that may hold the object: each fenced block, then the whole reply."""
    return [m.group(1) for m in _FENCE.finditer(reply)] + [reply]


def _keyword_object(text: str) -> tuple[tuple[str, ...], tuple[str, ...]] | None:
    """The keyword lists of the first JSON object in ``text`` that has one."""
    decoder = json.JSONDecoder()
    start = text.find("{")
    while start != -1:
        try:
            value, _ = decoder.raw_decode(text, start)
        except json.JSONDecodeError:
            value = None
        if isinstance(value, dict):
            high = _first(value, "high_level_keywords", "high_level")
            low = _first(value, "low_level_keywords", "low_level")
            if high is not None or low is not None:
                return _clean(high), _clean(low)
        start = text.find("{", start + 1)
    return None


def _first(value: dict[str, Any], *names: str) -> Any:
    return next((value[n] for n in names if n in value), None)


def _clean(value: Any) -> tuple[str, ...]:
    items = value.split(",") if isinstance(value, str) else value
    if not isinstance(items, list):
        return ()
    seen: set[str] = set()
    kept: list[str] = []
    for item in items:
        if not isinstance(item, str | int | float) or isinstance(item, bool):
            continue
        word = " ".join(str(item).split())[:_MAX_KEYWORD_CHARS].rstrip()
        if word and word.casefold() not in seen:
            seen.add(word.casefold())
            kept.append(word)
    return tuple(kept[:MAX_KEYWORDS])


def extract_keywords(llm: LLM | Callable[[], LLM], query: str) -> QueryKeywords:
    """Ask the chat model for the query's keywords; fall back to the query on trouble.

    Args:
        llm: The chat model (the engine's: guarded by a deadline, behind the response
            cache), or a function that makes it (a missing key then falls back too).
        query: The search query.

    Returns:
        The keywords, with their source; never raises for the model's trouble.
    """
    started = time.perf_counter()
    model: str | None = None
    messages = keyword_messages(query)
    options: dict[str, Any] = {
        "json_schema": KEYWORDS_SCHEMA,
        "temperature": 0.0,
        "max_tokens": _REPLY_TOKENS,
    }
    try:
        chat = llm if isinstance(llm, LLM) else llm()
        model = chat.model_id
        completion = chat.complete(messages, **options)
    except Exception as exc:  # an LLM outage or a bad setup degrades search, never fails it
        return _fallback(f"{_named(exc)}", model, started)
    try:
        high, low = parse_keywords(completion.text)
    except KeywordReplyError as exc:
        if isinstance(chat, Forgetting):  # the next search asks again
            chat.forget(messages, **options)
        return _fallback(str(exc), model, started)
    if not (high or low):
        return _fallback("the model gave no keywords", model, started)
    return QueryKeywords(
        high_level=high,
        low_level=low,
        source="cache" if completion.cached else "llm",
        model=model,
        ms=(time.perf_counter() - started) * 1000,
    )


def _named(exc: Exception) -> str:
    """The error's code and message, without the provider's URL or reply: the reason
    reaches API clients (``metadata.keywords.reason``)."""
    code = getattr(exc, "code", None)
    message = getattr(exc, "message", None) or str(exc) or type(exc).__name__
    details = getattr(exc, "details", None) or {}
    for key, shown in (("body", "(reply withheld)"), ("url", "the model's URL")):
        if details.get(key):
            message = message.replace(str(details[key]), shown)
    return f"{code or type(exc).__name__}: {message}"


def _fallback(reason: str, model: str | None, started: float) -> QueryKeywords:
    return QueryKeywords(
        source="fallback", model=model, reason=reason, ms=(time.perf_counter() - started) * 1000
    )
