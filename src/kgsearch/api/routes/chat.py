"""An OpenAI-compatible chat endpoint: chat clients use kgsearch as a grounded model.

``POST /v1/chat/completions`` (streamed or not) answers the conversation's last user
message with ``ask``; ``GET /v1/models`` lists the models a key can ask. Open WebUI,
LibreChat or any OpenAI SDK plug in with a kgsearch key as their API key and
``http://host:8000/v1`` as their base URL.

A model name selects the project and the recipe: ``kgsearch`` (the key's project, the
default recipe), ``kgsearch/<recipe>``, ``<project>`` or ``<project>/<recipe>``. With
a key the project must be the key's own; a keyless local server answers for any
project. The model answers for a key with the ``llm`` scope (held to the LLM budget,
as ``/api/ask``); for a key without it, or without a configured chat model, the
answer is the offline one (``ask --no-llm``), and says so. The citations of the
answer are listed under it, and in full (kind, id, text) in the response's extra
``kgsearch`` field, which OpenAI clients ignore.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import AsyncIterator, Callable
from types import SimpleNamespace
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Request
from fastapi.responses import StreamingResponse
from pydantic import BaseModel, ConfigDict, Field

from kgsearch.api.auth import Principal, current_engine, require
from kgsearch.api.lanes import on_lane, relay
from kgsearch.api.spend import admit
from kgsearch.engine import Engine
from kgsearch.errors import InvalidRequest, NotFound
from kgsearch.search.answer import Answer
from kgsearch.search.request import RECIPE_REGISTRY

__all__ = ["router"]

router = APIRouter(prefix="/v1", tags=["openai-compatible"])

EngineDep = Annotated[Engine, Depends(current_engine)]
Reader = Annotated[Principal, Depends(require("read"))]

ALIAS = "kgsearch"
"""The model name that stands for the caller's own project."""

MAX_QUESTION_CHARS = 10_000

_ASKS_THE_MODEL = SimpleNamespace(llm=True)
"""What the lanes are told of a chat request: it waits for the chat model."""


class ChatMessage(BaseModel):
    """One message of the conversation (OpenAI's shape; other fields are ignored)."""

    model_config = ConfigDict(extra="ignore")

    role: str = Field(max_length=50)
    content: str | list[dict[str, Any]] | None = None


class ChatRequest(BaseModel):
    """OpenAI's chat completion request; only what an answer uses is read."""

    model_config = ConfigDict(extra="ignore")

    model: str = Field(min_length=1, max_length=300)
    messages: list[ChatMessage] = Field(min_length=1, max_length=500)
    stream: bool = False
    max_tokens: int | None = Field(default=None, ge=1, le=100_000)
    # the token budget of the context the answer is written from
    max_completion_tokens: int | None = Field(default=None, ge=1, le=100_000)


class Model(BaseModel):
    """One entry of ``GET /v1/models``."""

    id: str
    object: Literal["model"] = "model"
    created: int = 0
    owned_by: str = "kgsearch"


class ModelList(BaseModel):
    """``GET /v1/models``."""

    object: Literal["list"] = "list"
    data: list[Model]


def _target(model: str, who: Principal) -> tuple[str, str | None]:
    """(project, recipe) a model name selects.

    Raises:
        InvalidRequest: An unknown recipe.
        Forbidden: With a key, another project than the key's.
    """
    project, _, recipe = model.partition("/")
    project = who.project if project == ALIAS else project
    if recipe and recipe not in RECIPE_REGISTRY:
        raise InvalidRequest(
            f"unknown recipe {recipe!r} in model {model!r}; GET /v1/models lists the models",
            details={"model": model, "recipes": sorted(RECIPE_REGISTRY.names())},
        )
    if who.key_id is not None:
        who.check_body(project)
    return project, recipe or None


def _question(messages: list[ChatMessage]) -> str:
    """The last user message's text (string content, or its text parts).

    Raises:
        InvalidRequest: No user message with text, or a question over 10,000 characters.
    """
    for message in reversed(messages):
        if message.role != "user":
            continue
        content = message.content
        if isinstance(content, list):
            content = " ".join(
                str(part.get("text", "")) for part in content if part.get("type") == "text"
            )
        text = (content or "").strip()
        if text:
            if len(text) > MAX_QUESTION_CHARS:
                raise InvalidRequest(
                    f"the question has {len(text)} characters; at most {MAX_QUESTION_CHARS}"
                )
            return text
    raise InvalidRequest("the conversation has no user message with text to answer")


def _no_model(exc: InvalidRequest) -> bool:
    """Whether ``ask`` refused because no chat model is configured."""
    return "provider" in exc.details and "base_url" in exc.details


