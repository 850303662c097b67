"""The routes the web UI reads (/api/explore/…) and the UI's own files, on a real
server: who the caller is, a bounded subgraph, one object with its surroundings,
embedding failures, project isolation, and the UI's security headers."""

from __future__ import annotations

import time
from collections.abc import Callable

import httpx
import pytest

from kgsearch import ChunkIn, Engine, MentionIn, ObjectIn, RelationshipIn
from kgsearch.api.app import create_app
from kgsearch.model import Kind

Http = Callable[..., httpx.Client]
LEAVES = 12


def star(engine: Engine, project: str = "alpha") -> dict[str, str]:
    """A hub with LEAVES leaves, one leaf with two twigs, a chunk mentioning the hub."""
    objects = [ObjectIn(type="Hub", key="hub", properties={"name": "The Hub"})]
    objects += [ObjectIn(type="Leaf", key=f"l{i}") for i in range(LEAVES)]
    objects += [ObjectIn(type="Twig", key=f"t{i}") for i in range(2)]
    ids = {o.key: o.id for o in engine.add_objects(objects, project=project)}
    rels = [
        RelationshipIn(
            type="HAS",
            source={"type": "Hub", "key": "hub"},
            target={"type": "Leaf", "key": f"l{i}"},
        )
        for i in range(LEAVES)
    ] + [
        RelationshipIn(
            type="GROWS",
            source={"type": "Leaf", "key": "l0"},
            target={"type": "Twig", "key": f"t{i}"},
        )
        for i in range(2)
    ]
    engine.add_relationships(rels, project=project)
    engine.add_chunks([ChunkIn(id="c1", text="The Hub is central.")], project=project)
    engine.add_mentions([MentionIn(chunk_id="c1", object=ids["hub"])], project=project)
    engine.embed_pending()
    return ids


@pytest.fixture
def keyed(api_engine: Engine, base_url: str, http: Http) -> tuple[httpx.Client, dict[str, str]]:
    ids = star(api_engine)
    key = api_engine.create_api_key("alpha", ["read"])[0]
    return http(base_url, key), ids


def test_session_names_the_keys_project_and_scopes(
    keyed: tuple[httpx.Client, dict[str, str]],
) -> None:
    c, _ = keyed
    body = c.get("/api/explore/session").json()
    assert body["project"] == "alpha"
    assert body["scopes"] == ["read"]
    assert body["keyless"] is False
    assert body["key_id"]


def test_overview_counts_rows_and_lists_types(keyed: tuple[httpx.Client, dict[str, str]]) -> None:
    c, _ = keyed
    body = c.get("/api/explore/overview").json()
    assert body["counts"]["objects"] == 1 + LEAVES + 2
    assert body["object_types"] == ["Hub", "Leaf", "Twig"]
    assert body["embedding_model"] == "fake:32"


def test_subgraph_grows_by_hops_and_stops_at_the_limit(
    keyed: tuple[httpx.Client, dict[str, str]],
) -> None:
    c, ids = keyed
    one = c.post("/api/explore/subgraph", json={"ids": [ids["hub"]]}).json()
    assert one["seeds"] == [ids["hub"]]
    assert len(one["nodes"]) == 1 + LEAVES and not one["truncated"]
    assert len(one["edges"]) == LEAVES
    assert {n["depth"] for n in one["nodes"]} == {0, 1}
    assert one["nodes"][0] == {"id": ids["hub"], "type": "Hub", "name": "The Hub", "depth": 0}
    two = c.post("/api/explore/subgraph", json={"ids": [ids["hub"]], "depth": 2}).json()
    assert len(two["nodes"]) == 1 + LEAVES + 2 and len(two["edges"]) == LEAVES + 2
    hub_edges = {(a, b, one["edge_types"][t]) for a, b, t in one["edges"]}
    assert hub_edges == {(0, i, "HAS") for i in range(1, 1 + LEAVES)}
    cut = c.post("/api/explore/subgraph", json={"ids": [ids["hub"]], "depth": 2, "limit": 5})
    assert len(cut.json()["nodes"]) == 5 and cut.json()["truncated"]
    assert {a for e in cut.json()["edges"] for a in e[:2]} <= set(range(5))
    twigs = c.post(
        "/api/explore/subgraph", json={"ids": [ids["l0"]], "depth": 1, "types": ["Twig"]}
    ).json()
    assert sorted(n["type"] for n in twigs["nodes"]) == ["Leaf", "Twig", "Twig"]


def test_subgraph_gives_each_node_its_coarsest_community_once_there_are_some(
    api_engine: Engine, keyed: tuple[httpx.Client, dict[str, str]]
) -> None:
    c, ids = keyed
    body = {"ids": [ids["hub"]], "depth": 2}
    before = c.post("/api/explore/subgraph", json=body).json()
    assert before["communities"] == [] and before["node_communities"] == []
    api_engine.build_communities(project="alpha")

    got = c.post("/api/explore/subgraph", json=body).json()

    member = api_engine.store.communities_of("alpha", [n["id"] for n in got["nodes"]])
    assert member and len(got["node_communities"]) == len(got["nodes"])
    for node, slot in zip(got["nodes"], got["node_communities"], strict=True):
        want = member[node["id"]][0] if node["id"] in member else None
        assert (got["communities"][slot] if slot >= 0 else None) == want
    assert sorted(set(got["communities"])) == sorted(got["communities"])


