"""The ``graph:mentioned`` leg: the objects the first round's best chunks mention (the
worked example of a leg added as one module plus its registration)."""

from __future__ import annotations

from typing import Any

from kgsearch.engine import Engine
from kgsearch.model import ChunkIn, MentionIn, ObjectIn, SourceIn
from kgsearch.search.mentioned import LEG


def seed(engine: Engine) -> dict[str, str]:
    made = engine.add_objects(
        [
            ObjectIn(type="Machine", key="ae", properties={"name": "Analytical Engine"}),
            ObjectIn(type="Machine", key="de", properties={"name": "Difference Engine"}),
            ObjectIn(type="Person", key="ada", properties={"name": "Ada Lovelace"}),
        ]
    )
    engine.add_sources([SourceIn(id="s1", title="Notes")])
    engine.add_chunks(
        [
            ChunkIn(id="c1", text="It computed Bernoulli numbers in 1843.", source_id="s1"),
            ChunkIn(id="c2", text="A loom wove patterns from punched cards.", source_id="s1"),
        ]
    )
    ids = {o.key: o.id for o in made}
    engine.add_mentions(
        [
            MentionIn(chunk_id="c1", object=ids["ae"]),
            MentionIn(chunk_id="c1", object=ids["ada"]),
            MentionIn(chunk_id="c2", object=ids["de"]),
        ]
    )
    engine.embed_pending()
    return ids


def legs_of(engine: Engine, query: str, **options: Any) -> dict[str, set[str]]:
    response = engine.search(query, **options)
    return {r.id: {h.leg for h in r.found_by} for r in response.results}


def test_the_leg_does_not_run_unless_weighed(engine: Engine) -> None:
    seed(engine)
    found = legs_of(engine, "Bernoulli numbers")
    assert [i for i, legs in found.items() if LEG in legs] == []


def test_weighed_it_finds_the_objects_the_best_chunk_mentions(engine: Engine) -> None:
    ids = seed(engine)
    explained = engine.explain("Bernoulli numbers", weights={LEG: 1.0})
    ranked = [hit.key for hit in explained.legs[LEG]]
    # c1, the one chunk the first round found, mentions both (a tie at its score)
    assert ranked == sorted(f"object:{ids[k]}" for k in ("ada", "ae"))
    found = legs_of(engine, "Bernoulli numbers", weights={LEG: 1.0})
    assert LEG in found[ids["ae"]]


def test_the_object_filters_apply_inside_the_leg(engine: Engine) -> None:
    ids = seed(engine)
    explained = engine.explain(
        "Bernoulli numbers", weights={LEG: 1.0}, filters={"object_types": ["Person"]}
    )
    assert [hit.key for hit in explained.legs[LEG]] == [f"object:{ids['ada']}"]


def test_a_text_only_search_does_not_run_it(engine: Engine) -> None:
    seed(engine)
    explained = engine.explain("Bernoulli numbers", weights={LEG: 1.0}, result_types="text")
    assert LEG not in explained.legs