def _answer(
    engine: Engine,
    question: str,
    project: str,
    recipe: str | None,
    on_text: Callable[[str], None] | None,
    *,
    spend: bool,
) -> Answer:
    """``ask`` with the configured model when the caller may ``spend``, else (or when
    no model is configured) offline."""
    options: dict[str, Any] = {"recipe": recipe} if recipe else {}
    if spend:
        try:
            return engine.ask(question, llm=True, project=project, on_text=on_text, **options)
        except InvalidRequest as exc:
            if not _no_model(exc):
                raise
    return engine.ask(question, llm=False, project=project, on_text=on_text, **options)


def _sources(answer: Answer) -> str:
    """The cited references under the answer, one line each."""
    cited = [r for r in answer.references if r.cited] or answer.references
    if not cited:
        return ""
    lines = [f"[{r.cite}] {r.text}" for r in cited]
    return "\n\nSources:\n" + "\n".join(lines)


def _extra(answer: Answer) -> dict[str, Any]:
    return {
        "references": [r.model_dump() for r in answer.references],
        "offline": answer.offline,
        "model": answer.model,
    }


def _usage(answer: Answer) -> dict[str, int]:
    prompt = answer.usage.get("prompt_tokens", 0)
    completion = answer.usage.get("completion_tokens", 0)
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }


@router.get("/models")
def models(who: Reader, engine: EngineDep) -> ModelList:
    """The models the caller can ask: its project with each recipe (a keyless local
    server lists every project's)."""
    projects = [who.project] if who.key_id is not None else engine.store.projects()
    if who.project not in projects:
        projects = [who.project, *projects]
    recipes = sorted(RECIPE_REGISTRY.names())
    names = [ALIAS, *(f"{ALIAS}/{r}" for r in recipes)]
    for project in projects:
        names += [project, *(f"{project}/{r}" for r in recipes)]
    return ModelList(data=[Model(id=n) for n in dict.fromkeys(names)])


@router.post("/chat/completions", response_model=None)
async def chat_completions(
    body: ChatRequest, who: Reader, engine: EngineDep, request: Request
) -> dict[str, Any] | StreamingResponse:
    """Answer the conversation's last user message with ``ask`` (cited, grounded in the
    project's graph), as OpenAI's chat completion or, with ``stream: true``, its
    server-sent chunks ending with ``data: [DONE]``."""
    project, recipe = _target(body.model, who)
    if project not in engine.store.projects():
        raise NotFound(f"project {project!r} holds nothing yet", details={"model": body.model})
    question = _question(body.messages)
    ident = f"chatcmpl-{uuid.uuid4().hex}"
    created = int(time.time())
    # a key without the llm scope gets the offline answer; with it, the model's, held
    # to the LLM budget like /api/ask (429 with Retry-After past a limit)
    spend = who.allows("llm")
    budget = await admit(request, who) if spend else None

    def run(on_text: Callable[[str], None] | None) -> Answer:
        def work() -> Answer:
            return _answer(engine, question, project, recipe, on_text, spend=spend)

        return work() if budget is None else budget.run(who.project, who.key_id, work)

    if body.stream:
        return StreamingResponse(
            _chunks(relay(request, run), ident, created, body.model),
            media_type="text/event-stream",
        )
    answer = await on_lane(request, _ASKS_THE_MODEL, lambda: run(None))
    return {
        "id": ident,
        "object": "chat.completion",
        "created": created,
        "model": body.model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": answer.answer + _sources(answer)},
                "finish_reason": "stop",
            }
        ],
        "usage": _usage(answer),
        "kgsearch": _extra(answer),
    }


def _chunk(ident: str, created: int, model: str, delta: dict[str, Any], **more: Any) -> str:
    body = {
        "id": ident,
        "object": "chat.completion.chunk",
        "created": created,
        "model": model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": more.pop("finish", None)}],
        **more,
    }
    return f"data: {json.dumps(body, ensure_ascii=False)}\n\n"


async def _chunks(
    events: AsyncIterator[tuple[str, Any]], ident: str, created: int, model: str
) -> AsyncIterator[str]:
    """OpenAI's stream: a role chunk, content chunks as the model writes, the sources
    and a closing chunk (with usage), then ``[DONE]``; an error ends the stream with
    an ``error`` object, as OpenAI's own streams do."""
    yield _chunk(ident, created, model, {"role": "assistant", "content": ""})
    async for event, data in events:
        if event == "text":
            yield _chunk(ident, created, model, {"content": data})
        elif event == "answer":
            answer = Answer.model_validate(data)
            sources = _sources(answer)
            if sources:
                yield _chunk(ident, created, model, {"content": sources})
            yield _chunk(
                ident,
                created,
                model,
                {},
                finish="stop",
                usage=_usage(answer),
                kgsearch=_extra(answer),
            )
        else:
            yield f"data: {json.dumps(data, ensure_ascii=False)}\n\n"
    yield "data: [DONE]\n\n"
