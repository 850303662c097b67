"""Answer repeated LLM requests without calling the model: a response cache and cassettes.

:class:`CachedLLM` wraps any :class:`~kgsearch.llm.base.LLM` and keeps each reply in a
:class:`ResponseCache` under :func:`request_key`, the sha256 of the request (model,
messages, schema, temperature, max_tokens). The stores implement ``ResponseCache``
(``cache_get``/``cache_put`` on JSON text), so a reply paid for once is reused by every
later run on the same store; :class:`DictCache` is the in-memory one.

Replies are kept per project: the engine runs every call that may ask a model inside
:func:`cache_scope` for its project, and :class:`CachedLLM` files the reply under
``llm/<project>``. One tenant's cache hit (and its cost of 0) never tells it what
another tenant ingested or asked. Each reply an extraction uses notes the chunks that
used it (:mod:`kgsearch.llm.replies`), so deleting a document deletes the replies
only it used.

:class:`RecordingLLM` appends every call and its reply to a JSON-lines file and
:class:`ReplayLLM` answers from such a file, so a run can be recorded against a real
model once (``--record FILE``) and replayed offline, exactly, afterwards
(``--replay FILE``).
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from kgsearch.errors import ConfigError, ProviderError
from kgsearch.llm.base import LLM, Completion, Forgetting, Message, Usage, complete_streaming
from kgsearch.llm.replies import REPLIES, chunks_in, note_chunks

__all__ = [
    "CachedLLM",
    "DictCache",
    "RecordingLLM",
    "ReplayLLM",
    "ResponseCache",
    "cache_scope",
    "request_key",
]


_SCOPE: ContextVar[str | None] = ContextVar("kgsearch_llm_cache_scope", default=None)


@contextmanager
def cache_scope(project: str) -> Iterator[None]:
    """File the cached replies of the calls made inside under ``project``: a reply is
    reused only by the project that paid for it. Threads started inside need the
    context copied (``contextvars.copy_context().run``)."""
    token = _SCOPE.set(project)
    try:
        yield
    finally:
        _SCOPE.reset(token)


@runtime_checkable
class ResponseCache(Protocol):
    """A namespaced key → JSON text store (the stores' ``Cache`` capability)."""

    def cache_get(self, namespace: str, key: str) -> str | None:
        """The cached value, or None."""
        ...

    def cache_put(self, namespace: str, key: str, value: str) -> None:
        """Store a value, replacing any under the same key."""
        ...


class DictCache:
    """An in-memory, thread-safe :class:`ResponseCache` (tests, runs without a store)."""

    def __init__(self) -> None:
        self._values: dict[tuple[str, str], str] = {}
        self._lock = threading.Lock()

    def cache_get(self, namespace: str, key: str) -> str | None:
        """The cached value, or None."""
        with self._lock:
            return self._values.get((namespace, key))

    def cache_put(self, namespace: str, key: str, value: str) -> None:
        """Store a value, replacing any under the same key."""
        with self._lock:
            self._values[(namespace, key)] = value

    def __len__(self) -> int:
        with self._lock:
            return len(self._values)


def request_key(
    model_id: str,
    messages: Sequence[Message],
    *,
    json_schema: Mapping[str, Any] | None = None,
    temperature: float = 0.0,
    max_tokens: int | None = None,
) -> str:
    """The sha256 (hex) of a request's canonical JSON: what makes two requests the same.

    Args:
        model_id: ``provider:model``.
        messages: The conversation.
        json_schema: The requested schema, if any (key order does not matter).
        temperature: Sampling temperature.
        max_tokens: Cap on the reply's tokens.
    """
    canonical = json.dumps(
        {
            "model": model_id,
            "messages": [[m.role, m.content] for m in messages],
            "json_schema": json_schema,
            "temperature": temperature,
            "max_tokens": max_tokens,
        },
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
        default=_plain,
    )
    # surrogatepass: a lone surrogate (a reply in a gleaning history) still has a key
    return hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()


def _plain(value: object) -> object:
    """JSON for a schema given as a read-only mapping rather than a dict."""
    if isinstance(value, Mapping):
        return dict(value)
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


_SURROGATE = re.compile("[\ud800-\udfff]")


def _json_text(value: object) -> str:
    """``value`` as JSON that any store or UTF-8 file takes: a lone surrogate (half an
    escaped emoji, which models emit) is written as its ``\\uXXXX`` escape."""
    text = json.dumps(value, ensure_ascii=False, default=_plain)
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def _reply_record(completion: Completion) -> dict[str, Any]:
    return {
        "reply": completion.text,
        "usage": {
            "prompt_tokens": completion.usage.prompt_tokens,
            "completion_tokens": completion.usage.completion_tokens,
        },
        "finish_reason": completion.finish_reason,
        "model": completion.model,
    }


def _cached_completion(record: Mapping[str, Any]) -> Completion:
    """The Completion a stored reply record stands for, marked cached."""
    usage = record.get("usage") or {}
    return Completion(
        text=record["reply"],
        usage=Usage(int(usage.get("prompt_tokens", 0)), int(usage.get("completion_tokens", 0))),
        model=str(record.get("model", "")),
        cached=True,
        finish_reason=record.get("finish_reason"),
    )


class CachedLLM:
    """An :class:`~kgsearch.llm.base.LLM` that answers repeated requests from a cache.

    Args:
        llm: The model asked on a miss.
        cache: Where replies are kept (a store, or :class:`DictCache`).
        namespace: The cache namespace, so LLM replies do not collide with other
            cached values; inside :func:`cache_scope`, ``<namespace>/<project>``.

    A hit returns the stored text, usage and finish reason with ``cached=True``; its
    usage is what the original call took, so cost accounting should skip cached
    replies. Two threads missing on the same request both call the model (the
    second write wins); nothing is locked around the model call.
    """

    def __init__(self, llm: LLM, cache: ResponseCache, *, namespace: str = REPLIES) -> None:
        self._llm = llm
        self._cache = cache
        self._namespace = namespace

    @property
    def model_id(self) -> str:
        """The wrapped model's id (the cache is transparent)."""
        return self._llm.model_id

    def complete(
        self,
        messages: Sequence[Message],
        *,
        json_schema: Mapping[str, Any] | None = None,
        temperature: float = 0.0,
        max_tokens: int | None = None,
    ) -> Completion:
        """The cached reply to this exact request, or the model's (then cached)."""
        key = request_key(
            self.model_id,
            messages,
            json_schema=json_schema,
            temperature=temperature,
            max_tokens=max_tokens,
        )
        hit = self._hit(key, messages)
        if hit is not None:
            return hit
        completion = self._llm.complete(
            messages, json_schema=json_schema, temperature=temperature, max_tokens=max_tokens
        )
        self._put(key, completion, messages)
        return completion

    def _put(self, key: str, completion: Completion, messages: Sequence[Message]) -> None:
        """Cache ``completion`` with the chunks its request carries, and index it."""
        record = _reply_record(completion)
        chunks = chunks_in(messages)
        if chunks:
            record["chunks"] = chunks
        self._cache.cache_put(self._space(), key, _json_text(record))
        note_chunks(self._cache, self._space(), key, chunks)

    def _space(self) -> str:
        """The namespace of the current project (:func:`cache_scope`)."""
        scope = _SCOPE.get()
        return self._namespace if scope is None else f"{self._namespace}/{scope}"

    def complete_streaming(
        self,
        messages: Sequence[Message],
        *,
        on_text: Callable[[str], None],
        temperature: float = 0.0,
        max_tokens: int | None = None,
    ) -> Completion:
        """The cached reply handed to ``on_text`` whole, or the model's streamed (then
        cached under the same key as :meth:`complete`)."""
        key = request_key(self.model_id, messages, temperature=temperature, max_tokens=max_tokens)
        hit = self._hit(key, messages)
        if hit is not None:
            on_text(hit.text)
            return hit
        completion = complete_streaming(
            self._llm, messages, on_text=on_text, temperature=temperature, max_tokens=max_tokens
        )
        self._put(key, completion, messages)
        return completion

    def _hit(self, key: str, messages: Sequence[Message]) -> Completion | None:
        stored = self._cache.cache_get(self._space(), key)
        if stored is not None:
            try:
                hit = _cached_completion(json.loads(stored))
            except (ValueError, KeyError, TypeError):
                return None  # an unreadable entry is a miss; the fresh reply replaces it
            # another chunk with the same text (another document's) uses it too
            note_chunks(self._cache, self._space(), key, chunks_in(messages))
            return hit
        return None

    def estimate_cost(self, usage: Usage) -> float | None:
        """The wrapped model's estimate."""
        return self._llm.estimate_cost(usage)

    def forget(
        self,
        messages: Sequence[Message],
        *,
        json_schema: Mapping[str, Any] | None = None,
        temperature: float = 0.0,
        max_tokens: int | None = None,
    ) -> None:
        """Drop the cached reply to this request (a reply its caller could not use),
        so the next identical request asks the model again."""
        key = request_key(
            self.model_id,
            messages,
            json_schema=json_schema,
            temperature=temperature,
            max_tokens=max_tokens,
        )
        self._cache.cache_put(self._space(), key, "")  # unreadable entries are misses


class RecordingLLM:
    """An :class:`~kgsearch.llm.base.LLM` that appends every call to a JSON-lines file.

    Each line is ``{"key", "model", "messages", "options", "reply", "usage",
    "finish_reason"}``, where ``key`` is :func:`request_key` and ``options`` holds
    ``json_schema``, ``temperature`` and ``max_tokens``. :class:`ReplayLLM` reads it
    back. Failed calls are not recorded.

    Args:
        llm: The model that answers.
        path: The file to append to (created if missing).
    """

    def __init__(self, llm: LLM, path: str | Path) -> None:
        self._llm = llm
        self._path = Path(path)
        self._lock = threading.Lock()

    @property
    def model_id(self) -> str:
        """The wrapped model's id."""
        return self._llm.model_id

    def complete(
        self,
        messages: Sequence[Message],
        *,
        json_schema: Mapping[str, Any] | None = None,
        temperature: float = 0.0,
        max_tokens: int | None = None,
    ) -> Completion:
        """The wrapped model's reply, appended to the file first."""
        completion = self._llm.complete(
            messages, json_schema=json_schema, temperature=temperature, max_tokens=max_tokens
        )
        self._record(messages, completion, json_schema, temperature, max_tokens)
        return completion

    def complete_streaming(
        self,
        messages: Sequence[Message],
        *,
        on_text: Callable[[str], None],
        temperature: float = 0.0,
        max_tokens: int | None = None,
    ) -> Completion:
        """The wrapped model's reply, streamed to ``on_text``, then appended to the file
        (as :meth:`complete` records it, so a replay answers it)."""
        completion = complete_streaming(
            self._llm, messages, on_text=on_text, temperature=temperature, max_tokens=max_tokens
        )
        self._record(messages, completion, None, temperature, max_tokens)
        return completion

    def _record(
        self,
        messages: Sequence[Message],
        completion: Completion,
        json_schema: Mapping[str, Any] | None,
        temperature: float,
        max_tokens: int | None,
    ) -> None:
        key = request_key(
            self.model_id,
            messages,
            json_schema=json_schema,
            temperature=temperature,
            max_tokens=max_tokens,
        )
        reply = {k: v for k, v in _reply_record(completion).items() if k != "model"}
        line = {
            "key": key,
            "model": self.model_id,
            "messages": [{"role": m.role, "content": m.content} for m in messages],
            "options": {
                "json_schema": json_schema,
                "temperature": temperature,
                "max_tokens": max_tokens,
            },
            **reply,
        }
        encoded = _json_text(line) + "\n"
        with self._lock, self._path.open("a", encoding="utf-8") as out:
            out.write(encoded)

    def estimate_cost(self, usage: Usage) -> float | None:
        """The wrapped model's estimate."""
        return self._llm.estimate_cost(usage)

    def forget(
        self,
        messages: Sequence[Message],
        *,
        json_schema: Mapping[str, Any] | None = None,
        temperature: float = 0.0,
        max_tokens: int | None = None,
    ) -> None:
        """Passed on to the wrapped model when it keeps a cache."""
        if isinstance(self._llm, Forgetting):
            self._llm.forget(
                messages, json_schema=json_schema, temperature=temperature, max_tokens=max_tokens
            )


class ReplayLLM:
    """An :class:`~kgsearch.llm.base.LLM` that answers from a :class:`RecordingLLM` file.

    Args:
        path: The JSON-lines recording.
        model_id: The model id requests are keyed with (default: the first
            record's model). A request recorded with another model never matches.

    Raises:
        ConfigError: The file is missing, has a line that is not a record, or is
            empty and no ``model_id`` is given.

    Replies come back with ``cached=True``: no model was called. When a request was
    recorded more than once, the last reply wins.
    """

    def __init__(self, path: str | Path, *, model_id: str | None = None) -> None:
        self._path = Path(path)
        self._replies = _read_recording(self._path)
        if model_id is None:
            if not self._replies:
                raise ConfigError(
                    f"{self._path} holds no recorded replies; pass model_id=... to replay it.",
                    details={"path": str(self._path)},
                )
            model_id = str(next(iter(self._replies.values()))["model"])
        self._model_id = model_id

    @property
    def model_id(self) -> str:
        """The model the recording is replayed as."""
        return self._model_id

    def complete(
        self,
        messages: Sequence[Message],
        *,
        json_schema: Mapping[str, Any] | None = None,
        temperature: float = 0.0,
        max_tokens: int | None = None,
    ) -> Completion:
        """The recorded reply to this exact request.

        Raises:
            ProviderError: The request is not in the recording.
        """
        key = request_key(
            self._model_id,
            messages,
            json_schema=json_schema,
            temperature=temperature,
            max_tokens=max_tokens,
        )
        record = self._replies.get(key)
        if record is None:
            raise ProviderError(
                f"no recorded reply for this request (key {key}) in {self._path}; "
                "record it again with --record.",
                details={"key": key, "path": str(self._path), "model_id": self._model_id},
            )
        return _cached_completion(record)

    def estimate_cost(self, usage: Usage) -> float | None:
        """None: a replayed reply costs nothing and has no price."""
        return None


def _read_recording(path: Path) -> dict[str, dict[str, Any]]:
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise ConfigError(
            f"Cannot read the LLM recording {path}: {exc}", details={"path": str(path)}
        ) from exc
    replies: dict[str, dict[str, Any]] = {}
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
            if not isinstance(record["key"], str) or not isinstance(record["reply"], str):
                raise TypeError("key and reply must be strings")
        except (ValueError, KeyError, TypeError) as exc:
            raise ConfigError(
                f"{path} line {number} is not a recorded LLM reply: {exc!r}",
                details={"path": str(path), "line": number},
            ) from exc
        replies[record["key"]] = record
    return replies
