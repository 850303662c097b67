"""Fixtures of the unit tests."""

from __future__ import annotations

import pytest

from kgsearch.store.ann import Int8Scan
from kgsearch.store.sqlite import vectors as vector_cache


@pytest.fixture
def small_kernels(monkeypatch: pytest.MonkeyPatch) -> None:
    """SQLite's vector cache makes an int8 scan from 10 rows, and a scan its 4-bit kernel
    from 50 (their defaults: thousands), so a test's few rows get both."""
    monkeypatch.setattr(vector_cache, "INT8_MIN_ROWS", 10)
    defaults = Int8Scan.__init__.__kwdefaults__
    assert defaults is not None
    monkeypatch.setitem(defaults, "kernel_min_rows", 50)
