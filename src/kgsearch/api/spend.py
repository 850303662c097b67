"""LLM spend on the REST API: the ``llm`` scope, the budget, and usage.

A request that calls the chat model needs the ``llm`` scope (:mod:`kgsearch.keys`)
besides its route's own, and passes the app's :class:`~kgsearch.lifecycle.budget.Budget`:
it is admitted (or refused with 429 and ``Retry-After``) on a request thread before it
queues for the LLM lane, and its model calls are metered where they run.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, TypeVar

import anyio
from fastapi import APIRouter, Depends, Request

from kgsearch.api.auth import Principal, current_engine, require
from kgsearch.engine import Engine
from kgsearch.lifecycle.budget import Budget, UsageReport

__all__ = ["admit", "maybe_charged", "router", "spends_keywords"]

T = TypeVar("T")

router = APIRouter(prefix="/api", tags=["usage"])


def spends_keywords(body: object) -> bool:
    """Whether a search body asks the chat model for its keywords."""
    return getattr(body, "keywords", "off") == "llm"


async def admit(request: Request, who: Principal) -> Budget:
    """Check the ``llm`` scope and admit one spending request of ``who`` to the app's
    budget, which is returned: run the work through :meth:`Budget.run` (``who.project``,
    ``who.key_id``) wherever it then runs, so its model calls are metered and settled.

    Raises:
        Forbidden: The key lacks the ``llm`` scope.
        BudgetExceeded: The key or the project reached a limit (429).
    """
    who.need("llm")
    budget: Budget = request.app.state.budget
    await anyio.to_thread.run_sync(budget.admit, who.project, who.key_id, who.llm_limits)
    return budget


async def maybe_charged(
    request: Request, who: Principal, spends: bool, work: Callable[[], T]
) -> Callable[[], T]:
    """``work`` as is when it ``spends`` nothing; else admitted (:func:`admit`) and
    metered wherever it runs."""
    if not spends:
        return work
    budget = await admit(request, who)
    return lambda: budget.run(who.project, who.key_id, work)


@router.get("/usage")
def usage(
    who: Annotated[Principal, Depends(require("admin"))],
    engine: Annotated[Engine, Depends(current_engine)],
) -> UsageReport:
    """LLM spend of the key's project, per key and in total: requests, tokens and US
    dollars this minute and today (UTC). Needs the ``admin`` scope."""
    return engine.llm_usage(project=who.project)
