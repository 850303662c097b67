"""QueryGuard: deadline, bounded threads, circuit breaker, configuration errors pass."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from kgsearch.embed.guard import EmbedderUnavailable, QueryGuard
from kgsearch.errors import DimensionMismatch

VECTOR = np.ones(4, dtype=np.float32)


class Recorder:
    """A provider that records each call."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def __call__(self, text: str) -> np.ndarray:
        self.calls.append(text)
        return VECTOR


def test_a_fast_call_passes_and_resets_the_failure_count() -> None:
    guard = QueryGuard(deadline=1.0, failures=2, cooldown=60)
    with pytest.raises(EmbedderUnavailable, match="RuntimeError: down"):
        guard.embed(lambda _t: (_ for _ in ()).throw(RuntimeError("down")), "q")
    assert guard.embed(lambda _t: VECTOR, "q") is VECTOR
    with pytest.raises(EmbedderUnavailable):  # one failure again: not yet open
        guard.embed(lambda _t: (_ for _ in ()).throw(RuntimeError("down")), "q")
    assert guard.embed(lambda _t: VECTOR, "q") is VECTOR
    guard.close()


def test_timeouts_open_the_breaker_then_it_probes_again() -> None:
    release = threading.Event()

    def hang(_text: str) -> np.ndarray:
        release.wait(5)
        return VECTOR

    guard = QueryGuard(deadline=0.05, failures=2, cooldown=0.3, workers=4)
    for _ in range(2):
        with pytest.raises(EmbedderUnavailable, match=r"longer than 0\.05 s"):
            guard.embed(hang, "q")
    provider = Recorder()
    with pytest.raises(EmbedderUnavailable, match="skipped for another"):
        guard.embed(provider, "q")
    assert provider.calls == []  # the open breaker never calls the provider
    release.set()
    time.sleep(0.35)
    assert guard.embed(lambda _t: VECTOR, "q") is VECTOR  # cooled down: probed, fine
    guard.close()


def test_when_every_thread_waits_on_the_provider_a_search_is_refused_at_once() -> None:
    release = threading.Event()
    guard = QueryGuard(deadline=0.05, failures=100, cooldown=0, workers=2)
    for _ in range(2):
        with pytest.raises(EmbedderUnavailable):
            guard.embed(lambda _t: (release.wait(5), VECTOR)[1], "q")
    provider = Recorder()
    with pytest.raises(EmbedderUnavailable, match="every thread is waiting"):
        guard.embed(provider, "q")
    assert provider.calls == []  # refused before a thread was asked
    release.set()
    guard.close()


def test_a_dimension_mismatch_is_a_configuration_error_not_an_outage() -> None:
    guard = QueryGuard(deadline=1.0, failures=1, cooldown=60)

    def wrong(_text: str) -> np.ndarray:
        raise DimensionMismatch("store has 384 dims, embedder 8")

    for _ in range(3):
        with pytest.raises(DimensionMismatch):
            guard.embed(wrong, "q")
    assert guard.embed(lambda _t: VECTOR, "q") is VECTOR  # never opened
    guard.close()
