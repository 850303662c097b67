"""Tenant isolation: two projects with the same data and one key each; nothing crosses.

Both projects hold the same objects, relationships, sources, chunks and mentions
(so their texts and vectors are identical and any leak would rank high), but their
ids differ. Every route is called with project alpha's key on project beta's ids,
and every search leg, recipe and reranker is run with it: only alpha's rows may
ever come back, and beta's rows must stay untouched.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from live_server import LiveServer, client, wait_for

from kgsearch import ChunkIn, Engine, MentionIn, ObjectIn, RelationshipIn, SourceIn, connect
from kgsearch.api.app import create_app
from kgsearch.search.request import RECIPES
from kgsearch.testing import FakeEmbedder

PEOPLE = ["ada", "grace", "alan", "edsger"]


def build(engine: Engine, project: str) -> None:
    """The same small graph in ``project``."""
    objects = [
        ObjectIn(type="Person", key=k, properties={"name": k.title(), "field": "computing"})
        for k in PEOPLE
    ] + [ObjectIn(type="Org", key="lab", properties={"name": "Computing Lab"})]
    engine.add_objects(objects, project=project)
    engine.add_relationships(
        [
            RelationshipIn(
                type="WORKS_AT",
                source={"type": "Person", "key": k},
                target={"type": "Org", "key": "lab"},
            )
            for k in PEOPLE
        ]
        + [
            RelationshipIn(
                type="KNOWS",
                source={"type": "Person", "key": "ada"},
                target={"type": "Person", "key": "alan"},
            )
        ],
        project=project,
    )
    notes = f"{project}-notes"
    engine.add_sources([SourceIn(id=notes, title="Lab notes")], project=project)
    engine.add_chunks(
        [
            ChunkIn(
                id=f"{project}-n1",
                text="Ada and Alan worked at the computing lab.",
                source_id=notes,
            ),
            ChunkIn(
                id=f"{project}-n2",
                text="Grace wrote the first compiler.",
                source_id=notes,
                position=1,
            ),
        ],
        project=project,
    )
    engine.add_mentions(
        [MentionIn(chunk_id=f"{project}-n1", object={"type": "Person", "key": "ada"})],
        project=project,
    )


def row_ids(engine: Engine, project: str) -> dict[str, set[str]]:
    """Every live row id of ``project`` by kind."""
    return {
        kind: {r.id for r in engine.list_rows(kind, project=project, limit=100).items}
        for kind in ("object", "relationship", "chunk", "source")
    }


class World:
    """Two projects on one server, with a key each."""

    def __init__(self, tmp: Path) -> None:
        self.engine = Engine(connect(str(tmp / "two.db")), embedder=FakeEmbedder(32))
        build(self.engine, "alpha")
        build(self.engine, "beta")
        self.engine.embed_pending()
        self.alpha = row_ids(self.engine, "alpha")
        self.beta = row_ids(self.engine, "beta")
        key_a, _ = self.engine.create_api_key("alpha", "read,write,debug")
        key_b, _ = self.engine.create_api_key("beta", "read,write,debug")
        self.server = LiveServer(create_app(self.engine))
        base = self.server.start()
        self.a = client(base, key_a)
        self.b = client(base, key_b)
        self.beta_snapshot = self.snapshot("beta")

    def snapshot(self, project: str) -> list[Any]:
        """Every live row of a project, to prove it was not touched."""
        rows: list[Any] = []
        for kind in ("object", "relationship", "chunk", "source"):
            rows += self.engine.list_rows(kind, project=project, limit=100).items
        return rows

    def close(self) -> None:
        self.a.close()
        self.b.close()
        self.server.stop()
        self.engine.close()


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    w = World(tmp_path_factory.mktemp("isolation"))
    yield w
    w.close()


def alpha_only(w: World, found: set[str]) -> None:
    assert found, "the check found nothing at all"
    all_alpha = set().union(*w.alpha.values())
    all_beta = set().union(*w.beta.values())
    assert found <= all_alpha
    assert not found & all_beta


def test_the_two_projects_hold_the_same_data_under_different_ids(world: World) -> None:
    assert {k: len(v) for k, v in world.alpha.items()} == {k: len(v) for k, v in world.beta.items()}
    assert not set().union(*world.alpha.values()) & set().union(*world.beta.values())


@pytest.mark.parametrize(
    ("kind", "path"),
    [
        ("object", "/api/graph/objects/{}"),
        ("object", "/api/graph/objects/{}/neighbors"),
        ("relationship", "/api/graph/relationships/{}"),
        ("chunk", "/api/chunks/{}"),
        ("source", "/api/sources/{}"),
    ],
)
def test_reading_another_projects_rows_is_404(world: World, kind: str, path: str) -> None:
    for id in world.beta[kind] - world.alpha[kind]:
        assert world.a.get(path.format(id)).status_code == 404


@pytest.mark.parametrize(
    ("path", "kind"),
    [
        ("/api/graph/objects", "object"),
        ("/api/graph/relationships", "relationship"),
        ("/api/chunks", "chunk"),
        ("/api/sources", "source"),
    ],
)
def test_listings_show_only_the_own_project(world: World, path: str, kind: str) -> None:
    found = {r["id"] for r in world.a.get(path, params={"limit": 100}).json()["items"]}

    assert found == world.alpha[kind]


def test_lookup_by_key_finds_the_own_projects_object(world: World) -> None:
    found = world.a.get("/api/graph/objects/lookup", params={"type": "Person", "key": "ada"})

    assert found.json()["project"] == "alpha"
    alpha_only(world, {found.json()["id"]})


def test_neighbours_stay_in_the_project(world: World) -> None:
    ada = world.a.get("/api/graph/objects/lookup", params={"type": "Person", "key": "ada"}).json()

    body = world.a.get(f"/api/graph/objects/{ada['id']}/neighbors", params={"depth": 3}).json()

    alpha_only(world, {n["id"] for n in body["neighbors"]} | {n["via"] for n in body["neighbors"]})


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("PATCH", "/api/graph/objects/{}", {"labels": ["hacked"]}),
        ("DELETE", "/api/graph/objects/{}", None),
        ("PATCH", "/api/graph/relationships/{}", {"label": "hacked"}),
        ("DELETE", "/api/graph/relationships/{}", None),
        ("DELETE", "/api/chunks/{}", None),
        ("DELETE", "/api/sources/{}", None),
    ],
)
def test_changing_another_projects_rows_is_404(
    world: World, method: str, path: str, body: object
) -> None:
    kind = path.split("/")[-2].removesuffix("s")
    for id in world.beta[kind]:
        assert world.a.request(method, path.format(id), json=body).status_code == 404
    assert world.snapshot("beta") == world.beta_snapshot


@pytest.mark.parametrize(
    "path",
    [
        "/api/graph/objects/bulk-delete",
        "/api/graph/relationships/bulk-delete",
        "/api/chunks/bulk-delete",
    ],
)
def test_bulk_deletes_of_another_projects_ids_delete_nothing(world: World, path: str) -> None:
    beta_ids = sorted(set().union(*world.beta.values()))

    assert world.a.post(path, json={"ids": beta_ids[:1000]}).json() == {"deleted": 0}
    assert world.snapshot("beta") == world.beta_snapshot


def test_relationships_cannot_reach_another_projects_objects(world: World) -> None:
    beta_object = sorted(world.beta["object"])[0]
    alpha_object = sorted(world.alpha["object"])[0]

    response = world.a.post(
        "/api/graph/relationships",
        json={"type": "KNOWS", "source": alpha_object, "target": beta_object},
    )

    assert response.status_code == 404
    assert response.json()["error"]["details"] == {"missing": [beta_object]}


def test_reusing_another_projects_ids_writes_only_the_own_project(world: World) -> None:
    beta_object = sorted(world.beta["object"])[0]

    created = world.a.post(
        "/api/graph/objects", json={"type": "Robot", "key": "r2", "id": beta_object}
    )
    text = world.a.post(
        "/api/text", json={"text": "Overwrite?", "source_id": "notes", "title": "x"}
    )

    assert (created.status_code, created.json()["project"]) == (201, "alpha")
    assert text.json()["source"]["project"] == "alpha"
    assert world.snapshot("beta") == world.beta_snapshot
    world.a.post("/api/graph/objects/bulk-delete", json={"ids": [beta_object]})
    world.a.post("/api/chunks/bulk-delete", json={"ids": [c["id"] for c in text.json()["chunks"]]})
    world.engine.delete("source", ["beta-notes"], project="alpha")


SEARCHES: list[dict[str, Any]] = [
    {},
    {"resultTypes": "graph"},
    {"resultTypes": "text"},
    {"graph": "bfs"},
    {"graph": "ppr", "graph_depth": 2},
    {"reranker": "mmr"},
    {"reranker": "mentions"},
    {"fusion": "weighted"},
    {"typeHint": "person"},
    {"filters": {"object_types": ["Person"]}},
    {"filters": {"properties": {"field": "computing"}}},
    {"filters": {"embedded_only": True}},
    {"objects": {"methods": ["vector"]}, "relationships": {"methods": ["bm25"]}},
    # communities searches community reports only, which this world has none of: their
    # isolation is checked where reports are built (tests/unit/communities/test_build.py)
    *({"recipe": name} for name in sorted(RECIPES) if name not in ("node_distance", "communities")),
]


@pytest.mark.parametrize(
    "extra", SEARCHES, ids=lambda e: ",".join(f"{k}={v}" for k, v in e.items()) or "default"
)
def test_every_search_leg_returns_only_the_own_project(world: World, extra: dict[str, Any]) -> None:
    body = {"query": "Ada Alan Grace computing lab compiler", "limit": 100, "includeDebug": True}

    response = world.a.post("/api/search/unified", json={**body, **extra})

    data = response.json()
    assert response.status_code == 200, data
    found = {r["id"] for r in data["results"]}
    found |= {r.get("source_id") for r in data["results"] if r["type"] == "text"} - {None}
    for legs in data["debug"]["fusion_details"]["legs"].values():
        found |= {hit["key"].split(":", 1)[1] for hit in legs}
    alpha_only(world, found)


def test_graph_expansion_from_another_projects_objects_finds_nothing_of_it(world: World) -> None:
    origins = sorted(world.beta["object"])

    response = world.a.post(
        "/api/search/unified",
        json={"query": "lab", "graph": "bfs", "bfs_origins": origins, "includeDebug": True},
    )

    data = response.json()
    found = {r["id"] for r in data["results"]}
    for legs in data["debug"]["fusion_details"]["legs"].values():
        found |= {hit["key"].split(":", 1)[1] for hit in legs}
    alpha_only(world, found)


def test_node_distance_from_another_projects_object_is_400(world: World) -> None:
    center = sorted(world.beta["object"])[0]

    response = world.a.post(
        "/api/search/unified",
        json={"query": "lab", "reranker": "node_distance", "center_id": center},
    )

    assert response.status_code == 400


def test_node_distance_within_the_project_stays_in_it(world: World) -> None:
    ada = world.a.get("/api/graph/objects/lookup", params={"type": "Person", "key": "ada"}).json()

    data = world.a.post(
        "/api/search/unified",
        json={"query": "lab", "reranker": "node_distance", "center_id": ada["id"], "limit": 100},
    ).json()

    alpha_only(world, {r["id"] for r in data["results"]})


def test_context_and_explain_use_only_the_own_project(world: World) -> None:
    query = {"query": "Ada Alan Grace computing lab", "limit": 100}

    explain = world.a.post("/api/search/explain", json=query).json()
    context = world.a.post("/api/search/context", json={**query, "maxTokens": 5000}).json()

    found = {f["id"] for f in explain["fused"]}
    for legs in explain["legs"].values():
        found |= {hit["key"].split(":", 1)[1] for hit in legs}
    alpha_only(world, found)
    assert context["results"] == len(
        world.a.post("/api/search/unified", json=query).json()["results"]
    )


def test_embedding_status_counts_only_the_own_project(world: World) -> None:
    body = world.a.get("/api/embeddings/status").json()

    assert {r["project"] for r in body["rows"]} == {"alpha"}
    assert body["total"] == sum(len(v) for k, v in world.alpha.items() if k != "source")


def test_backfill_jobs_and_retries_stay_in_the_project(world: World) -> None:
    world.engine.add_objects([ObjectIn(type="Person", key="new-b")], project="beta")
    job = world.b.post("/api/embeddings/backfill", json={}).json()

    assert world.a.get(f"/api/embeddings/backfill/{job['id']}").status_code == 404
    wait_for(lambda: world.b.get(f"/api/embeddings/backfill/{job['id']}").json()["state"] == "done")
    assert world.b.get(f"/api/embeddings/backfill/{job['id']}").json()["processed"] == 1
    assert world.a.post("/api/embeddings/retry", json={"dead": True}).json() == {"requeued": 0}
    world.engine.delete(
        "object",
        [world.engine.get_object_by_key("Person", "new-b", project="beta").id],
        project="beta",
    )
