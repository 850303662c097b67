"""Entity resolution over REST: candidates, merge (refused across types), split."""

from __future__ import annotations

from collections.abc import Callable

import httpx

from kgsearch import Engine
from kgsearch.model import ObjectIn

Http = Callable[..., httpx.Client]


def test_candidates_merge_and_split(base_url: str, http: Http, api_engine: Engine) -> None:
    key, _ = api_engine.create_api_key("alpha", "read,write")
    c = http(base_url, key)
    ada, twin, film = api_engine.add_objects(
        [
            ObjectIn(type="person", key="Jesse James"),
            ObjectIn(type="person", key="JESSE JAMES"),
            ObjectIn(type="film", key="Jesse James"),
        ],
        project="alpha",
    )

    proposed = c.get("/api/entities/candidates", params={"vectors": "false"}).json()
    refused = c.post("/api/entities/merge", json={"keep": ada.id, "merge": [film.id]})
    merged = c.post("/api/entities/merge", json={"keep": ada.id, "merge": [twin.id]})
    split = c.post("/api/entities/split", json={"keep": ada.id, "merged": twin.id})
    unknown = c.post("/api/entities/split", json={"keep": ada.id, "merged": "nope"})

    pairs = [{p["keep"], p["merge"]} for p in proposed["proposals"]]
    assert pairs == [{ada.id, twin.id}]  # the film stays apart
    assert refused.status_code == 400 and "incompatible types" in refused.text
    assert merged.status_code == 200 and merged.json()["objects"] == [twin.id]
    assert split.status_code == 200
    assert api_engine.get_object(twin.id, project="alpha").key == "JESSE JAMES"
    assert unknown.status_code == 404
