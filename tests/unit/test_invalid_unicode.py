"""Text that is not valid Unicode is the caller's error (400), never a crash."""

from __future__ import annotations

import pytest

from kgsearch import Engine, InvalidRequest, ObjectIn, connect
from kgsearch.testing import FakeEmbedder


@pytest.mark.parametrize(
    "item",
    [
        ObjectIn(type="Person", key="ada\ud800"),
        ObjectIn(type="Person", key="ada", properties={"bio": "\udc80" * 300}),
    ],
    ids=["key", "long-property"],
)
def test_lone_surrogate_is_an_invalid_request_and_writes_nothing(item: ObjectIn) -> None:
    engine = Engine(connect(":memory:"), embedder=FakeEmbedder(8))
    with pytest.raises(InvalidRequest, match="not valid Unicode"):
        engine.add_objects([item])
    assert engine.stats().counts["objects"] == 0
    engine.close()
