"""Graph reads: ``neighbors`` equals a BFS oracle, within validity and depth."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from kgsearch.engine import Engine
from kgsearch.errors import InvalidRequest
from kgsearch.model import RelationshipIn
from kgsearch.store import graph_reads
from kgsearch.testing.conformance.builders import build_graph, knows, person
from kgsearch.testing.oracles import bfs


def test_neighbors_equal_bfs_for_every_start_direction_depth_and_type_filter(
    engine: Engine,
) -> None:
    by_key, edges = build_graph(engine)
    edge_ends = {rid: (s, t) for rid, _, s, t in edges}

    got: dict[tuple[Any, ...], dict[str, int]] = {}
    want: dict[tuple[Any, ...], dict[str, int]] = {}
    for key, id_ in by_key.items():
        for direction in ("out", "in", "both"):
            for depth in (1, 2, 3):
                for types in (None, ["KNOWS"], ["LIKES"], ["KNOWS", "LIKES"]):
                    case = (key, direction, depth, tuple(types or ()))
                    found = engine.neighbors(
                        [id_], depth=depth, direction=direction, relationship_types=types
                    )
                    got[case] = {n.id: n.depth for n in found}
                    assert len(found) == len(got[case]), found
                    for n in found:
                        assert n.id in edge_ends[n.via], (case, n)
                    want[case] = bfs(edges, [id_], depth=depth, direction=direction, types=types)

    assert got == want


def test_neighbors_from_several_starts_exclude_the_starts(engine: Engine) -> None:
    by_key, edges = build_graph(engine)
    starts = [by_key["a"], by_key["e"]]

    found = engine.neighbors(starts, depth=2)

    assert {n.id: n.depth for n in found} == bfs(edges, starts, depth=2)
    assert not {n.id for n in found} & set(starts)


def test_neighbors_skip_relationships_outside_their_validity(engine: Engine) -> None:
    ada, bob, cy = engine.add_objects([person("ada"), person("bob"), person("cy")])
    engine.add_relationships(
        [
            RelationshipIn(
                type="KNEW", source=ada.id, target=bob.id, valid_to=datetime(2000, 1, 1, tzinfo=UTC)
            ),
            RelationshipIn(
                type="KNOWS",
                source=ada.id,
                target=cy.id,
                valid_from=datetime(2001, 1, 1, tzinfo=UTC),
            ),
        ]
    )

    now = engine.store.neighbors("default", [ada.id])
    then = engine.store.neighbors("default", [ada.id], as_of=datetime(1999, 1, 1, tzinfo=UTC))

    assert [n.id for n in now] == [cy.id]
    assert [n.id for n in then] == [bob.id]


@pytest.mark.parametrize("depth", [0, -1, 6])
def test_neighbors_reject_depth_out_of_range(engine: Engine, depth: int) -> None:
    by_key, _ = build_graph(engine)

    with pytest.raises(InvalidRequest):
        engine.neighbors([by_key["a"]], depth=depth)


def test_typed_edges_are_every_live_edge_touching_the_ids_up_to_a_limit_each_way(
    engine: Engine,
) -> None:
    by_key, edges = build_graph(engine)
    store, project = engine.store, engine.project
    for key, id_ in by_key.items():
        want = {(rid, s, t, ty) for rid, ty, s, t in edges if id_ in (s, t)}
        got = store.typed_edges(project, [id_], limit=1000)
        assert set(got) == want and len(got) == len(want), key
        capped = store.typed_edges(project, [id_], limit=1)
        outs = [e for e in capped if e[1] == id_]
        ins = [e for e in capped if e[2] == id_]
        assert len(outs) <= 1 and len(ins) <= 1 and set(capped) <= want
        assert bool(outs) == any(s == id_ for _, s, _, _ in want)
        assert bool(ins) == any(t == id_ for _, _, t, _ in want)
    hub = max(by_key.values(), key=lambda i: sum(i in (s, t) for _, _, s, t in edges))
    engine.delete("relationship", [rid for rid, _, s, t in edges if hub in (s, t)][:1])
    assert len(store.typed_edges(project, [hub], limit=1000)) == (
        sum(hub in (s, t) for _, _, s, t in edges) - 1
    )
    assert store.typed_edges(project, [], limit=5) == []


def _capped(
    edges: list[tuple[str, str, str, str]], ids: list[str], limit: int
) -> list[tuple[str, str, str, str]]:
    """The oracle of ``typed_edges``: per id in the order asked, its first ``limit``
    edges out then its first ``limit`` edges in (insertion order), each edge once."""
    found: dict[str, tuple[str, str, str, str]] = {}
    for id_ in dict.fromkeys(ids):
        outs = [(r, s, t, ty) for r, ty, s, t in edges if s == id_][:limit]
        ins = [(r, s, t, ty) for r, ty, s, t in edges if t == id_][:limit]
        for edge in [*outs, *ins]:
            found.setdefault(edge[0], edge)
    return list(found.values())


def test_typed_edges_of_many_ids_cap_each_object_each_way_in_one_order(engine: Engine) -> None:
    by_key, edges = build_graph(engine)
    # a hub past every cap below: five edges out of "a" and four into it
    spokes = engine.add_objects([person(f"s{i}") for i in range(5)])
    extra = engine.add_relationships(
        [knows("a", f"s{i}") for i in range(5)] + [knows(f"s{i}", "a", "LIKES") for i in range(4)]
    )
    edges += [(r.id, r.type, r.source_id, r.target_id) for r in extra]
    store, project = engine.store, engine.project
    keys = ["c", "a", "nobody", "b", "a", "s0", "lonely", "e", "s4"]
    ids = [by_key.get(k) or next((s.id for s in spokes if s.key == k), k) for k in keys]
    live = [i for i in ids if i != "nobody"]
    for limit in (1, 2, 3, 1000):
        want = _capped(edges, live, limit)
        assert store.typed_edges(project, ids, limit=limit) == want, limit
        asked = set(live)
        among = [e for e in want if e[1] in asked and e[2] in asked]
        assert store.typed_edges(project, ids, limit=limit, among=True) == among, limit
    assert store.typed_edges(project, [by_key["lonely"]], limit=5) == []
    assert store.typed_edges(project, [by_key["lonely"]], limit=5, among=True) == []


def test_typed_edges_follow_validity_and_deletion(engine: Engine) -> None:
    ada, bob, cy = engine.add_objects([person("ada"), person("bob"), person("cy")])
    old, new = engine.add_relationships(
        [
            RelationshipIn(
                type="KNEW", source=ada.id, target=bob.id, valid_to=datetime(2000, 1, 1, tzinfo=UTC)
            ),
            RelationshipIn(type="KNOWS", source=ada.id, target=cy.id),
        ]
    )
    store, project = engine.store, engine.project
    ids = [ada.id, bob.id, cy.id]

    then = store.typed_edges(project, ids, limit=5, as_of=datetime(1999, 1, 1, tzinfo=UTC))
    assert store.typed_edges(project, ids, limit=5) == [(new.id, ada.id, cy.id, "KNOWS")]
    assert then == [
        (old.id, ada.id, bob.id, "KNEW"),
        (new.id, ada.id, cy.id, "KNOWS"),
    ]
    engine.delete("relationship", [new.id])
    assert store.typed_edges(project, ids, limit=5, among=True) == []


def test_edge_table_is_every_live_edge_in_insertion_order_and_every_live_type(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(graph_reads, "EDGE_PAGE", 3)  # several pages on every backend
    by_key, edges = build_graph(engine)
    dated = engine.add_relationships(
        [
            RelationshipIn(
                type="KNEW",
                source=by_key["a"],
                target=by_key["c"],
                valid_from=datetime(1990, 1, 1, tzinfo=UTC),
                valid_to=datetime(2000, 1, 1, tzinfo=UTC),
            )
        ]
    )[0]
    engine.delete("relationship", [edges[0][0]])
    engine.delete("object", [by_key["h"]])
    table = engine.store.edge_table(engine.project)
    got = [(e.id, e.type, e.source_id, e.target_id) for e in table.edges]
    # deleting an object leaves its edges to the store's own rules (typed_edges' too)
    live = {r[0] for r in engine.store.typed_edges(engine.project, list(by_key.values()), limit=99)}
    want = [e for e in edges[1:] if e[0] in live]
    assert got[:-1] == want
    last = table.edges[-1]
    assert (last.id, last.type) == (dated.id, "KNEW")
    assert last.valid_from == datetime(1990, 1, 1, tzinfo=UTC)
    assert last.valid_to == datetime(2000, 1, 1, tzinfo=UTC)
    assert all(e.valid_from is None and e.valid_to is None for e in table.edges[:-1])
    assert table.object_types == {i: "Person" for k, i in by_key.items() if k != "h"}
    assert engine.store.edge_table("elsewhere").edges == []
