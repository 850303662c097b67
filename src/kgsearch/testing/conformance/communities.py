"""Communities: a build replaces the set atomically, membership reads both ways, reports
follow their communities (renamed, deleted) and embed like any other kind, projects
stay apart, and a build of a changed graph is refused whole."""

from __future__ import annotations

import pytest

from kgsearch.community_values import CommunityBuild, CommunityRecord, CommunityReport, Finding
from kgsearch.engine import Engine
from kgsearch.errors import Conflict, InvalidRequest
from kgsearch.model import Kind
from kgsearch.store.base import Store
from kgsearch.testing import FakeEmbedder
from kgsearch.testing.conformance.builders import DIMS, knows, person
from kgsearch.text.enrich import text_hash


def _build(build_id: str = "b1", digest: str = "d") -> CommunityBuild:
    return CommunityBuild(
        id=build_id,
        generation=0,
        seed=1,
        max_cluster_size=10,
        resolution=1.0,
        modularity=0.4,
        levels=2,
        communities=3,
        nodes=4,
        isolated=0,
        graph_digest=digest,
    )


def _community(
    cid: str, level: int, members: list[str], parent: str | None = None, build: str = "b1"
) -> CommunityRecord:
    return CommunityRecord(
        id=cid,
        level=level,
        parent=parent,
        members=tuple(sorted(members)),
        size=len(members),
        rank=float(len(members)),
        build_id=build,
    )


def _report(cid: str, title: str, level: int = 0) -> tuple[CommunityReport, str, str, int]:
    report = CommunityReport(
        id=cid,
        level=level,
        title=title,
        summary=f"{title} summary",
        findings=(Finding(summary="f1", explanation="why", objects=("a",), relationships=()),),
        rating=5.0,
        method="extractive",
        prompt_version="extractive-1",
        source_digest="s",
    )
    text = report.text()
    return report, text, text_hash(text), 1


_SET = [
    _community("c0-top", 0, ["a", "b", "c", "d"]),
    _community("c1-ab", 1, ["a", "b"], parent="c0-top"),
    _community("c1-cd", 1, ["c", "d"], parent="c0-top"),
]


def test_a_build_is_stored_whole_and_read_back(store: Store) -> None:
    assert store.community_build("p") is None
    assert store.communities("p") == []
    store.replace_communities("p", _build(), _SET)
    assert store.communities("p") == sorted(_SET, key=lambda c: (c.level, -c.rank, c.id))
    assert [c.id for c in store.communities("p", level=1)] == ["c1-ab", "c1-cd"]
    assert [c.id for c in store.communities("p", ids=["c1-cd", "nope"])] == ["c1-cd"]
    build = store.community_build("p")
    assert build is not None and build.id == "b1" and build.generation == 1
    assert build.modularity == pytest.approx(0.4) and build.created_at


def test_membership_reads_both_ways(store: Store) -> None:
    store.replace_communities("p", _build(), _SET)
    assert store.communities_of("p", ["c", "zz"]) == {"c": ["c0-top", "c1-cd"]}
    (community,) = store.communities("p", ids=["c1-ab"])
    assert community.members == ("a", "b") and community.parent == "c0-top"


def test_a_new_build_replaces_the_old_one_and_drops_stale_reports(store: Store) -> None:
    store.replace_communities("p", _build(), _SET)
    assert store.upsert_community_reports("p", [_report("c1-ab", "AB", 1)]) == 1
    assert store.upsert_community_reports("p", [_report("c1-cd", "CD", 1)]) == 1
    new = [_community("c0-new", 0, ["a", "b", "c"], build="b2")]
    removed = store.replace_communities("p", _build("b2"), new)
    assert removed == 2
    assert [c.id for c in store.communities("p")] == ["c0-new"]
    assert store.community_reports("p", ["c1-ab", "c1-cd"]) == []
    assert store.communities_of("p", ["d"]) == {}
    build = store.community_build("p")
    assert build is not None and build.id == "b2" and build.generation == 2


def test_renamed_reports_follow_their_community(store: Store) -> None:
    store.replace_communities("p", _build(), _SET)
    store.upsert_community_reports(
        "p", [_report("c0-top", "Top"), _report("c1-ab", "AB", 1), _report("c1-cd", "CD", 1)]
    )
    new = [
        _community("c0-top2", 0, ["a", "b", "c", "d", "e"], build="b2"),
        _community("c1-ab", 1, ["a", "b"], parent="c0-top2", build="b2"),
        _community("c1-cde", 1, ["c", "d", "e"], parent="c0-top2", build="b2"),
    ]
    removed = store.replace_communities(
        "p", _build("b2"), new, renamed={"c0-top": "c0-top2", "c1-ab": "c1-ab"}
    )
    assert removed == 1  # CD: its community changed past the threshold
    reports = store.community_reports("p", ["c0-top2", "c1-ab", "c1-cde", "c0-top"])
    assert [(r.id, r.title) for r in reports] == [("c0-top2", "Top"), ("c1-ab", "AB")]