def test_subgraph_refuses_bad_bounds_and_unknown_ids(
    keyed: tuple[httpx.Client, dict[str, str]],
) -> None:
    c, ids = keyed
    bodies: list[dict[str, object]] = [
        {"ids": []},
        {"ids": [ids["hub"]], "depth": 4},
        {"ids": [ids["hub"]], "limit": 10_001},
        {"ids": [ids["hub"]], "bogus": 1},
    ]
    for body in bodies:
        r = c.post("/api/explore/subgraph", json=body)
        assert r.status_code == 400, body
        assert r.json()["error"]["code"] == "invalid_request"
    r = c.post("/api/explore/subgraph", json={"ids": ["nope"]})
    assert r.status_code == 404


def test_object_view_has_relationships_both_ways_and_mentions(
    keyed: tuple[httpx.Client, dict[str, str]],
) -> None:
    c, ids = keyed
    view = c.get(f"/api/explore/objects/{ids['l0']}").json()
    assert view["object"]["id"] == ids["l0"]
    assert view["relationships_total"] == 3
    ways = sorted((r["direction"], r["relationship"]["type"]) for r in view["relationships"])
    assert ways == [("in", "HAS"), ("out", "GROWS"), ("out", "GROWS")]
    hub_side = next(r for r in view["relationships"] if r["direction"] == "in")
    assert hub_side["other"] == {"id": ids["hub"], "type": "Hub", "name": "The Hub"}
    hub = c.get(f"/api/explore/objects/{ids['hub']}", params={"limit": 3}).json()
    assert len(hub["relationships"]) == 3 and hub["relationships_total"] == LEAVES
    assert [ch["text"] for ch in hub["chunks"]] == ["The Hub is central."]
    assert hub["object"]["embedding"]["embedded_text"]
    assert c.get("/api/explore/objects/nope").status_code == 404


def test_embedding_failures_list_the_rows_and_their_errors(
    api_engine: Engine, base_url: str, http: Http
) -> None:
    ids = star(api_engine)
    key = api_engine.create_api_key("alpha", ["read"])[0]
    c = http(base_url, key)
    assert c.get("/api/explore/embedding-failures").json() == []
    # the object's text changes, and the embedder's one attempt at it fails
    api_engine.update_object(ids["l3"], {"properties": {"note": "changed"}}, project="alpha")
    store, now = api_engine.store, time.time()
    claims = store.claim(Kind.OBJECT, project="alpha", limit=10, now=now)
    assert [c.id for c in claims] == [ids["l3"]]
    store.fail(
        Kind.OBJECT, claims, "provider down: 503", now=now, max_attempts=1, backoff_seconds=60
    )
    failures = c.get("/api/explore/embedding-failures").json()
    assert [(f["id"], f["kind"], f["last_error"]) for f in failures] == [
        (ids["l3"], "object", "provider down: 503")
    ]


def test_another_projects_rows_do_not_exist(api_engine: Engine, base_url: str, http: Http) -> None:
    theirs = star(api_engine, project="beta")
    star(api_engine, project="alpha")
    c = http(base_url, api_engine.create_api_key("alpha", ["read"])[0])
    assert c.post("/api/explore/subgraph", json={"ids": [theirs["hub"]]}).status_code == 404
    assert c.get(f"/api/explore/objects/{theirs['hub']}").status_code == 404
    assert c.get("/api/explore/overview").json()["project"] == "alpha"
    r = c.post("/api/explore/subgraph", json={"ids": [theirs["hub"]], "project": "beta"})
    assert r.status_code == 403


def test_the_ui_needs_no_key_and_sends_a_strict_policy(base_url: str, http: Http) -> None:
    c = http(base_url)
    assert c.get("/api/explore/session").status_code == 401
    page = c.get("/ui/")
    assert page.status_code == 200 and "<title>kgsearch</title>" in page.text
    policy = page.headers["content-security-policy"]
    assert "script-src 'self'" in policy and "unsafe-inline" not in policy
    assert page.headers["x-frame-options"] == "DENY"
    js = c.get("/ui/static/app.js")
    assert js.status_code == 200 and "javascript" in js.headers["content-type"]
    assert js.headers["x-content-type-options"] == "nosniff"
    assert c.get("/ui").status_code == 307
    assert c.get("/ui/static/vendor/sigma.min.js").status_code == 200
    assert c.get("/ui/static/../../app.py").status_code == 404
    assert "innerHTML" not in "".join(
        c.get(f"/ui/static/{name}.js").text
        for name in ("app", "search", "object", "graph", "ingest", "status")
    )


def test_keyless_ui_refuses_a_foreign_page(
    api_engine: Engine, serve: Callable[..., str], http: Http
) -> None:
    base = serve(create_app(api_engine, keys=False))
    c = http(base)
    assert c.get("/api/explore/session").json()["keyless"] is True
    evil = c.get("/api/explore/session", headers={"Origin": "http://evil.example"})
    assert evil.status_code == 403
    rebound = c.get("/api/explore/session", headers={"Host": "evil.example"})
    assert rebound.status_code == 403
