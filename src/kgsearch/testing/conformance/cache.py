"""The value cache: what was put comes back, whatever its length."""

from __future__ import annotations

import pytest

from kgsearch.store.base import Store


def test_the_cache_returns_what_was_put(store: Store) -> None:
    assert store.cache_get("llm", "k1") is None
    store.cache_put("llm", "k1", '{"reply": "Grüße"}')
    assert store.cache_get("llm", "k1") == '{"reply": "Grüße"}'
    assert store.cache_get("other", "k1") is None


def test_a_cache_put_replaces_the_value(store: Store) -> None:
    store.cache_put("llm", "k1", "first")
    store.cache_put("llm", "k1", "second")
    assert store.cache_get("llm", "k1") == "second"


def test_a_cache_delete_removes_only_its_keys(store: Store) -> None:
    store.cache_put("llm", "k1", "one")
    store.cache_put("llm", "k2", "two")
    store.cache_put("other", "k1", "elsewhere")
    assert store.cache_delete("llm", ["k1", "k1", "missing"]) == 1
    assert store.cache_get("llm", "k1") is None
    assert (store.cache_get("llm", "k2"), store.cache_get("other", "k1")) == ("two", "elsewhere")


@pytest.mark.parametrize("text", ["", "x" * 100_000])
def test_the_cache_keeps_any_length_of_text(store: Store, text: str) -> None:
    store.cache_put("llm", "k", text)
    assert store.cache_get("llm", "k") == text
