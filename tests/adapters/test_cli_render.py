"""The CLI's search table: relevance is relative to the best score of its own list
(results, and community reports on their own scale)."""

from __future__ import annotations

import pytest

from kgsearch.cli.query import render_results


def test_the_cli_shows_report_relevance_relative_to_the_best_report(
    capsys: pytest.CaptureFixture[str],
) -> None:
    found_by = [{"leg": "community:vector", "rank": 1, "score": 0.9}]
    reports = [
        {
            "type": "community",
            "id": f"c{i}",
            "score": score,
            "title": f"T{i}",
            "size": 5,
            "found_by": found_by,
        }
        for i, score in enumerate((0.0164, 0.0082))
    ]
    meta = {
        "totalResults": 0,
        "executionTime": {"totalMs": 1.0},
        "fusionStrategy": "rrf",
        "warnings": [],
    }
    render_results({"results": [], "communities": reports, "metadata": meta})
    shown = capsys.readouterr().out
    assert "1.00" in shown and "0.50" in shown and "0.0164" not in shown


def test_result_relevance_is_relative_to_the_best_score_not_the_first_row(
    capsys: pytest.CaptureFixture[str],
) -> None:
    found_by = [{"leg": "chunks:vector", "rank": 1, "score": 0.9}]
    results = [  # passages first on documents: a later fact may score higher
        {"type": "text", "id": "c1", "score": 0.02, "snippet": "a passage", "found_by": found_by},
        {
            "type": "relationship",
            "id": "r1",
            "score": 0.04,
            "triplet_text": "Ada knows Bob",
            "found_by": found_by,
        },
    ]
    meta = {
        "totalResults": 2,
        "executionTime": {"totalMs": 1.0},
        "fusionStrategy": "rrf",
        "warnings": [],
    }
    render_results({"results": results, "metadata": meta})
    shown = capsys.readouterr().out
    assert "0.50" in shown and "1.00" in shown and "2.00" not in shown


def test_the_type_column_names_objects_and_chunks_not_the_wire_types(
    capsys: pytest.CaptureFixture[str],
) -> None:
    found_by = [{"leg": "objects:vector", "rank": 1, "score": 0.9}]
    results = [
        {
            "type": "graph",
            "id": "o1",
            "score": 0.03,
            "name": "Ada",
            "object_type": "person",
            "found_by": found_by,
        },
        {"type": "text", "id": "c1", "score": 0.02, "snippet": "a passage", "found_by": found_by},
    ]
    meta = {
        "totalResults": 2,
        "executionTime": {"totalMs": 1.0},
        "fusionStrategy": "rrf",
        "warnings": [],
    }
    render_results({"results": results, "metadata": meta})
    rows = [
        line for line in capsys.readouterr().out.splitlines() if "Ada" in line or "passage" in line
    ]
    assert "object" in rows[0] and "graph" not in rows[0]
    assert "chunk" in rows[1] and " text " not in rows[1]


def test_the_light_cli_names_the_kinds_as_the_library_does() -> None:
    from kgsearch.cli.query import KINDS
    from kgsearch.search.request import RESULT_KINDS, GraphResult, TextResult

    assert KINDS == RESULT_KINDS
    assert GraphResult(id="o", score=1, object_type="t", key="k", name="n").kind == "object"
    assert TextResult(id="c", score=1, snippet="s").kind == "chunk"
