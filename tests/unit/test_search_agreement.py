"""The ``agreement`` reranker: hits more retrievers found come first (the worked example
of a part added as one module plus its registration, docs/architecture.md)."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from kgsearch.engine import Engine
from kgsearch.errors import InvalidRequest
from kgsearch.model import LegHit, ObjectIn
from kgsearch.search.agreement import AgreementReranker
from kgsearch.search.rerank import Candidate
from kgsearch.search.rerankers import RERANKERS


def found(*legs: str) -> tuple[LegHit, ...]:
    return tuple(LegHit(leg=leg, rank=1, score=1.0) for leg in legs)


def keyed(cands: Sequence[Candidate]) -> list[tuple[str, float]]:
    return [(c.key, c.score) for c in cands]


def test_more_legs_first_ties_by_incoming_score_then_order() -> None:
    hits = [
        Candidate("a", 0.9, found_by=found("objects:vector")),
        Candidate("b", 0.2, found_by=found("objects:vector", "objects:bm25")),
        Candidate("c", 0.5, found_by=found("objects:bm25", "objects:name")),
        Candidate("d", 0.5, found_by=found("objects:bm25", "graph:bfs")),
        Candidate("e", 0.1),
    ]
    result = AgreementReranker().rerank("q", hits, limit=10)
    assert keyed(result) == [("c", 2.0), ("d", 2.0), ("b", 2.0), ("a", 1.0), ("e", 0.0)]


def test_a_leg_and_its_hinted_twin_count_once() -> None:
    hits = [
        Candidate("a", 0.9, found_by=found("objects:vector", "objects:vector:hinted")),
        Candidate("b", 0.1, found_by=found("objects:vector", "objects:bm25")),
    ]
    result = AgreementReranker().rerank("q", hits, limit=10)
    assert keyed(result) == [("b", 2.0), ("a", 1.0)]


def test_respects_limit() -> None:
    hits = [Candidate("a", 0.1, found_by=found("x", "y")), Candidate("b", 0.9)]
    assert keyed(AgreementReranker().rerank("q", hits, limit=1)) == [("a", 2.0)]


def test_rejects_a_limit_below_one() -> None:
    with pytest.raises(InvalidRequest):
        AgreementReranker().rerank("q", [], limit=0)


def test_is_registered_and_needs_nothing_from_hydration() -> None:
    part = RERANKERS.get("agreement")
    assert part.needs == frozenset()


def test_a_search_ranks_by_agreement(engine: Engine) -> None:
    ada, _ = engine.add_objects(
        [
            ObjectIn(type="Person", key="ada", properties={"name": "Ada Lovelace"}),
            ObjectIn(type="Document", key="bio", properties={"name": "Lovelace notes"}),
        ]
    )
    engine.embed_pending()
    response = engine.search("Ada Lovelace", result_types="graph", reranker="agreement")
    legs = [len({h.leg.removesuffix(":hinted") for h in r.found_by}) for r in response.results]
    assert [r.score for r in response.results] == [float(n) for n in legs]
    assert legs == sorted(legs, reverse=True)
    assert response.results[0].id == ada.id
