"""The LLM usage ledger (additions per (project, key, minute), sums over ranges) and a
key's own LLM limits."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from kgsearch.keys import ApiKey, KeyLimits
from kgsearch.store.base import Store, UsageTotals


def test_usage_adds_up_per_project_and_key(store: Store) -> None:
    store.add_llm_usage("alpha", "k1", 100, requests=1)
    store.add_llm_usage("alpha", "k1", 100, prompt_tokens=30, completion_tokens=5, cost_usd=0.25)
    store.add_llm_usage("alpha", "k1", 101, requests=1, prompt_tokens=10)
    store.add_llm_usage("alpha", "", 101, requests=2)
    store.add_llm_usage("beta", "k2", 101, requests=1, completion_tokens=7)

    assert store.llm_usage(100) == [
        UsageTotals("alpha", "", 2, 0, 0, 0.0),
        UsageTotals("alpha", "k1", 2, 40, 5, 0.25),
        UsageTotals("beta", "k2", 1, 0, 7, 0.0),
    ]


def test_usage_sums_only_the_minutes_from_the_start(store: Store) -> None:
    store.add_llm_usage("alpha", "k1", 100, requests=1, prompt_tokens=50)
    store.add_llm_usage("alpha", "k1", 160, requests=3, prompt_tokens=7)

    assert store.llm_usage(101) == [UsageTotals("alpha", "k1", 3, 7, 0, 0.0)]
    assert store.llm_usage(161) == []


def test_usage_of_one_project_or_key_never_shows_another(store: Store) -> None:
    store.add_llm_usage("alpha", "k1", 5, requests=1)
    store.add_llm_usage("beta", "k1", 5, requests=4)
    store.add_llm_usage("beta", "k2", 5, requests=2)

    assert [u.requests for u in store.llm_usage(0, project="alpha")] == [1]
    assert [(u.project, u.requests) for u in store.llm_usage(0, key_id="k1")] == [
        ("alpha", 1),
        ("beta", 4),
    ]
    assert store.llm_usage(0, project="beta", key_id="k2") == [
        UsageTotals("beta", "k2", 2, 0, 0, 0.0)
    ]


def test_pruning_deletes_only_older_minutes(store: Store) -> None:
    store.add_llm_usage("alpha", "k1", 10, requests=1)
    store.add_llm_usage("alpha", "k1", 20, requests=2)

    assert store.prune_llm_usage(20) == 1
    assert store.llm_usage(0) == [UsageTotals("alpha", "k1", 2, 0, 0, 0.0)]


@pytest.mark.parametrize("minute", [0, 29_000_000, 2**40])
def test_usage_keeps_any_minute_and_large_token_counts(store: Store, minute: int) -> None:
    store.add_llm_usage("alpha", "k", minute, prompt_tokens=3_000_000_000)
    store.add_llm_usage("alpha", "k", minute, prompt_tokens=3_000_000_000)

    assert store.llm_usage(minute)[0].prompt_tokens == 6_000_000_000


def test_a_keys_own_limits_are_kept_and_cleared(store: Store) -> None:
    made = ApiKey(id="abc123def456", project="alpha", created_at=datetime(2026, 1, 1, tzinfo=UTC))
    store.create_api_key(made, "digest")
    limits = KeyLimits(requests_per_minute=60, cost_per_day_usd=2.5)

    assert store.set_api_key_limits("abc123def456", limits)
    kept = store.find_api_key("abc123def456")
    assert store.set_api_key_limits("abc123def456", None)
    cleared = store.find_api_key("abc123def456")

    assert kept is not None and kept[0].llm_limits == limits
    assert cleared is not None and cleared[0].llm_limits is None
    assert not store.set_api_key_limits("no-such-key", limits)