def test_reports_of_unknown_communities_are_skipped(store: Store) -> None:
    store.replace_communities("p", _build(), _SET)
    assert store.upsert_community_reports("p", [_report("c9-gone", "Gone")]) == 0
    assert store.community_reports("p", ["c9-gone"]) == []


def test_a_report_round_trips_and_an_unchanged_text_keeps_its_state(store: Store) -> None:
    store.replace_communities("p", _build(), _SET)
    store.upsert_community_reports("p", [_report("c1-ab", "AB", 1)])
    (report,) = store.community_reports("p", ["c1-ab"])
    assert report.title == "AB" and report.level == 1 and report.status == "pending"
    assert report.findings[0].objects == ("a",) and report.method == "extractive"
    assert report.prompt_version == "extractive-1" and report.rating == 5.0


def test_reports_embed_and_are_found_by_both_legs(store: Store) -> None:
    engine = Engine(store, embedder=_embedder())
    store.replace_communities("p", _build(), _SET)
    store.upsert_community_reports(
        "p", [_report("c1-ab", "Alpha aviators", 1), _report("c1-cd", "Cellar dwellers", 1)]
    )
    engine.embed_pending(project="p")
    (report,) = store.community_reports("p", ["c1-cd"])
    assert report.status == "embedded"
    hits = store.text_search("p", Kind.COMMUNITY, "cellar", limit=5)
    assert [h[0] for h in hits] == ["c1-cd"]
    vector = _embedder().embed_documents([_report("c1-cd", "Cellar dwellers", 1)[1]])[0]
    found = store.vector_search("p", Kind.COMMUNITY, vector, limit=2)
    assert found[0][0] == "c1-cd"


def test_projects_keep_their_own_communities(store: Store) -> None:
    store.replace_communities("p", _build(), _SET)
    store.upsert_community_reports("p", [_report("c1-ab", "AB", 1)])
    store.replace_communities("q", _build("bq"), [_community("c0-q", 0, ["x", "y"], build="bq")])
    assert [c.id for c in store.communities("q")] == ["c0-q"]
    assert store.communities_of("q", ["a"]) == {}
    assert store.community_reports("q", ["c1-ab"]) == []
    assert store.text_search("q", Kind.COMMUNITY, "AB", limit=5) == []
    assert store.delete_communities("q") == 1
    assert store.community_build("q") is None
    assert len(store.communities("p")) == 3
    assert len(store.community_reports("p", ["c1-ab"])) == 1


def test_a_build_of_a_changed_graph_is_refused_and_writes_nothing(store: Store) -> None:
    engine = Engine(store, embedder=_embedder())
    engine.add_objects([person("a", "Ada"), person("b", "Bob")], project="p")
    digest = store.graph_digest("p")
    assert store.graph_digest("p") == digest
    store.replace_communities("p", _build(), _SET, expected_digest=digest)
    engine.add_relationships([knows("a", "b")], project="p")
    assert store.graph_digest("p") != digest
    with pytest.raises(Conflict, match="changed while communities were being built"):
        store.replace_communities(
            "p", _build("b2"), [_community("c0-x", 0, ["a"], build="b2")], expected_digest=digest
        )
    assert [c.id for c in store.communities("p")] == [c.id for c in _SET]
    build = store.community_build("p")
    assert build is not None and build.id == "b1"


def test_a_delete_changes_the_graph_digest(store: Store) -> None:
    engine = Engine(store, embedder=_embedder())
    objects = engine.add_objects([person("a", "Ada"), person("b", "Bob")], project="p")
    digest = store.graph_digest("p")
    engine.delete("object", [objects[0].id], project="p")
    assert store.graph_digest("p") != digest


def test_an_inconsistent_set_is_refused_before_any_write(store: Store) -> None:
    store.replace_communities("p", _build(), _SET)
    orphan = [_community("c1-x", 1, ["a"], parent="c0-missing")]
    with pytest.raises(InvalidRequest, match="parent"):
        store.replace_communities("p", _build(), orphan)
    with pytest.raises(InvalidRequest, match="unique"):
        store.replace_communities("p", _build(), [_SET[0], _SET[0]])
    assert len(store.communities("p")) == 3


def _embedder() -> FakeEmbedder:
    return FakeEmbedder(DIMS)


def test_an_empty_build_clears_the_set_and_its_reports(store: Store) -> None:
    store.replace_communities("p", _build(), _SET)
    store.upsert_community_reports("p", [_report("c0-top", "Top")])
    empty = _build("b0").model_copy(update={"communities": 0, "levels": 0})
    assert store.replace_communities("p", empty, []) == 1
    assert store.communities("p") == [] and store.communities_of("p", ["a"]) == {}
    assert store.community_reports("p", ["c0-top"]) == []
    build = store.community_build("p")
    assert build is not None and build.communities == 0 and build.generation == 2
