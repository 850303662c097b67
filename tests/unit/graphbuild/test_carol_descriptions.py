"""Description merging and delete-by-chunk on real model output: gpt-3.5-turbo's
GraphRAG extractions of *A Christmas Carol* (42 chunks, eval-data
christmas-carol-graphrag, run ``fork-dickens``), where the model also copies names
from the prompt's examples (Sam Rivera, Washington, Alex…) into chunks that never
mention them."""

from __future__ import annotations

from collections import Counter

import pytest
from carol_extractions import recorded

from kgsearch import Engine
from kgsearch.extract.schema import ExtractionResult
from kgsearch.lifecycle.ingest import delete_chunks
from kgsearch.model import ChunkIn, SourceIn
from kgsearch.text.descriptions import DESCRIPTION_BUDGET, merge_descriptions
from kgsearch.text.names import entity_key
from kgsearch.writes.contributions import contributions
from kgsearch.writes.extracted import ChunkExtraction, add_extractions

HALLUCINATED = ["sam rivera", "washington", "operation: dulce", "alex"]


@pytest.fixture
def built(engine: Engine) -> tuple[Engine, list[tuple[str, str, ExtractionResult]]]:
    rows = recorded()
    engine.add_sources([SourceIn(id="carol", title="A Christmas Carol")])
    engine.add_chunks([ChunkIn(id=c, text=t, source_id="carol") for c, t, _ in rows])
    add_extractions(engine._writes(None), [ChunkExtraction(c, "carol", r) for c, _, r in rows])
    return engine, rows


def scrooge_descriptions(rows: list[tuple[str, str, ExtractionResult]]) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for chunk, _, result in rows:
        for e in result.graph.entities:
            if entity_key(e.name) == "scrooge" and e.type.lower() == "person":
                found.setdefault(chunk, []).append(" ".join(e.description.split()))
    return found


def test_scrooge_keeps_each_chunks_description_and_a_merged_one_within_budget(
    built: tuple[Engine, list[tuple[str, str, ExtractionResult]]],
) -> None:
    engine, rows = built
    assert len(rows) == 42
    seen = scrooge_descriptions(rows)
    assert len(seen) >= 20  # the protagonist is described in most chunks
    scrooge = engine.get_object_by_key("person", "scrooge")
    kept = contributions(scrooge.properties)
    assert set(seen) <= set(kept)  # every describing chunk is kept with its text
    for chunk, texts in seen.items():
        assert {e["description"] for e in kept[chunk]} >= set(texts)
    description = scrooge.properties["description"]
    raw = sum(len(t) + 1 for texts in seen.values() for t in texts)
    assert raw > DESCRIPTION_BUDGET  # so the merged text had to be summarised
    assert len(description) <= DESCRIPTION_BUDGET
    lines = description.split("\n")
    assert len(lines) == len({line.casefold() for line in lines})
    words = Counter(w.strip(".,'").casefold() for w in description.split())
    assert words["scrooge"] >= 5  # the central sentences are about him


def test_names_copied_from_the_prompt_examples_never_become_objects(
    built: tuple[Engine, list[tuple[str, str, ExtractionResult]]],
) -> None:
    engine, rows = built
    rejected = Counter(r.reason for _, _, res in rows for r in res.rejected)
    assert rejected["not_in_text"] > 0
    keys = {o.key for o in engine.list_rows("object", limit=5000).items}
    assert not keys & set(HALLUCINATED)
    assert "scrooge" in keys and "marley" in keys


def test_forgetting_chunks_rebuilds_from_the_rest_without_a_model(
    built: tuple[Engine, list[tuple[str, str, ExtractionResult]]],
) -> None:
    engine, rows = built
    first_half = [c for c, _, _ in rows[:21]]
    report = delete_chunks(engine._writes(None), first_half)
    assert report.chunks == 21 and report.objects_deleted > 0 and report.objects_updated > 0
    rest = scrooge_descriptions(rows[21:])
    scrooge = engine.get_object_by_key("person", "scrooge")
    assert set(contributions(scrooge.properties)) >= set(rest)
    assert not set(contributions(scrooge.properties)) & set(first_half)
    expected = [
        e["description"]
        for c, entries in sorted(contributions(scrooge.properties).items())
        for e in entries
    ]
    assert scrooge.properties["description"] == merge_descriptions(expected)
    for o in engine.list_rows("object", limit=5000).items:
        assert not set(contributions(o.properties)) & set(first_half)
    for r in engine.list_rows("relationship", limit=5000).items:
        assert r.source_chunks and not set(r.source_chunks) & set(first_half)
