"""Communities over REST: build, status, list, one community, an object's communities,
project isolation and clean errors."""

from __future__ import annotations

from collections.abc import Callable

import httpx

from kgsearch import Engine
from kgsearch.model import ObjectIn, ObjectRef, RelationshipIn

Http = Callable[..., httpx.Client]


def _graph(engine: Engine, project: str) -> list[str]:
    names = ["Ada", "Bob", "Cy", "Di"]
    objects = engine.add_objects([ObjectIn(type="person", key=n) for n in names], project=project)
    engine.add_relationships(
        [
            RelationshipIn(
                type="KNOWS",
                source=ObjectRef(type="person", key=a),
                target=ObjectRef(type="person", key=b),
                description=f"{a} knows {b}",
            )
            for i, a in enumerate(names)
            for b in names[i + 1 :]
        ],
        project=project,
    )
    return [o.id for o in objects]


def test_build_list_show_and_membership(base_url: str, http: Http, api_engine: Engine) -> None:
    key, _ = api_engine.create_api_key("alpha", "read,write")
    other, _ = api_engine.create_api_key("beta", "read")
    c = http(base_url, key)
    ids = _graph(api_engine, "alpha")

    built = c.post("/api/communities/build", json={"method": "extractive"})
    assert built.status_code == 200, built.text
    assert built.json()["build"]["communities"] == 1 and built.json()["reports"] == 1
    status = c.get("/api/communities/status").json()
    assert status["reports"] == 1 and status["stale"] is False
    listed = c.get("/api/communities", params={"level": 0}).json()
    assert listed["total"] == 1 and listed["items"][0]["title"]
    cid = listed["items"][0]["id"]
    one = c.get(f"/api/communities/{cid}").json()
    assert sorted(one["community"]["members"]) == sorted(ids)
    assert one["report"]["findings"] and {m["name"] for m in one["members"]} >= {"Ada"}
    member = c.get(f"/api/graph/objects/{ids[0]}/communities").json()
    assert [x["id"] for x in member["communities"]] == [cid]

    assert c.get("/api/communities/c0-nope").status_code == 404
    assert c.get("/api/graph/objects/nope/communities").status_code == 404
    bad = c.post("/api/communities/build", json={"max_cluster_size": 0})
    assert bad.status_code in (400, 422) and "error" in bad.json()
    beta = http(base_url, other)
    assert beta.get("/api/communities").json()["total"] == 0
    assert beta.get(f"/api/communities/{cid}").status_code == 404
    assert beta.post("/api/communities/build", json={}).status_code == 403
