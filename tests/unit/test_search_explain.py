"""Explain shows each stage's SQL: the store primitives take a per-call tracer
(sqlite-utils ``tracer``), the legs pass one only when the search is explained, and
parameters come back JSON-safe. Runs on every backend through the ``engine`` fixture."""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import numpy as np
import pytest

from kgsearch.engine import Engine
from kgsearch.model import ChunkIn, Kind, ObjectIn, RelationshipIn
from kgsearch.search.request import Statement
from kgsearch.search.statements import StatementLog, json_safe
from kgsearch.store.sqlite import SQLiteStore

TABLES = {"objects": "objects", "relationships": "relationships", "chunks": "chunks"}


def filled(engine: Engine) -> dict[str, str]:
    """Two people, an org, a relationship and a chunk, embedded; returns key → id."""
    ada, alan, acme = engine.add_objects(
        [
            ObjectIn(type="Person", key="ada", properties={"name": "Ada alpha"}),
            ObjectIn(type="Person", key="alan", properties={"name": "Alan beta"}),
            ObjectIn(type="Org", key="acme", properties={"name": "Acme alpha works"}),
        ]
    )
    engine.add_relationships([RelationshipIn(type="alpha_of", source=ada.id, target=acme.id)])
    engine.add_chunks([ChunkIn(id="c1", text="alpha notes about Ada at Acme")])
    engine.embed_pending()
    return {"ada": ada.id, "alan": alan.id, "acme": acme.id}


def said(statements: Sequence[Statement], text: str) -> bool:
    """Whether ``text`` is in any statement's SQL or parameters."""
    return any(text in s.sql or text in json.dumps(s.params) for s in statements)


def test_explain_lists_the_sql_of_each_lexical_leg(engine: Engine) -> None:
    filled(engine)

    statements = engine.explain("alpha").statements

    for scope, table in TABLES.items():
        leg = statements[f"{scope}:bm25"]
        assert any(table in s.sql for s in leg), scope
        assert any("alpha" in json.dumps(s.params) for s in leg), scope
    assert said(statements["objects:name"], "alpha")


def test_every_leg_and_stage_has_its_statements(engine: Engine) -> None:
    filled(engine)

    explained = engine.explain("alpha", graph="bfs")

    # one graph stage yields both graph legs; its statements are listed under graph:bfs
    assert set(explained.legs) - {"graph:bfs:relationships"} <= set(explained.statements)
    assert {"graph:bfs", "hydrate"} <= set(explained.statements)
    assert said(explained.statements["graph:bfs"], "relationships")


def test_filtered_search_statements_carry_the_filter(engine: Engine) -> None:
    filled(engine)

    statements = engine.explain("alpha", filters={"object_types": ["Person"]}).statements

    for leg in ("objects:vector", "objects:bm25", "objects:name"):
        assert said(statements[leg], "Person"), leg
    assert not said(statements["chunks:bm25"], "Person")


def test_type_hint_lookup_is_traced(engine: Engine) -> None:
    filled(engine)

    statements = engine.explain("alpha", type_hint="person").statements

    assert next(iter(statements)) == "type_hint"
    assert said(statements["type_hint"], "objects")
    assert said(statements["objects:bm25:hinted"], "Person")


def test_explain_is_json_safe(engine: Engine) -> None:
    filled(engine)

    explained = engine.explain("alpha", reranker="mmr")

    text = explained.model_dump_json()
    assert json.loads(text)["statements"]
    if not isinstance(engine.store, SQLiteStore):  # the query vector is a parameter
        assert '"<vector 32 float32>"' in text


def test_sqlite_vector_legs_note_the_in_memory_scan(engine: Engine) -> None:
    filled(engine)

    explained = engine.explain("alpha")

    if isinstance(engine.store, SQLiteStore):
        assert explained.notes["objects:vector"] == [
            "top 30 by exact cosine over 3 of 3 object vectors of 32 dims in memory"
        ]
        assert said(explained.statements["objects:vector"], "epoch:object")
    else:  # no in-memory scan; a statement's run-time settings other than the
        # connection's own are noted (the exact scan's random_page_cost is its own)
        notes = [n for leg in explained.notes.values() for n in leg]
        assert all(n.startswith("setting ") for n in notes), explained.notes
        assert "objects:vector" not in explained.notes


def test_plain_search_passes_no_tracer(engine: Engine, monkeypatch: pytest.MonkeyPatch) -> None:
    filled(engine)
    store = engine.store
    traces: list[object] = []
    real = store.text_search

    def spy(*args: Any, **kwargs: Any) -> list[tuple[str, float]]:
        traces.append(kwargs.get("trace"))
        return real(*args, **kwargs)

    monkeypatch.setattr(store, "text_search", spy)

    engine.search("alpha")
    assert traces == [None, None, None]
    traces.clear()
    engine.explain("alpha")
    assert len(traces) == 3
    assert all(isinstance(t, StatementLog) for t in traces)


def test_a_tracer_hears_only_its_own_call(engine: Engine) -> None:
    store = engine.store
    engine.add_objects(
        [ObjectIn(type="Word", key=w, properties={"name": w}) for w in ("kilo", "lima")]
    )
    logs = {w: StatementLog() for w in ("kilo", "lima")}
    barrier = threading.Barrier(2)

    def search(word: str) -> None:
        barrier.wait()
        for _ in range(5):  # a prefix query is FTS5's own: its MATCH carries the word
            store.text_search("default", Kind.OBJECT, word, limit=5, trace=logs[word], prefix=True)

    threads = [threading.Thread(target=search, args=(w,)) for w in logs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()

    for word, other in (("kilo", "lima"), ("lima", "kilo")):
        assert said(logs[word].statements, word)
        assert not said(logs[word].statements, other)


def test_graph_reads_report_their_statements(engine: Engine) -> None:
    store = engine.store
    ada, acme = engine.add_objects(
        [ObjectIn(type="Person", key="ada"), ObjectIn(type="Org", key="acme")]
    )
    engine.add_relationships([RelationshipIn(type="works_for", source=ada.id, target=acme.id)])
    log = StatementLog()

    found = store.neighbors("default", [ada.id], trace=log)
    edges = store.edges_among("default", [ada.id], trace=log)
    rows = store.get_objects("default", [acme.id], trace=log)

    assert ([n.id for n in found], len(edges), [o.id for o in rows]) == ([acme.id], 1, [acme.id])
    assert said(log.statements, "relationships")
    assert said(log.statements, ada.id)
    assert said(log.statements, acme.id)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (np.zeros(384, dtype=np.float32), "<vector 384 float32>"),
        (np.zeros((2, 3), dtype=np.float32), "<array 2x3 float32>"),
        (b"\x00" * 1536, "<1536 bytes>"),
        (memoryview(b"abcd"), "<4 bytes>"),
        (np.int64(7), 7),
        (datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC), "2024-01-02T03:04:05+00:00"),
        ((1, "a", None), [1, "a", None]),
        ({"p": [np.float32(0.5)]}, {"p": [0.5]}),
        (Kind.OBJECT, "object"),
        (3.5, 3.5),
        (True, True),
    ],
)
def test_parameters_become_json_safe(value: Any, expected: Any) -> None:
    assert json_safe(value) == expected


def test_a_statement_log_keeps_sql_params_and_notes() -> None:
    log = StatementLog()

    log("SELECT ?", [np.ones(4, dtype=np.float32)])
    log.note("scanned in memory")

    assert log.statements == [Statement(sql="SELECT ?", params=["<vector 4 float32>"])]
    assert log.notes == ["scanned in memory"]
