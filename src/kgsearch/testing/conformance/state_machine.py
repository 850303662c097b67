"""Stateful property test: random writes in two projects, checked against a plain-dict model.

After every step the store must agree with the model on counts, fields, embedding
texts and statuses, neighbours (a BFS oracle) and exact vector search (brute-force
cosine over the model's embedded texts).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule, run_state_machine_as_test

from kgsearch.engine import Engine
from kgsearch.errors import NotFound
from kgsearch.model import ChunkIn, Kind, ObjectIn, ObjectRef, RelationshipIn
from kgsearch.store.base import Store
from kgsearch.testing import FakeEmbedder
from kgsearch.testing.oracles import assert_topk, bfs, cosine_scores
from kgsearch.testing.stores import StoreFactory

DIMS = 16
PROJECTS = st.sampled_from(["p1", "p2"])
TYPES = st.sampled_from(["Person", "Place"])
KEYS = st.sampled_from(["a", "b", "c", "d"])
NAMES = st.sampled_from(["alpha", "beta", "gamma", "alpha beta", "delta"])
DESCRIPTIONS = st.sampled_from([None, "red fox", "blue fox", "alpha"])
REL_TYPES = st.sampled_from(["KNOWS", "LIKES"])
CHUNK_IDS = st.sampled_from(["c1", "c2", "c3"])
CHUNK_TEXTS = st.sampled_from(["alpha fox", "beta", "gamma gamma delta", "alpha beta"])
QUERIES = ["alpha", "beta fox", "gamma delta knows"]


@dataclass
class Row:
    """What the model knows of one row: its id, embedding text, last embedded text."""

    id: str
    text: str
    embedded_text: str | None = None
    live: bool = True

    @property
    def status(self) -> str:
        return "embedded" if self.embedded_text == self.text else "pending"


@dataclass
class ObjectRow(Row):
    type: str = ""
    key: str = ""
    properties: dict[str, Any] | None = None


@dataclass
class RelRow(Row):
    type: str = ""
    source: tuple[str, str] = ("", "")
    target: tuple[str, str] = ("", "")


def object_text(type_: str, properties: dict[str, Any]) -> str:
    head = f"[Type: #{type_.lower()}] {properties['name']}"
    return f"{head} — {properties['description']}" if "description" in properties else head


class StoreMachine(RuleBasedStateMachine):
    factory: Callable[[], Store]
    """Opens the fresh store each run starts from (set per backend by the test)."""

    def __init__(self) -> None:
        super().__init__()
        self.engine = Engine(type(self).factory(), embedder=FakeEmbedder(DIMS))
        self.objects: dict[tuple[str, str, str], ObjectRow] = {}
        self.rels: dict[tuple[str, str], RelRow] = {}
        self.chunks: dict[tuple[str, str], Row] = {}

    def teardown(self) -> None:
        self.engine.close()

    # model helpers -------------------------------------------------------------
    def live_object(self, project: str, ref: tuple[str, str]) -> ObjectRow | None:
        row = self.objects.get((project, *ref))
        return row if row is not None and row.live else None

    def rel_text(self, project: str, rel: RelRow) -> str:
        source = self.objects[(project, *rel.source)].properties or {}
        target = self.objects[(project, *rel.target)].properties or {}
        return f"{source['name']} {rel.type.lower()} {target['name']}"

    def live(self, rows: dict[Any, Any], project: str) -> dict[Any, Any]:
        return {k: r for k, r in rows.items() if k[0] == project and r.live}

    # rules ----------------------------------------------------------------------
    @rule(project=PROJECTS, type_=TYPES, key=KEYS, name=NAMES, description=DESCRIPTIONS)
    def add_object(
        self, project: str, type_: str, key: str, name: str, description: str | None
    ) -> None:
        properties: dict[str, Any] = {"name": name}
        if description is not None:
            properties["description"] = description
        [got] = self.engine.add_objects(
            [ObjectIn(type=type_, key=key, properties=properties)], project=project
        )
        known = self.objects.get((project, type_, key))
        if known is not None:
            assert got.id == known.id
        row = known or ObjectRow(id=got.id, text="", type=type_, key=key)
        row.properties = properties
        row.text = object_text(type_, properties)
        row.live = True
        self.objects[(project, type_, key)] = row
        for (p, _), rel in self.rels.items():
            if p == project and rel.live and (type_, key) in (rel.source, rel.target):
                rel.text = self.rel_text(project, rel)

    @rule(
        project=PROJECTS,
        source=st.tuples(TYPES, KEYS),
        end=st.tuples(TYPES, KEYS),
        type_=REL_TYPES,
    )
    def add_relationship(
        self, project: str, source: tuple[str, str], end: tuple[str, str], type_: str
    ) -> None:
        target = end
        item = RelationshipIn(
            type=type_,
            source=ObjectRef(type=source[0], key=source[1]),
            target=ObjectRef(type=target[0], key=target[1]),
        )
        before = self.engine.store.counts(project)
        if self.live_object(project, source) is None or self.live_object(project, target) is None:
            try:
                self.engine.add_relationships([item], project=project)
            except NotFound:
                assert self.engine.store.counts(project) == before
                return
            raise AssertionError("a relationship to a missing object was accepted")
        [got] = self.engine.add_relationships([item], project=project)
        row = self.rels.get((project, got.id)) or RelRow(
            id=got.id, text="", type=type_, source=source, target=target
        )
        row.live = True
        row.text = self.rel_text(project, row)
        self.rels[(project, got.id)] = row

    @rule(project=PROJECTS, type_=TYPES, key=KEYS)
    def delete_object(self, project: str, type_: str, key: str) -> None:
        row = self.objects.get((project, type_, key))
        if row is None:
            assert self.engine.delete("object", [f"unknown-{key}"], project=project) == 0
            return
        assert self.engine.delete("object", [row.id], project=project) == int(row.live)
        row.live = False
        for (p, _), rel in self.rels.items():
            if p == project and (type_, key) in (rel.source, rel.target):
                rel.live = False

    @rule(data=st.data())
    def delete_relationship(self, data: st.DataObject) -> None:
        if not self.rels:
            return
        project, rid = data.draw(st.sampled_from(sorted(self.rels)))
        row = self.rels[(project, rid)]
        assert self.engine.delete("relationship", [rid], project=project) == int(row.live)
        row.live = False

    @rule(project=PROJECTS, cid=CHUNK_IDS, text=CHUNK_TEXTS)
    def add_chunk(self, project: str, cid: str, text: str) -> None:
        [got] = self.engine.add_chunks([ChunkIn(id=cid, text=text)], project=project)
        assert got.id == cid
        row = self.chunks.get((project, cid)) or Row(id=cid, text=text)
        row.text = text
        row.live = True
        self.chunks[(project, cid)] = row

    @rule(project=PROJECTS, cid=CHUNK_IDS)
    def delete_chunk(self, project: str, cid: str) -> None:
        row = self.chunks.get((project, cid))
        expected = int(row is not None and row.live)
        assert self.engine.delete("chunk", [cid], project=project) == expected
        if row is not None:
            row.live = False

    @rule()
    def embed(self) -> None:
        self.engine.embed_pending(batch_size=7)
        for rows in (self.objects, self.rels, self.chunks):
            for row in rows.values():
                if row.live:
                    row.embedded_text = row.text

    @rule(project=PROJECTS)
    def purge(self, project: str) -> None:
        gone = 0
        tables: list[dict[Any, Any]] = [self.objects, self.rels, self.chunks]
        for rows in tables:
            for key in [k for k, r in rows.items() if k[0] == project and not r.live]:
                del rows[key]
                gone += 1
        assert self.engine.purge(project=project) == gone

    # invariants -----------------------------------------------------------------
    @invariant()
    def counts_match(self) -> None:
        for project in ("p1", "p2"):
            assert self.engine.store.counts(project) == {
                "objects": len(self.live(self.objects, project)),
                "relationships": len(self.live(self.rels, project)),
                "chunks": len(self.live(self.chunks, project)),
                "sources": 0,
                "mentions": 0,
            }

    @invariant()
    def fields_match(self) -> None:
        store = self.engine.store
        for project in ("p1", "p2"):
            objects = self.live(self.objects, project)
            got = {o.id: o for o in store.list_rows(project, "object", limit=1000).items}
            assert set(got) == {r.id for r in objects.values()}
            for row in objects.values():
                o = got[row.id]
                assert (o.type, o.key, o.properties) == (row.type, row.key, row.properties)
                assert (o.embedding.text, o.embedding.status) == (row.text, row.status)
            rels = self.live(self.rels, project)
            got_rels = {r.id: r for r in store.list_rows(project, "relationship", limit=1000).items}
            assert set(got_rels) == {r.id for r in rels.values()}
            for row in rels.values():
                r = got_rels[row.id]
                source = self.objects[(project, *row.source)].id
                target = self.objects[(project, *row.target)].id
                assert (r.type, r.source_id, r.target_id) == (row.type, source, target)
                assert (r.embedding.text, r.embedding.status) == (row.text, row.status)
            chunks = self.live(self.chunks, project)
            got_chunks = {c.id: c for c in store.list_rows(project, "chunk", limit=1000).items}
            assert {
                c.id: (c.text, c.embedding.text, c.embedding.status) for c in got_chunks.values()
            } == {r.id: (r.text, r.text, r.status) for r in chunks.values()}

    @invariant()
    def neighbors_match_bfs(self) -> None:
        for project in ("p1", "p2"):
            edges = [
                (
                    r.id,
                    r.type,
                    self.objects[(project, *r.source)].id,
                    self.objects[(project, *r.target)].id,
                )
                for r in self.live(self.rels, project).values()
            ]
            for row in self.live(self.objects, project).values():
                for depth in (1, 2):
                    for direction in ("both", "out"):
                        found = self.engine.neighbors(
                            [row.id], project=project, depth=depth, direction=direction
                        )
                        assert {n.id: n.depth for n in found} == bfs(
                            edges, [row.id], depth=depth, direction=direction
                        )

    @invariant()
    def vector_search_matches_brute_force(self) -> None:
        embedder = FakeEmbedder(DIMS)
        for project in ("p1", "p2"):
            for kind, rows in (
                (Kind.OBJECT, self.objects),
                (Kind.RELATIONSHIP, self.rels),
                (Kind.CHUNK, self.chunks),
            ):
                texts = {
                    r.id: r.text
                    for r in self.live(rows, project).values()
                    if r.status == "embedded"
                }
                for query in QUERIES:
                    got = self.engine.store.vector_search(
                        project, kind, embedder.embed_query(query), limit=3
                    )
                    assert_topk(got, cosine_scores(texts, query, DIMS), 3)


def test_store_agrees_with_a_plain_dict_model(store_factory: StoreFactory) -> None:
    machine = type("Machine", (StoreMachine,), {"factory": staticmethod(store_factory)})
    run_state_machine_as_test(
        machine,
        settings=settings(
            max_examples=60,
            stateful_step_count=30,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow],
        ),
    )
