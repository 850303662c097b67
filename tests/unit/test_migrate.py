"""Store-to-store migration, SQLite ⇄ PostgreSQL: everything arrives, nothing is re-embedded."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

from kgsearch.cli import cli
from kgsearch.engine import Engine
from kgsearch.errors import Conflict, StoreError
from kgsearch.migrate import migrate_store
from kgsearch.model import ChunkIn, Kind, MentionIn, ObjectIn, ObjectRef, RelationshipIn, SourceIn
from kgsearch.store import connect
from kgsearch.store.base import Store
from kgsearch.testing import FakeEmbedder


def build(store: Store, project: str = "default") -> Engine:
    """A small graph of every kind, embedded, then one edit left stale."""
    engine = Engine(store, embedder=FakeEmbedder(32), project=project)
    engine.add_objects(
        [
            ObjectIn(type="Person", key=f"p{i}", properties={"name": f"Person {i}", "n": i})
            for i in range(30)
        ]
    )
    engine.add_relationships(
        [
            RelationshipIn(
                type="knows",
                source=ObjectRef(type="Person", key=f"p{i}"),
                target=ObjectRef(type="Person", key=f"p{i + 1}"),
            )
            for i in range(29)
        ]
    )
    engine.add_sources([SourceIn(id="s1", title="Memo")])
    engine.add_chunks([ChunkIn(id="c1", source_id="s1", text="Person 3 knows Person 4.")])
    engine.add_mentions([MentionIn(chunk_id="c1", object=ObjectRef(type="Person", key="p3"))])
    engine.embed_pending()
    engine.add_objects([ObjectIn(type="Person", key="p0", properties={"name": "Renamed"})])
    engine.create_api_key(project, "read", name="reader")
    return engine


def snapshot(store: Store, project: str = "default") -> dict[str, Any]:
    """Everything a user could read back, ids included."""
    rows: dict[str, Any] = {}
    for kind in ("object", "relationship", "chunk", "source", "mention"):
        items = list(store.iter_rows(project, kind))
        rows[kind] = sorted(
            json.dumps(i.model_dump(mode="json", exclude={"embedding"}), sort_keys=True)
            for i in items
        )
    rows["status"] = {
        (c.kind.value, s): n
        for c in store.embedding_counts(project)
        for s, n in c.by_status.items()
    }
    return rows


def test_sqlite_to_postgres_and_back_keeps_rows_and_vectors(
    tmp_path: Path, pg_factory: Any
) -> None:
    source = connect(f"sqlite:///{tmp_path / 'a.db'}")
    build(source)
    target = pg_factory()
    report = migrate_store(source, target)
    assert report.verified, report.mismatches
    assert report.api_keys == 1
    assert snapshot(target) == snapshot(source)
    assert target.counts("default") == source.counts("default")
    # the stale object arrives pending; every current vector is copied (PostgreSQL keeps
    # vectors as halfvec: float16, so a round trip through it rounds to ~1e-3)
    stale = [o for o in target.iter_rows("default", "object") if o.embedding.status == "pending"]
    assert [o.properties["name"] for o in stale] == ["Renamed"]
    for kind in Kind:
        ids = [
            i
            for i, _ in source.vector_search(
                "default", kind, np.ones(32, dtype=np.float32), limit=100
            )
        ]
        theirs = target.vectors("default", kind, ids)
        ours = source.vectors("default", kind, ids)
        assert ours.keys() == theirs.keys()
        for i in ours:
            np.testing.assert_allclose(theirs[i], ours[i], rtol=1e-3, atol=1e-3)
    # the same ranking (scores equal up to float rounding, which may reorder exact ties)
    query = FakeEmbedder(32).embed_query("Person 7")
    theirs_hits = target.vector_search("default", Kind.OBJECT, query, limit=5)
    ours_hits = source.vector_search("default", Kind.OBJECT, query, limit=5)
    assert theirs_hits[0][0] == ours_hits[0][0]
    np.testing.assert_allclose([s for _, s in theirs_hits], [s for _, s in ours_hits], atol=1e-5)

    # nothing is re-embedded but what the rename made stale: the object and its edge
    embedder = FakeEmbedder(32)
    Engine(target, embedder=embedder).embed_pending()
    assert sorted(embedder.embedded_texts) == ["Renamed knows Person 1", "[Type: #person] Renamed"]
    key = target.api_keys("default")[0]
    assert target.find_api_key(key.id) == source.find_api_key(key.id)

    back = connect(f"sqlite:///{tmp_path / 'b.db'}")
    try:
        again = migrate_store(target, back)
        assert again.verified, again.mismatches
        assert snapshot(back) == snapshot(target)
    finally:
        back.close()
        source.close()


def test_migrating_twice_is_a_no_op(tmp_path: Path, pg_factory: Any) -> None:
    source = connect(f"sqlite:///{tmp_path / 'a.db'}")
    try:
        build(source)
        target = pg_factory()
        migrate_store(source, target)
        first = snapshot(target)
        assert migrate_store(source, target).verified
        assert snapshot(target) == first
    finally:
        source.close()


def test_a_conflicting_target_is_left_unchanged(tmp_path: Path, pg_factory: Any) -> None:
    source = connect(f"sqlite:///{tmp_path / 'a.db'}")
    try:
        build(source)
        target = pg_factory()
        Engine(target, embedder=FakeEmbedder(32)).add_objects(
            [ObjectIn(id="other-id", type="Person", key="p5", properties={"name": "Clash"})]
        )
        before = snapshot(target)
        with pytest.raises(Conflict, match="same type and key"):
            migrate_store(source, target)
        assert snapshot(target) == before
    finally:
        source.close()


def test_cli_migrate_reports_verified_counts(
    tmp_path: Path, pg_factory: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KGSEARCH_EMBED__MODEL", "fake:32")
    path = tmp_path / "a.db"
    source = connect(f"sqlite:///{path}")
    build(source, project="demo")
    counts = source.counts("demo")
    source.close()
    url = pg_factory.postgres_store_url()
    result = CliRunner().invoke(
        cli, ["--json", "migrate", "--from", str(path), "--to", url], catch_exceptions=False
    )
    assert result.exit_code == 0, result.output
    value = json.loads(result.stdout)
    assert value["verified"] is True
    assert value["projects"]["demo"] == counts
    # the renamed object and its one edge are stale: not copied, embedded again later
    assert value["vectors"]["demo"] == {"object": 29, "relationship": 28, "chunk": 1}


def test_cli_migrate_of_a_missing_project_fails_cleanly(tmp_path: Path, pg_factory: Any) -> None:
    path = tmp_path / "a.db"
    connect(f"sqlite:///{path}").close()
    result = CliRunner().invoke(
        cli,
        ["migrate", "--from", str(path), "--to", pg_factory.postgres_store_url(), "--project", "x"],
    )
    assert result.exit_code == 1
    assert "no project 'x'" in result.output
    assert "Traceback" not in result.output


def test_api_keys_of_a_project_without_rows_are_copied(tmp_path: Path, store: Store) -> None:
    source = connect(f"sqlite:///{tmp_path / 'a.db'}")
    try:
        build(source)
        Engine(source, embedder=FakeEmbedder(32)).create_api_key("keys-only", "read")
        assert "keys-only" not in source.projects()

        report = migrate_store(source, store)

        assert report.verified, report.mismatches
        assert report.api_keys == 2
        assert [k.id for k in store.api_keys("keys-only")] == [
            k.id for k in source.api_keys("keys-only")
        ]
        assert migrate_store(source, store, projects=["keys-only"]).api_keys == 0
    finally:
        source.close()


class DroppingStore:
    """A target that silently loses every mention written to it."""

    def __init__(self, store: Store) -> None:
        self._store = store

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    def add_mentions(self, project: str, mentions: Any) -> None:
        return None


def test_a_copy_that_does_not_match_rolls_back(tmp_path: Path, store: Store) -> None:
    source = connect(f"sqlite:///{tmp_path / 'a.db'}")
    try:
        build(source)
        before = snapshot(store)

        with pytest.raises(StoreError, match="default: mentions source 1, target 0") as caught:
            migrate_store(source, DroppingStore(store))

        assert caught.value.details["mismatches"] == ["default: mentions source 1, target 0"]
        assert snapshot(store) == before
        assert store.counts("default") == {k: 0 for k in source.counts("default")}
        assert store.api_keys() == []
    finally:
        source.close()


def test_cli_migrate_of_a_copy_that_does_not_match_exits_1_and_rolls_back(
    tmp_path: Path, pg_factory: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "a.db"
    source = connect(f"sqlite:///{path}")
    build(source)
    source.close()
    url = pg_factory.postgres_store_url()

    def opened(target: str) -> Any:
        store = pg_factory.track(connect(target))
        return store if target == str(path) else DroppingStore(store)

    monkeypatch.setattr(sys.modules["kgsearch.cli.migrate"], "connect", opened)
    result = CliRunner().invoke(cli, ["--json", "migrate", "--from", str(path), "--to", url])
    assert result.exit_code == 1
    error = json.loads(result.stdout)["error"]
    assert error["code"] == "store_error"
    assert error["details"]["mismatches"] == ["default: mentions source 1, target 0"]
    target = pg_factory.track(connect(url))
    assert target.counts("default") == {k: 0 for k in target.counts("default")}
    assert target.api_keys() == []
