"""bulk_load writes exactly what row-by-row writes do (every store; PostgreSQL takes a
COPY path inside it): the last of duplicate keys wins, stored ids are kept, a failure
rolls everything back."""

from __future__ import annotations

import pytest

from kgsearch.engine import Engine
from kgsearch.errors import KgsearchError
from kgsearch.model import Kind, ObjectIn, ObjectRef, RelationshipIn
from kgsearch.store.base import Store
from kgsearch.testing import FakeEmbedder


def rows(engine: Engine) -> list[tuple[str, str, str, object]]:
    return sorted(
        (o.id, o.type, o.key, o.properties) for o in engine.store.iter_rows("default", "object")
    )


def load(engine: Engine, bulk: bool) -> None:
    rules = engine.rules
    objects = [
        ObjectIn(type="Person", key=f"p{i}", properties={"name": f"P{i}", "v": 1})
        for i in range(50)
    ]
    # the same keys again, later in the same batch: these must win
    objects += [
        ObjectIn(type="Person", key=f"p{i}", properties={"name": f"P{i}", "v": 2})
        for i in range(10)
    ]
    object_rows = [rules.object_row("default", o) for o in objects]
    store = engine.store
    with store.bulk_load() if bulk else store.transaction():
        store.upsert_objects("default", object_rows, return_ids=False)
        ids = store.resolve("default", [ObjectRef(type="Person", key=f"p{i}") for i in range(50)])
        rels = [
            engine.rules.relationship_row(
                "default",
                RelationshipIn(
                    type="knows",
                    source=ObjectRef(type="Person", key=f"p{i}"),
                    target=ObjectRef(type="Person", key=f"p{i + 1}"),
                    properties={"round": n},
                ),
                ids[ObjectRef(type="Person", key=f"p{i}")],
                ids[ObjectRef(type="Person", key=f"p{i + 1}")],
            )
            for n in (1, 2)
            for i in range(49)
        ]
        store.upsert_relationships("default", rels, endpoints_checked=True)


def test_bulk_load_writes_what_row_by_row_writes(store: Store) -> None:
    engine = Engine(store, embedder=FakeEmbedder(32))
    engine.add_objects([ObjectIn(id="kept-id", type="Person", key="p3", properties={"name": "x"})])
    load(engine, bulk=True)
    objects = {o.key: o for o in store.iter_rows("default", "object")}
    assert len(objects) == 50
    assert objects["p3"].id == "kept-id"
    assert objects["p5"].properties["v"] == 2 and objects["p20"].properties["v"] == 1
    relationships = list(store.iter_rows("default", "relationship"))
    assert len(relationships) == 49
    assert {r.properties["round"] for r in relationships} == {2}
    assert store.text_search("default", Kind.OBJECT, "P7", limit=5)


def test_a_failing_bulk_load_writes_nothing(store: Store) -> None:
    engine = Engine(store, embedder=FakeEmbedder(32))
    with pytest.raises(KgsearchError), store.bulk_load():
        load(engine, bulk=False)
        raise KgsearchError("stop")
    assert store.counts("default")["objects"] == 0
