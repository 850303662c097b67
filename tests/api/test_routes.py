"""The REST routes over a real uvicorn server: CRUD, ingestion, search, embeddings."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from live_server import wait_for
from tiny_graph import ACME, ADA, WORKS, seed

from kgsearch import Engine, ObjectIn, connect
from kgsearch.api.app import create_app
from kgsearch.store.sqlite.schema import SCHEMA_VERSION
from kgsearch.testing import FailingEmbedder

Api = Callable[..., httpx.Client]
Http = Callable[..., httpx.Client]
Serve = Callable[..., str]


@pytest.fixture
def api(base_url: str, http: Http, api_engine: Engine) -> Api:
    """A client factory for a keyed server over ``api_engine`` (project alpha)."""
    key, _ = api_engine.create_api_key("alpha", "read,write,debug")
    base = base_url
    clients: dict[str | None, httpx.Client] = {}

    def make(k: str | None = key) -> httpx.Client:
        if k not in clients:
            clients[k] = http(base, k)
        return clients[k]

    return make


@pytest.fixture
def seeded(api: Api, api_engine: Engine) -> httpx.Client:
    """A full-scope client over the seeded graph."""
    seed(api_engine)
    return api()


def ids(engine: Engine) -> dict[str, str]:
    """Ids of the seeded rows by short name."""
    ada = engine.get_object_by_key("Person", "ada", project="alpha").id
    acme = engine.get_object_by_key("Org", "acme", project="alpha").id
    rel = engine.list_rows("relationship", project="alpha").items[0].id
    return {"ada": ada, "acme": acme, "rel": rel}


# health and docs ---------------------------------------------------------------------
def test_health_needs_no_key(api: Api, api_engine: Engine) -> None:
    response = api(None).get("/health")

    schema = SCHEMA_VERSION  # the store's migrations, counted per backend
    if type(api_engine.store).__module__.startswith("kgsearch.store.postgres"):
        from kgsearch.store.postgres.schema import SCHEMA_VERSION as schema
    assert (response.status_code, response.json()) == (
        200,
        {"status": "ok", "version": "0.1.0", "schema": schema, "warm": "off", "queries": None},
    )


def test_openapi_documents_the_routes_and_the_error_shape(api: Api) -> None:
    schema = api(None).get("/openapi.json").json()

    assert {
        "/api/graph/objects",
        "/api/graph/objects/bulk",
        "/api/graph/objects/{id}",
        "/api/graph/relationships",
        "/api/graph/relationships/bulk",
        "/api/graph/relationships/{id}",
        "/api/sources",
        "/api/chunks",
        "/api/text",
        "/api/search/unified",
        "/api/search/context",
        "/api/search/explain",
        "/api/embeddings/status",
        "/api/embeddings/backfill",
        "/api/embeddings/backfill/{job_id}",
        "/api/embeddings/retry",
        "/health",
    } <= set(schema["paths"])
    responses = schema["paths"]["/api/search/unified"]["post"]["responses"]
    assert "422" not in responses
    assert responses["400"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/ErrorBody"
    }
    assert api(None).get("/docs").status_code == 200


# objects -------------------------------------------------------------------------------
def test_create_object_returns_201_and_a_pending_row(api: Api) -> None:
    response = api().post("/api/graph/objects", json=ADA)

    body = response.json()
    assert response.status_code == 201
    assert (body["project"], body["type"], body["key"], body["properties"]) == (
        "alpha",
        "Person",
        "ada",
        ADA["properties"],
    )
    assert body["embedding"]["status"] == "pending"


def test_get_object_returns_the_stored_object(api: Api) -> None:
    created = api().post("/api/graph/objects", json=ADA).json()

    assert api().get(f"/api/graph/objects/{created['id']}").json() == created


def test_lookup_finds_an_object_by_type_and_key(api: Api) -> None:
    created = api().post("/api/graph/objects", json=ADA).json()

    found = api().get("/api/graph/objects/lookup", params={"type": "Person", "key": "ada"})

    assert found.json() == created


def test_patch_object_merges_properties_and_replaces_labels(api: Api) -> None:
    created = api().post("/api/graph/objects", json={**ADA, "labels": ["old"]}).json()

    response = api().patch(
        f"/api/graph/objects/{created['id']}",
        json={"properties": {"role": None, "born": 1815}, "labels": ["math"]},
    )

    body = response.json()
    assert response.status_code == 200
    assert (body["id"], body["properties"], body["labels"]) == (
        created["id"],
        {"name": "Ada Lovelace", "born": 1815},
        ["math"],
    )


def test_patch_object_cannot_change_its_type(api: Api) -> None:
    created = api().post("/api/graph/objects", json=ADA).json()

    response = api().patch(f"/api/graph/objects/{created['id']}", json={"type": "Org"})

    assert response.status_code == 400
    assert response.json()["error"]["details"]["errors"] == [
        {
            "loc": ["body", "type"],
            "msg": "Extra inputs are not permitted",
            "type": "extra_forbidden",
        }
    ]


def test_patch_missing_object_is_404(api: Api) -> None:
    response = api().patch("/api/graph/objects/nope", json={"labels": []})

    assert response.status_code == 404
    assert response.json()["error"]["code"] == "not_found"


def test_delete_object_hides_it_and_its_relationships(
    seeded: httpx.Client, api_engine: Engine
) -> None:
    row = ids(api_engine)

    response = seeded.delete(f"/api/graph/objects/{row['ada']}")

    assert (response.status_code, response.json()) == (200, {"deleted": 1})
    assert seeded.get(f"/api/graph/objects/{row['ada']}").status_code == 404
    assert seeded.get(f"/api/graph/relationships/{row['rel']}").status_code == 404


def test_delete_missing_object_is_404(api: Api) -> None:
    assert api().delete("/api/graph/objects/nope").status_code == 404


def test_bulk_create_and_bulk_delete_objects(api: Api) -> None:
    created = api().post("/api/graph/objects/bulk", json={"items": [ADA, ACME]})
    items = created.json()["items"]

    deleted = api().post(
        "/api/graph/objects/bulk-delete", json={"ids": [items[0]["id"], items[1]["id"], "nope"]}
    )

    assert created.status_code == 201
    assert [o["key"] for o in items] == ["ada", "acme"]
    assert deleted.json() == {"deleted": 2}


def test_list_objects_pages_with_a_cursor(api: Api) -> None:
    objects = [{"type": "Item", "key": f"k{i}"} for i in range(5)]
    api().post("/api/graph/objects/bulk", json={"items": objects})

    first = api().get("/api/graph/objects", params={"limit": 3}).json()
    second = (
        api().get("/api/graph/objects", params={"limit": 3, "cursor": first["next_cursor"]}).json()
    )

    assert [o["key"] for o in first["items"] + second["items"]] == [f"k{i}" for i in range(5)]
    assert second["next_cursor"] is None


def test_list_objects_filters_by_type(seeded: httpx.Client) -> None:
    page = seeded.get("/api/graph/objects", params={"type": "Org"}).json()

    assert [o["key"] for o in page["items"]] == ["acme"]


# relationships ---------------------------------------------------------------------------
def test_create_relationship_returns_201_with_its_triplet_text(api: Api) -> None:
    api().post("/api/graph/objects/bulk", json={"items": [ADA, ACME]})

    response = api().post("/api/graph/relationships", json=WORKS)

    body = response.json()
    assert response.status_code == 201
    assert (body["type"], body["embedding"]["text"], body["embedding"]["status"]) == (
        "WORKS_FOR",
        "Ada Lovelace works for Acme Corp",
        "pending",
    )


def test_create_relationship_returns_201_when_the_embedder_fails(
    serve: Serve, http: Http, tmp_path: Any
) -> None:
    engine = Engine(connect(str(tmp_path / "failing.db")), embedder=FailingEmbedder(32))
    key, _ = engine.create_api_key("alpha", "read,write")
    c = http(serve(create_app(engine, worker=True, worker_interval=0.05)), key)
    c.post("/api/graph/objects/bulk", json={"items": [ADA, ACME]})

    response = c.post("/api/graph/relationships", json=WORKS)

    rel = response.json()
    assert response.status_code == 201
    # the row is read back after its commit, and the background worker (every 50 ms)
    # may have tried and failed it by then on a busy machine
    assert rel["embedding"]["status"] in ("pending", "failed")
    wait_for(
        lambda: (
            c.get(f"/api/graph/relationships/{rel['id']}").json()["embedding"]["status"] == "failed"
        )
    )
    stored = c.get(f"/api/graph/relationships/{rel['id']}").json()
    assert stored["embedding"]["last_error"] == "ProviderError: failing embedder: every call fails"
    engine.close()


def test_create_relationship_with_a_missing_endpoint_is_404(api: Api) -> None:
    api().post("/api/graph/objects", json=ADA)

    response = api().post("/api/graph/relationships", json=WORKS)

    assert response.status_code == 404
    assert response.json()["error"]["details"] == {"missing": ["Org/acme"]}


def test_patch_relationship_changes_the_label_and_its_text(
    seeded: httpx.Client, api_engine: Engine
) -> None:
    rel = ids(api_engine)["rel"]

    body = seeded.patch(f"/api/graph/relationships/{rel}", json={"label": "is employed by"}).json()

    assert (body["label"], body["embedding"]["text"], body["embedding"]["status"]) == (
        "is employed by",
        "Ada Lovelace is employed by Acme Corp",
        "pending",
    )


def test_bulk_relationships_and_bulk_delete(api: Api) -> None:
    api().post("/api/graph/objects/bulk", json={"items": [ADA, ACME]})
    back = {**WORKS, "type": "EMPLOYS", "source": WORKS["target"], "target": WORKS["source"]}

    created = api().post("/api/graph/relationships/bulk", json={"items": [WORKS, back]}).json()
    deleted = api().post(
        "/api/graph/relationships/bulk-delete", json={"ids": [r["id"] for r in created["items"]]}
    )

    assert [r["embedding"]["text"] for r in created["items"]] == [
        "Ada Lovelace works for Acme Corp",
        "Acme Corp employs Ada Lovelace",
    ]
    assert deleted.json() == {"deleted": 2}
    assert api().get("/api/graph/relationships").json() == {"items": [], "next_cursor": None}


def test_delete_relationship(seeded: httpx.Client, api_engine: Engine) -> None:
    rel = ids(api_engine)["rel"]

    assert seeded.delete(f"/api/graph/relationships/{rel}").json() == {"deleted": 1}
    assert seeded.delete(f"/api/graph/relationships/{rel}").status_code == 404


def test_neighbors_list_objects_with_the_edge_that_reached_them(
    seeded: httpx.Client, api_engine: Engine
) -> None:
    row = ids(api_engine)

    body = seeded.get(f"/api/graph/objects/{row['ada']}/neighbors").json()

    assert body["id"] == row["ada"]
    assert [(n["id"], n["depth"], n["via"], n["object"]["key"]) for n in body["neighbors"]] == [
        (row["acme"], 1, row["rel"], "acme")
    ]


# sources, chunks, text ---------------------------------------------------------------------
def test_sources_and_chunks_round_trip(api: Api) -> None:
    source = api().post("/api/sources", json={"id": "s1", "title": "Notes"})
    chunk = api().post("/api/chunks", json={"id": "c1", "text": "hello world", "source_id": "s1"})

    assert (source.status_code, chunk.status_code) == (201, 201)
    assert api().get("/api/sources/s1").json() == source.json()
    assert api().get("/api/chunks/c1").json() == chunk.json()
    assert [c["id"] for c in api().get("/api/chunks").json()["items"]] == ["c1"]
    assert [s["id"] for s in api().get("/api/sources").json()["items"]] == ["s1"]
    assert api().delete("/api/chunks/c1").json() == {"deleted": 1}
    assert api().delete("/api/sources/s1").json() == {"deleted": 1}
    assert api().get("/api/chunks/c1").status_code == 404


def test_a_chunk_of_a_document_in_a_subdirectory_is_read_and_deleted_by_its_id(
    api: Api,
) -> None:
    # the CLI names a chunk of notes/press/a.md "doc:notes/press/a.md#0": the Ask page's
    # passage links ask for it with the slashes (and #) escaped
    chunk_id = "doc:notes/press/a.md#0"
    api().post("/api/chunks", json={"id": chunk_id, "text": "hello world"})
    path = "/api/chunks/" + quote(chunk_id, safe="")

    assert api().get(path).json()["id"] == chunk_id
    assert api().delete(path).json() == {"deleted": 1}
    assert api().get(path).status_code == 404


def test_bulk_sources_and_chunks(api: Api) -> None:
    sources = api().post("/api/sources/bulk", json={"items": [{"id": "a"}, {"id": "b"}]})
    chunks = api().post(
        "/api/chunks/bulk", json={"items": [{"id": "x", "text": "one"}, {"id": "y", "text": "two"}]}
    )

    assert [s["id"] for s in sources.json()["items"]] == ["a", "b"]
    assert [c["id"] for c in chunks.json()["items"]] == ["x", "y"]
    assert api().post("/api/chunks/bulk-delete", json={"ids": ["x", "y"]}).json() == {"deleted": 2}


def test_text_is_split_into_chunks_under_one_source(api: Api) -> None:
    text = "First paragraph about engines.\n\n" + "Second paragraph. " * 10

    response = api().post("/api/text", json={"text": text, "title": "Notes", "max_chars": 100})

    body = response.json()
    assert response.status_code == 201
    assert body["source"]["title"] == "Notes"
    assert [(c["position"], c["text"]) for c in body["chunks"]] == [
        (0, "First paragraph about engines.\n\n" + " ".join(["Second paragraph."] * 3)),
        (1, " ".join(["Second paragraph."] * 5)),
        (2, " ".join(["Second paragraph."] * 2)),
    ]
    assert {c["source_id"] for c in body["chunks"]} == {body["source"]["id"]}


def test_adding_the_same_text_again_creates_no_duplicates(api: Api) -> None:
    first = api().post("/api/text", json={"text": "Once upon a time."}).json()
    second = api().post("/api/text", json={"text": "Once upon a time."}).json()

    assert [c["id"] for c in first["chunks"]] == [c["id"] for c in second["chunks"]]
    assert len(api().get("/api/chunks").json()["items"]) == 1


# search ----------------------------------------------------------------------------------
def test_unified_search_follows_the_seed_000_contract(seeded: httpx.Client) -> None:
    # the query names the chunk's subject too: an unrelated chunk is kept out of the
    # results by the relevance floor, and this test needs a hit of every type
    query = "Ada works for Acme on the analytical engine"
    body = seeded.post("/api/search/unified", json={"query": query}).json()

    by_type = {r["type"]: r for r in body["results"]}
    assert set(by_type) == {"graph", "relationship", "text"}
    assert by_type["relationship"]["triplet_text"] == "Ada Lovelace works for Acme Corp"
    assert {"id", "score", "relationship_type", "source_id", "target_id", "properties"} <= set(
        by_type["relationship"]
    )
    assert {"id", "score", "object_type", "key", "fields"} <= set(by_type["graph"])
    assert {"id", "score", "snippet"} <= set(by_type["text"])
    meta = body["metadata"]
    assert meta["totalResults"] == len(body["results"])
    assert (
        meta["graphResultCount"] + meta["relationshipResultCount"] + meta["textResultCount"]
        == meta["totalResults"]
    )
    assert meta["fusionStrategy"] == "rrf"
    assert {"graphSearchMs", "textSearchMs", "relationshipSearchMs", "fusionMs", "totalMs"} <= set(
        meta["executionTime"]
    )
    assert body["debug"] is None


@pytest.mark.parametrize(
    ("result_types", "expected"),
    [("text", {"text"}), ("graph", {"graph", "relationship"})],
)
def test_result_types_choose_the_searched_kinds(
    seeded: httpx.Client, result_types: str, expected: set[str]
) -> None:
    body = seeded.post(
        "/api/search/unified",
        json={"query": "Ada analytical engine Acme", "resultTypes": result_types},
    ).json()

    assert {r["type"] for r in body["results"]} == expected


def test_include_debug_adds_distributions_and_pre_fusion_counts(seeded: httpx.Client) -> None:
    body = seeded.post(
        "/api/search/unified", json={"query": "Ada works for Acme", "includeDebug": True}
    ).json()

    debug = body["debug"]
    assert set(debug["score_distribution"]) == {"graph", "relationship", "text"}
    assert set(debug["score_distribution"]["relationship"]) == {"min", "max", "mean"}
    assert debug["fusion_details"]["pre_fusion_counts"]["relationship"] >= 1


def test_context_formats_hits_as_prompt_lines(seeded: httpx.Client) -> None:
    body = seeded.post(
        "/api/search/context", json={"query": "Ada works for Acme", "maxTokens": 200}
    ).json()

    assert "- Ada Lovelace works for Acme Corp" in body["context"].splitlines()
    assert 0 < body["tokens"] <= 200


def test_context_sections_with_a_query_mode(seeded: httpx.Client) -> None:
    body = seeded.post(
        "/api/search/context",
        json={"query": "Ada works for Acme", "recipe": "hybrid", "style": "sections"},
    ).json()

    assert body["context"].startswith("## Entities\n[E1] ")
    assert "## Relationships\n[R1] Ada Lovelace works for Acme Corp" in body["context"]
    assert set(body["citations"]) >= {"E1", "R1"}
    bad = seeded.post("/api/search/context", json={"query": "a", "style": "poem"})
    assert bad.status_code == 400


def test_explain_shows_legs_and_the_fused_order(seeded: httpx.Client) -> None:
    body = seeded.post("/api/search/explain", json={"query": "Ada"}).json()

    assert "objects:vector" in body["legs"]
    assert body["leg_ms"].keys() == body["legs"].keys()
    assert body["fused"][0]["found_by"]
    assert body["request"]["query"] == "Ada"
    assert any("ada" in str(s["params"]).lower() for s in body["statements"]["objects:bm25"])


# embeddings ---------------------------------------------------------------------------------
def test_embedding_status_counts_the_project(seeded: httpx.Client) -> None:
    body = seeded.get("/api/embeddings/status").json()

    assert sorted((r["kind"], r["embedded"]) for r in body["rows"]) == [
        ("chunk", 1),
        ("object", 2),
        ("relationship", 1),
    ]
    assert (body["model"], body["percent_embedded"]) == ("fake:32", 100.0)


def test_backfill_runs_in_the_background_and_can_be_polled(api: Api) -> None:
    api().post("/api/graph/objects/bulk", json={"items": [ADA, ACME]})
    api().post("/api/graph/relationships", json=WORKS)

    started = api().post("/api/embeddings/backfill", json={"batch_size": 1})
    job = started.json()

    assert (started.status_code, job["state"], job["total"]) == (202, "running", 3)
    wait_for(lambda: api().get(f"/api/embeddings/backfill/{job['id']}").json()["state"] == "done")
    done = api().get(f"/api/embeddings/backfill/{job['id']}").json()
    assert (done["processed"], done["embedded"], done["failed"]) == (3, 3, 0)
    assert done["finished_at"] is not None
    assert api().get("/api/embeddings/status").json()["percent_embedded"] == 100.0


def test_a_second_backfill_while_one_runs_is_a_conflict(api: Api) -> None:
    api().post("/api/graph/objects/bulk", json={"items": [ADA, ACME]})
    job = api().post("/api/embeddings/backfill", json={"batch_size": 1, "delay_ms": 2000}).json()

    second = api().post("/api/embeddings/backfill", json={})

    assert second.status_code == 409
    assert second.json()["error"]["details"] == {"job_id": job["id"]}


def test_backfill_dry_run_counts_without_embedding(api: Api) -> None:
    api().post("/api/graph/objects/bulk", json={"items": [ADA, ACME]})

    response = api().post("/api/embeddings/backfill", json={"dry_run": True})

    assert (response.status_code, response.json()) == (
        200,
        {
            "dry_run": True,
            "would_embed": {"object": 2, "relationship": 0, "chunk": 0, "community": 0},
            "total": 2,
        },
    )
    assert api().get("/api/embeddings/status").json()["pending"] == 2


def test_unknown_backfill_job_is_404(api: Api) -> None:
    assert api().get("/api/embeddings/backfill/abc").status_code == 404


def test_retry_requeues_failed_rows(serve: Serve, http: Http, tmp_path: Any) -> None:
    engine = Engine(connect(str(tmp_path / "retry.db")), embedder=FailingEmbedder(32))
    engine.add_objects([ObjectIn.model_validate(ADA)], project="alpha")
    engine.embed_step(project="alpha")
    key, _ = engine.create_api_key("alpha", "read,write")
    c = http(serve(create_app(engine)), key)

    response = c.post("/api/embeddings/retry", json={})

    assert response.json() == {"requeued": 1}
    assert c.get("/api/embeddings/status").json()["pending"] == 1
    engine.close()


def test_the_worker_embeds_new_rows(serve: Serve, http: Http, api_engine: Engine) -> None:
    key, _ = api_engine.create_api_key("alpha", "read,write")
    c = http(serve(create_app(api_engine, worker=True, worker_interval=0.05)), key)

    created = c.post("/api/graph/objects", json=ADA).json()

    wait_for(
        lambda: (
            c.get(f"/api/graph/objects/{created['id']}").json()["embedding"]["status"] == "embedded"
        )
    )
