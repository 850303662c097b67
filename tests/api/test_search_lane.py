"""The search lane's threads take queued searches without the event loop in between.

Under load every search thread is busy and searches queue; a thread that ends one
takes the next at once (:class:`kgsearch.api.lanes.SearchLane`). On anyio's pool the
next search only started once the event loop had taken the last one's result and
handed its token on: two thread wake-ups more a search. Here the event loop is held
still while two searches are queued on a one-thread lane: both must run.
"""

from __future__ import annotations

import asyncio
import threading
import time
from types import SimpleNamespace
from typing import Any

from kgsearch.api.lanes import Lanes, on_lane

WAIT = 5.0


def request_on(lanes: Lanes) -> Any:
    """A stand-in for a request: what :func:`on_lane` reads of it."""
    engine = SimpleNamespace(query_guard=SimpleNamespace(deadline=30.0))
    return SimpleNamespace(app=SimpleNamespace(state=SimpleNamespace(lanes=lanes, engine=engine)))


def test_a_search_thread_takes_the_next_queued_search_while_the_loop_is_busy() -> None:
    request = request_on(Lanes(search=1, llm=1))
    second_ran = threading.Event()

    def second() -> str:
        second_ran.set()
        return "second"

    async def main() -> tuple[bool, list[str]]:
        searches = [
            asyncio.ensure_future(on_lane(request, SimpleNamespace(), lambda: "first")),
            asyncio.ensure_future(on_lane(request, SimpleNamespace(), second)),
        ]
        for _ in range(20):  # both requests queue their searches
            await asyncio.sleep(0)
        ran = second_ran.wait(WAIT)  # the event loop is held still meanwhile
        return ran, list(await asyncio.gather(*searches))

    started = time.monotonic()
    ran, results = asyncio.run(main())

    assert ran, "the second search waited for the event loop to start it"
    assert results == ["first", "second"]
    assert time.monotonic() - started < WAIT
