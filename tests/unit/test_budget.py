"""LLM budgets (kgsearch.lifecycle.budget) over a real SQLite store, with a clock the
tests move: windows, limits, what a metered call adds, and what it does not."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest

from kgsearch import connect
from kgsearch.errors import BudgetExceeded
from kgsearch.http import CallGuard
from kgsearch.lifecycle.budget import Budget, BudgetLimits, Limits, extractor_spends
from kgsearch.llm import CachedLLM, DictCache, FakeLLM, Message
from kgsearch.llm.guard import GuardedLLM
from kgsearch.llm.meter import Meter, in_context, metered
from kgsearch.store.base import Store

DAY = 86_400.0
NOON = 20_000 * DAY + DAY / 2  # a UTC noon, on a minute boundary
MESSAGES = [Message("user", "hello")]


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def store() -> Iterator[Store]:
    store = connect(":memory:")
    yield store
    store.close()


@pytest.fixture
def guard() -> Iterator[CallGuard]:
    guard = CallGuard("the LLM", deadline=5.0)
    yield guard
    guard.close()


NO_LIMITS = Limits()


def budget(
    store: Store, clock: Clock, *, key: Limits = NO_LIMITS, project: Limits = NO_LIMITS
) -> Budget:
    return Budget(store, BudgetLimits(key=key, project=project), clock=clock)


def test_the_minute_limit_resets_at_the_next_minute(store: Store) -> None:
    clock = Clock(NOON + 45)
    spend = budget(store, clock, key=Limits(requests_per_minute=1))
    spend.admit("p", "k")

    with pytest.raises(BudgetExceeded) as caught:
        spend.admit("p", "k")
    clock.now = NOON + 60
    spend.admit("p", "k")

    assert caught.value.details["retry_after"] == 16
    assert caught.value.status == 429


def test_the_daily_token_limit_holds_until_utc_midnight(store: Store, guard: CallGuard) -> None:
    clock = Clock(NOON)
    spend = budget(store, clock, key=Limits(tokens_per_day=100))
    llm = GuardedLLM(FakeLLM(default="x" * 400), guard)  # about 100 completion tokens
    spend.spend("p", "k", lambda: llm.complete(MESSAGES))

    clock.now = NOON + 3 * 3600  # later the same day
    with pytest.raises(BudgetExceeded) as caught:
        spend.admit("p", "k")
    clock.now = NOON + DAY / 2  # the next UTC day
    spend.admit("p", "k")

    assert caught.value.details["limit"] == "key_tokens_per_day"
    assert caught.value.details["retry_after"] == int(DAY / 2 - 3 * 3600) + 1


def test_cost_is_counted_where_the_price_is_known(store: Store, guard: CallGuard) -> None:
    clock = Clock(NOON)
    spend = budget(store, clock, project=Limits(cost_per_day_usd=0.001))
    priced = GuardedLLM(FakeLLM(default="four", price_per_million=1000.0), guard)
    spend.spend("p", None, lambda: priced.complete(MESSAGES))

    [row] = store.llm_usage(0)
    with pytest.raises(BudgetExceeded) as caught:
        spend.admit("p", "another-key")

    assert row.cost_usd == pytest.approx(row.tokens * 1000.0 / 1e6)
    assert caught.value.details["limit"] == "project_cost_per_day_usd"


def test_cached_replies_cost_nothing(store: Store, guard: CallGuard) -> None:
    spend = budget(store, Clock(NOON))
    llm = CachedLLM(GuardedLLM(FakeLLM(default="same"), guard), DictCache())
    for _ in range(3):
        spend.spend("p", "k", lambda: llm.complete(MESSAGES))

    [row] = store.llm_usage(0)
    assert row.requests == 3
    assert row.tokens == FakeLLM(default="same").complete(MESSAGES).usage.total_tokens


def test_a_refused_request_is_not_counted(store: Store) -> None:
    spend = budget(store, Clock(NOON), project=Limits(requests_per_minute=1))
    spend.admit("p", "k1")
    with pytest.raises(BudgetExceeded):
        spend.spend("p", "k2", lambda: pytest.fail("refused work must not run"))

    assert [(r.key_id, r.requests) for r in store.llm_usage(0)] == [("k1", 1)]


def test_calls_in_a_thread_pool_charge_the_callers_meter(guard: CallGuard) -> None:
    llm = GuardedLLM(FakeLLM(default="hi"), guard)
    meter = Meter()

    def ask(_: int) -> object:
        return llm.complete(MESSAGES)

    with metered(meter), ThreadPoolExecutor(2) as pool:
        list(pool.map(in_context(ask), range(4)))
    outside = Meter()
    with metered(outside), ThreadPoolExecutor(2) as pool:  # without in_context: lost
        list(pool.map(lambda _: llm.complete(MESSAGES), range(2)))

    assert (meter.calls, outside.calls) == (4, 0)


def test_old_minutes_are_pruned_once_a_day(store: Store) -> None:
    store.add_llm_usage("p", "k", int(NOON // 60) - 3 * 1440, requests=5)
    budget(store, Clock(NOON)).admit("p", "k")

    assert [r.requests for r in store.llm_usage(0)] == [1]


@pytest.mark.parametrize(
    ("name", "spends"), [("llm", True), ("spacy", False), ("none", False), ("bogus", False)]
)
def test_which_extractors_spend(name: str, spends: bool) -> None:
    assert extractor_spends(name) is spends
