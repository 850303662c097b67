"""A search says how many of the project's rows have no vector yet (issue 35 papercut
#17: 27 % of a project was not embedded and search gave no warning)."""

from __future__ import annotations

from kgsearch import Engine, ObjectIn
from kgsearch.search.service import CoverageCache
from kgsearch.store import connect
from kgsearch.testing import FakeEmbedder


def fruit(key: str) -> ObjectIn:
    return ObjectIn(type="Fruit", key=key, properties={"name": f"{key} apple"})


def warnings_of(engine: Engine, query: str = "apple") -> list[str]:
    return [str(w) for w in engine.search(query).metadata["warnings"]]


def test_rows_waiting_for_a_vector_are_named_in_the_search_warnings() -> None:
    with Engine(connect(":memory:"), embedder=FakeEmbedder(16)) as engine:
        engine.add_objects([fruit(f"f{i}") for i in range(5)])
        engine.embed_pending()
        assert not any("no vector" in w for w in warnings_of(engine))

        engine.add_objects([fruit("late1"), fruit("late2")])
        engine._coverage.ttl = 0  # read again now, not in five seconds

        [warning] = [w for w in warnings_of(engine) if "no vector" in w]
        assert warning.startswith("2 rows of this project have no vector yet")
        assert "kgsearch embed generate" in warning


def test_nothing_embedded_is_said_once_not_twice() -> None:
    with Engine(connect(":memory:"), embedder=FakeEmbedder(16)) as engine:
        engine.add_objects([fruit("a"), fruit("b")])

        found = warnings_of(engine)

    assert any(w.startswith("nothing is embedded yet") for w in found)
    assert not any("no vector" in w for w in found)


def test_the_count_is_read_at_most_once_per_ttl() -> None:
    reads: list[str] = []
    now = [0.0]

    def count(project: str) -> int:
        reads.append(project)
        return 3

    class Store:
        not_embedded = staticmethod(count)

    cache = CoverageCache(Store(), ttl=5.0, clock=lambda: now[0])  # type: ignore[arg-type]
    assert [cache.get("p"), cache.get("p")] == [3, 3]
    now[0] = 5.0
    cache.get("p")
    assert reads == ["p", "p"]
