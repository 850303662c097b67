"""check_json: its quick pass lets good values through and every bad one reaches the
error that names the place of the problem."""

from __future__ import annotations

import math
from typing import Any

import pytest

from kgsearch.json_limits import MAX_JSON_CHARS, MAX_JSON_DEPTH, check_json


def nested(depth: int, leaf: Any = 1) -> Any:
    value: Any = leaf
    for i in range(depth):
        value = {"k": value} if i % 2 else [value]
    return value


def test_a_large_good_value_passes_unchanged() -> None:
    value = {"_chunks": {f"c{i}": [{"name": "x", "n": 1.5, "ok": True}] for i in range(500)}}
    assert check_json(value, "properties") is value
    assert check_json({"a": nested(MAX_JSON_DEPTH - 1)}, "properties")


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ({"a": nested(MAX_JSON_DEPTH)}, "nests deeper than"),
        ({"a": [{"b": [1, math.inf]}]}, r"properties\.a\[0\]\.b\[1\] is inf"),
        ({"a": math.nan}, r"properties\.a is nan"),
        ({"k" * (MAX_JSON_CHARS // 2): "v" * (MAX_JSON_CHARS // 2 + 1)}, "larger than"),
        ({"a": ["x" * MAX_JSON_CHARS, "y"]}, "larger than"),
    ],
)
def test_bad_values_are_refused_with_their_place(value: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        check_json(value, "properties")
