"""Schema labels mapped by embedding when no name matches (issue 31, item 1): the
threshold and margin hold, the mapping is recorded, and the embedder is loaded only
for a label that needs it."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import ClassVar

import numpy as np

from kgsearch import Engine
from kgsearch.config import ExtractSettings, LLMSettings
from kgsearch.embed.base import Embedder, Vector
from kgsearch.embed.fake import FakeEmbedder
from kgsearch.extract.conform import SimilarLabels, conform
from kgsearch.extract.ontology import GraphSchema
from kgsearch.extract.quality import QualityRules, apply_quality, rules_digest
from kgsearch.extract.run import LLMExtractor
from kgsearch.extract.schema import (
    ExtractedEntity,
    ExtractedGraph,
    ExtractedRelation,
    ExtractionResult,
)
from kgsearch.store import connect

SCHEMA = GraphSchema.model_validate(
    {
        "entity_types": [{"name": "person"}, {"name": "company"}],
        "relation_types": [
            {"name": "chief executive", "source": ["company"], "target": ["person"]},
            {"name": "founded by", "source": ["company"], "target": ["person"]},
        ],
    }
)


class Synonyms:
    """An embedder where words of one meaning share a direction (a stand-in for a
    model that knows "boss" and "chief executive" are close); counts its calls."""

    model_id = "synonyms:3"
    dims = 3
    max_tokens = 64
    MEANING: ClassVar[dict[str, int]] = {
        "boss": 0,
        "chief": 0,
        "executive": 0,
        "head": 0,
        "founded": 1,
        "by": 1,
        "creator": 1,
        "company": 2,
        "person": 2,
        "firm": 2,
    }

    def __init__(self) -> None:
        self.calls = 0

    def count_tokens(self, text: str) -> int:
        return len(text.split())

    def embed_documents(self, texts: Sequence[str]) -> list[Vector]:
        self.calls += 1
        out = []
        for text in texts:
            v = np.full(3, 0.05, dtype=np.float32)
            for word in text.split():
                if word in self.MEANING:
                    v[self.MEANING[word]] += 1.0
            out.append(v)
        return out

    def embed_query(self, text: str) -> Vector:
        return self.embed_documents([text])[0]


def relation(label: str) -> ExtractedGraph:
    return ExtractedGraph(
        entities=[
            ExtractedEntity(name="Acme", type="company"),
            ExtractedEntity(name="Ada", type="person"),
        ],
        relationships=[ExtractedRelation(source="Acme", target="Ada", relation=label)],
    )


def test_a_label_no_name_matches_is_mapped_by_embedding_and_recorded() -> None:
    model = Synonyms()
    similar = SimilarLabels(lambda: model, threshold=0.9)
    held = conform(relation("boss"), SCHEMA, similar=similar)
    assert [r.relation for r in held.graph.relationships] == ["chief executive"]
    (signal,) = [s for s in held.signals if s.reason == "mapped_to_schema"]
    assert isinstance(signal.item, dict)
    assert signal.item["from"] == "boss" and signal.item["by"] == "embedding"
    assert signal.item["similarity"] >= 0.9
    # without the fallback the same label is off-schema
    assert [r.reason for r in conform(relation("boss"), SCHEMA).rejected] == ["off_schema"]


def test_below_the_threshold_or_without_a_clear_lead_it_is_rejected() -> None:
    model = Synonyms()
    assert conform(relation("weather"), SCHEMA, similar=SimilarLabels(lambda: model)).rejected
    # "head creator" is as close to both relations: no clear winner
    even = conform(
        relation("head creator"), SCHEMA, similar=SimilarLabels(lambda: model, threshold=0.5)
    )
    assert [r.reason for r in even.rejected] == ["off_schema"]


def test_the_embedder_is_not_loaded_when_names_match() -> None:
    loaded: list[Embedder] = []

    def load() -> Embedder:
        loaded.append(FakeEmbedder(16))
        return loaded[-1]

    held = conform(relation("Chief_Executive"), SCHEMA, similar=SimilarLabels(load))
    assert [r.relation for r in held.graph.relationships] == ["chief executive"] and not loaded


def test_the_fake_embedder_maps_a_reworded_label_through_the_quality_filter() -> None:
    # shares 2 of 5 words with "chief executive": too few for the name match (half);
    # the hashed bag of words scores 2/sqrt(6 * 2) = 0.58 ("and" counts there)
    label = "acting chief executive officer and president"
    assert [r.reason for r in conform(relation(label), SCHEMA).rejected] == ["off_schema"]
    similar = SimilarLabels(lambda: FakeEmbedder(256), threshold=0.55)
    rules = QualityRules(schema=SCHEMA, similar_labels=similar)
    graph = relation(label)
    graph.relationships[0].description = "Ada has run Acme as its chief executive since 2019."
    result = apply_quality(
        ExtractionResult(chunk_id="c", graph=graph), "Acme is run by Ada.", rules
    )
    assert [r.relation for r in result.graph.relationships] == ["chief executive"]
    (signal,) = [s for s in result.signals if s.reason == "mapped_to_schema"]
    assert isinstance(signal.item, dict) and signal.item["by"] == "embedding"
    assert abs(float(signal.item["similarity"]) - 0.5774) < 0.01
    assert rules_digest(rules) != rules_digest(QualityRules(schema=SCHEMA))


def test_the_setting_gives_the_llm_extractor_the_projects_embedder(tmp_path: Path) -> None:
    engine = Engine(
        connect(f"sqlite:///{tmp_path / 'kg.db'}"),
        embedder=FakeEmbedder(16),
        extract_settings=ExtractSettings.model_validate(
            {"extractor": "llm", "schema": SCHEMA.model_dump(), "schema_label_similarity": 0.85}
        ),
        llm_settings=LLMSettings(model="openai:gpt-4o", api_key="test-key"),
    )
    extractor = engine.extractor()
    assert isinstance(extractor, LLMExtractor)
    similar = extractor.rules.similar_labels
    assert similar is not None and similar.threshold == 0.85
