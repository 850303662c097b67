"""The helpers in kgsearch.embed.base shared by every provider."""

from __future__ import annotations

import numpy as np
import pytest

from kgsearch.embed import batched, unit_vectors


def test_batched_yields_consecutive_slices() -> None:
    assert list(batched(["a", "b", "c", "d", "e"], 2)) == [["a", "b"], ["c", "d"], ["e"]]


def test_batched_empty_yields_nothing() -> None:
    assert list(batched([], 3)) == []


def test_batched_rejects_non_positive_size() -> None:
    with pytest.raises(ValueError, match="batch size must be positive"):
        list(batched(["a"], 0))


def test_unit_vectors_scale_rows_to_unit_length() -> None:
    vectors = unit_vectors([[3.0, 4.0], [0.0, 2.0]])
    assert ([v.dtype for v in vectors], [v.tolist() for v in vectors]) == (
        [np.dtype("float32")] * 2,
        [[pytest.approx(0.6), pytest.approx(0.8)], [0.0, 1.0]],
    )


def test_unit_vectors_leave_a_zero_row_zero() -> None:
    assert [v.tolist() for v in unit_vectors(np.zeros((1, 3)))] == [[0.0, 0.0, 0.0]]


def test_unit_vectors_reject_a_flat_array() -> None:
    with pytest.raises(ValueError, match=r"expected a 2-D array of vectors, got shape \(3,\)"):
        unit_vectors([1.0, 2.0, 3.0])
