"""Issue 31's temporal measure, offline: two real passages naming successive First
Ladies of Cuba (2WikiMultihopQA corpus, HippoRAG's copy; Apache-2.0; eval-data
``2wikimultihopqa-hipporag``) ingested with the spaCy extractor; the dates the parse
attaches to each fact become its validity, and ``as_of`` search returns the right one.

Offline there is no schema, so nothing is single-valued: the terms here are stated in
full ("from 1940 to 1944"), and an open-ended fact stays open (see docs/extraction.md).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from eval_data import EVAL_DATA

from kgsearch import Engine
from kgsearch.config import ExtractSettings
from kgsearch.embed.fake import FakeEmbedder
from kgsearch.model import Filters
from kgsearch.store import connect

CORPUS = EVAL_DATA / "2wikimultihopqa-hipporag" / "2wikimultihopqa_corpus.json"
TITLES = ["Elisa Godínez Gómez de Batista", "Marta Fernandez Miranda de Batista"]
ELISA, MARTA = "Elisa Godínez Gómez de Batista", "Marta Fernández Miranda de Batista"


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Engine:
    passages = {p["title"]: p["text"] for p in json.loads(CORPUS.read_text("utf-8"))}
    folder: Path = tmp_path_factory.mktemp("cuba")
    docs = folder / "docs"
    docs.mkdir()
    for n, title in enumerate(TITLES):
        (docs / f"{n}.txt").write_text(passages[title], encoding="utf-8")
    engine = Engine(
        connect(f"sqlite:///{folder / 'kg.db'}"),
        embedder=FakeEmbedder(16),
        extract_settings=ExtractSettings(extractor="spacy"),
    )
    engine.ingest(paths=[docs])
    return engine


def first_ladies(engine: Engine, when: datetime | None) -> set[str]:
    response = engine.search(
        "First Lady of Cuba",
        objects=None,
        chunks=None,
        limit=50,
        filters=Filters(as_of=when),
    )
    rels = engine.store.get_relationships("default", [r.id for r in response.results])
    names = {o.id: o.name for o in engine.store.iter_rows("default", "object")}
    return {names[r.source_id] for r in rels if r.label == "be lady of"}


def test_as_of_search_returns_the_first_lady_of_each_date(engine: Engine) -> None:
    assert first_ladies(engine, datetime(1942, 6, 1, tzinfo=UTC)) == {ELISA}
    assert first_ladies(engine, datetime(1955, 6, 1, tzinfo=UTC)) == {MARTA}
    assert first_ladies(engine, datetime(1959, 12, 31, tzinfo=UTC)) == {MARTA}  # "until 1959"
    assert first_ladies(engine, datetime(1948, 6, 1, tzinfo=UTC)) == set()
    assert first_ladies(engine, None) == set()  # neither is First Lady now


def test_the_dates_are_kept_with_each_chunk_and_undated_facts_stay_valid(
    engine: Engine,
) -> None:
    rels = engine.list_rows("relationship", limit=100).items
    terms = {
        (r.valid_from.year if r.valid_from else None, r.valid_to.year if r.valid_to else None)
        for r in rels
        if r.label == "be lady of"
    }
    assert terms == {(1940, 1945), (1952, 1960)}  # ends exclusive: the year after
    wives = [r for r in rels if r.label == "be wife of"]
    assert len(wives) == 2 and all(r.valid_from is None and r.valid_to is None for r in wives)
