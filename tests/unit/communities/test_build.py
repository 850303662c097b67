"""Community builds end to end on a real SQLite store: detect, store whole, report
(extractive and through a scripted model), search and pack reports, rebuild only what
changed, refuse a build whose graph changed meanwhile."""

from __future__ import annotations

import json
from collections.abc import Sequence

import pytest

from kgsearch import Engine, connect
from kgsearch.communities.reports import PROMPT_VERSION
from kgsearch.errors import Conflict, InvalidRequest, NotFound
from kgsearch.io.documents import Document
from kgsearch.lifecycle.communities import BuildOptions, build_communities
from kgsearch.llm.base import Message
from kgsearch.llm.fake import FakeLLM
from kgsearch.model import ObjectIn, ObjectRef, RelationshipIn
from kgsearch.store.base import Store
from kgsearch.testing import FakeEmbedder, FakeExtractor
from kgsearch.testing.stores import StoreFactory

_GROUPS = {
    "astro": ["Apollo", "Gemini", "Mercury", "Saturn V", "Houston", "Armstrong"],
    "cook": ["Pasta", "Basil", "Tomato", "Olive oil", "Garlic", "Parmesan"],
}


def _engine(store: Store) -> Engine:
    engine = Engine(store, embedder=FakeEmbedder(32), project="p")
    objects = [
        ObjectIn(type="Thing", key=name, properties={"description": f"{name} belongs to {group}."})
        for group, names in _GROUPS.items()
        for name in names
    ]
    engine.add_objects(objects)
    rels = []
    for names in _GROUPS.values():
        for i, a in enumerate(names):
            for b in names[i + 1 :]:
                rels.append(_rel(a, b))
    rels.append(_rel("Houston", "Pasta", weight=0.1))
    engine.add_relationships(rels)
    return engine


def _rel(a: str, b: str, weight: float = 1.0) -> RelationshipIn:
    return RelationshipIn(
        type="RELATED_TO",
        source=ObjectRef(type="Thing", key=a),
        target=ObjectRef(type="Thing", key=b),
        weight=weight,
        description=f"{a} goes with {b}",
    )


@pytest.fixture
def store() -> Store:
    return connect(":memory:")


def test_a_build_stores_both_groups_with_cited_extractive_reports(store: Store) -> None:
    engine = _engine(store)
    report = engine.build_communities()
    assert report.build is not None and report.build.communities == 2
    assert report.reports == 2 and report.failed == 0 and report.changed == 2
    listed = engine.list_communities()
    assert listed.total == 2
    names = {o.id: o.key for o in store.iter_rows("p", "object")}
    for item in listed.items:
        detail = engine.community(item["id"])
        members = {names[m] for m in detail.community.members}
        assert members in ({*_GROUPS["astro"]}, {*_GROUPS["cook"]})
        assert detail.report is not None and detail.report.method == "extractive"
        cited = {o for f in detail.report.findings for o in f.objects}
        assert cited and cited <= set(detail.community.members)
        assert 0 < detail.report.rating <= 10
        assert item["title"] == detail.report.title
    status = engine.community_status()
    assert status.reports == 2 and status.missing_reports == 0 and not status.stale


def test_an_objects_communities_and_unknown_ids(store: Store) -> None:
    engine = _engine(store)
    engine.build_communities()
    apollo = next(o for o in store.iter_rows("p", "object") if o.key == "Apollo")
    membership = engine.object_communities(apollo.id)
    assert len(membership.communities) == 1 and membership.communities[0]["title"]
    with pytest.raises(NotFound):
        engine.community("c0-nope")
    with pytest.raises(NotFound):
        engine.object_communities("nope")


def test_an_unchanged_graph_rebuilds_no_report(store: Store) -> None:
    engine = _engine(store)
    engine.build_communities()
    again = engine.build_communities()
    assert again.reports == 0 and again.kept == 2 and again.changed == 0
    for _ in range(2):  # every forced build writes every report again
        assert engine.build_communities(force=True).reports == 2


def test_a_small_change_keeps_reports_and_a_big_one_renews_only_its_community(
    store: Store,
) -> None:
    engine = _engine(store)
    engine.build_communities()
    before = {i["id"]: i["title"] for i in engine.list_communities().items}
    # one new member of "cook" (6 → 7 members: Jaccard 6/7 < 0.9) changes that community only
    engine.add_objects([ObjectIn(type="Thing", key="Oregano")])
    engine.add_relationships([_rel("Oregano", n) for n in _GROUPS["cook"]])
    status = engine.community_status()
    assert status.stale
    report = engine.build_communities()
    assert report.changed == 1 and report.kept == 1 and report.reports == 1
    after = {i["id"]: i["title"] for i in engine.list_communities().items}
    assert len(set(before) & set(after)) == 1  # astro kept its id and report
    assert report.removed == 1  # the old cook report went with its community


def test_deleting_a_group_removes_its_stale_report(store: Store) -> None:
    engine = _engine(store)
    engine.build_communities()
    cook = [o.id for o in store.iter_rows("p", "object") if o.key in _GROUPS["cook"]]
    engine.delete("object", cook)
    report = engine.build_communities()
    assert report.build is not None and report.build.communities == 1
    assert report.removed == 1
    assert engine.community_status().reports == 1


def test_an_empty_graph_says_why_and_clears_old_communities(store: Store) -> None:
    engine = Engine(store, embedder=FakeEmbedder(32), project="p")
    report = engine.build_communities()
    assert report.build is not None and report.build.communities == 0
    assert report.reason and "empty" in report.reason


def test_a_graph_changed_during_the_build_is_refused_whole(store: Store) -> None:
    engine = _engine(store)
    engine.build_communities()
    before = engine.list_communities()
    real = store.iter_rows

    def iter_rows_then_write(project: str, kind: str):
        rows = list(real(project, kind))  # type: ignore[arg-type]
        if kind == "relationship":  # another writer, after the build read the graph
            engine.add_objects([ObjectIn(type="Thing", key="Intruder")])
            engine.add_relationships([_rel("Intruder", "Apollo")])
        return iter(rows)

    store.iter_rows = iter_rows_then_write  # type: ignore[method-assign]
    try:
        with pytest.raises(Conflict, match="changed while communities were being built"):
            engine.build_communities(max_cluster_size=3)
    finally:
        store.iter_rows = real  # type: ignore[method-assign]
    assert engine.list_communities() == before


def test_bad_parameters_are_refused(store: Store) -> None:
    engine = _engine(store)
    with pytest.raises(InvalidRequest):
        engine.build_communities(max_cluster_size=0)
    with pytest.raises(InvalidRequest):
        engine.build_communities(min_jaccard=0.2)
    with pytest.raises(InvalidRequest, match="chat model"):
        build_communities(store, "p", BuildOptions(method="llm"))


def test_project_isolation(store: Store) -> None:
    engine = _engine(store)
    engine.build_communities()
    other = Engine(store, embedder=FakeEmbedder(32), project="q")
    assert other.community_status().build is None
    assert other.list_communities().total == 0


def test_reports_embed_and_the_communities_recipe_packs_them_within_the_budget(
    store: Store,
) -> None:
    engine = _engine(store)
    before = engine.search("pasta", recipe="communities")
    assert before.communities == [] and "communities build" in before.metadata["warnings"][0]
    engine.build_communities()
    engine.embed_pending()
    found = engine.search("pasta basil tomato", recipe="communities", limit=2)
    assert found.results == [] and found.communities
    top = engine.community(found.communities[0].id)
    assert {m["key"] for m in top.members} == set(_GROUPS["cook"])
    assert found.metadata["communityResultCount"] == len(found.communities)
    plain = engine.search("pasta basil")
    assert plain.communities == [] and "communities" not in plain.model_dump()
    for budget in (40, 80, 400):
        ctx = engine.context("pasta basil tomato", recipe="communities", max_tokens=budget)
        assert 0 < ctx.tokens <= budget
        assert "(community, rating" in ctx.context
    cited = engine.context("pasta basil tomato", recipe="global", max_tokens=300, style="sections")
    assert cited.context.startswith("## Communities") and "C1" in cited.citations
    assert cited.tokens <= 300


def _llm_reply(messages: Sequence[Message]) -> str:
    prompt = messages[-1].content
    title = "Sub-communities" if "Reports of its sub-communities" in prompt else "Group"
    return (
        "Here you go:\n```json\n"
        + json.dumps(
            {
                "title": title,
                "summary": "A tight group.",
                "rating": "7.5",
                "rating_explanation": "central",
                "findings": [
                    {
                        "summary": "Members are linked",
                        "explanation": "x",
                        "entities": [1, 2, 99],
                        "relationships": ["1"],
                    },
                    "a bare finding",
                ],
            }
        )
        + "\n```"
    )


def test_llm_reports_are_parsed_tolerantly_versioned_and_cite_real_ids(store: Store) -> None:
    _engine(store)
    llm = FakeLLM(default=_llm_reply, model="m")
    report = build_communities(store, "p", BuildOptions(method="llm"), llm=llm)
    assert report.reports == 2 and report.calls == 2 and len(llm.calls) == 2
    ids = [c.id for c in store.communities("p")]
    for r in store.community_reports("p", ids):
        assert r.method == "llm" and r.prompt_version == PROMPT_VERSION
        assert r.model == "fake:m" and r.rating == 7.5
        first = r.findings[0]
        (community,) = store.communities("p", ids=[r.id])
        assert len(first.objects) == 2 and set(first.objects) <= set(community.members)
        assert len(first.relationships) == 1
        assert r.findings[1].summary == "a bare finding"
    # the same method and version again: nothing is due, no call
    assert build_communities(store, "p", BuildOptions(method="llm"), llm=llm).reports == 0
    assert len(llm.calls) == 2
    # another model: every report is due again, and records the new model
    other = FakeLLM(default=_llm_reply, model="n")
    assert build_communities(store, "p", BuildOptions(method="llm"), llm=other).reports == 2
    assert {r.model for r in store.community_reports("p", ids)} == {"fake:n"}


def test_a_parent_over_the_budget_is_written_from_its_childrens_reports(store: Store) -> None:
    engine = Engine(store, embedder=FakeEmbedder(32), project="p")
    cliques = [[f"q{c}-{i}" for i in range(4)] for c in range(4)]
    engine.add_objects([ObjectIn(type="Thing", key=k) for q in cliques for k in q])
    rels = [_rel(a, b) for q in cliques for i, a in enumerate(q) for b in q[i + 1 :]]
    rels += [_rel("q0-0", "q1-0"), _rel("q0-1", "q1-1"), _rel("q2-0", "q3-0")]
    rels += [_rel("q2-1", "q3-1"), _rel("q1-3", "q2-3", weight=0.05)]
    engine.add_relationships(rels)
    llm = FakeLLM(default=_llm_reply)
    options = BuildOptions(method="llm", max_cluster_size=4, budget_chars=300, resolution=0.5)
    report = build_communities(store, "p", options, llm=llm)
    assert report.failed == 0
    communities = store.communities("p")
    parents = [c for c in communities if any(x.parent == c.id for x in communities)]
    assert parents, "communities over 4 members are split one level further"
    for parent in parents:
        (written,) = store.community_reports("p", [parent.id])
        assert written.title == "Sub-communities"
    leaves = [c for c in communities if c not in parents]
    assert all(r.title == "Group" for r in store.community_reports("p", [c.id for c in leaves]))


def test_an_unusable_reply_fails_the_task_and_the_next_build_retries(store: Store) -> None:
    _engine(store)
    llm = FakeLLM(["no json here", "still nothing"], default=_llm_reply)
    report = build_communities(store, "p", BuildOptions(method="llm"), llm=llm)
    assert report.failed >= 1 and report.reports <= 1
    assert any("no JSON object" in e for e in report.errors)
    again = build_communities(store, "p", BuildOptions(method="llm"), llm=llm)
    assert again.failed == 0 and again.reports + report.reports == 2


def test_the_whole_cycle_on_postgresql(pg_factory: StoreFactory) -> None:
    store = pg_factory()
    engine = _engine(store)
    first = engine.build_communities()
    assert first.build is not None and first.reports == 2
    engine.embed_pending()
    found = engine.search("pasta basil tomato", recipe="communities", limit=2)
    top = engine.community(found.communities[0].id)
    assert {m["key"] for m in top.members} == set(_GROUPS["cook"])
    engine.add_objects([ObjectIn(type="Thing", key="Oregano")])
    engine.add_relationships([_rel("Oregano", n) for n in _GROUPS["cook"]])
    assert engine.community_status().stale
    again = engine.build_communities()
    assert (again.kept, again.changed, again.reports, again.removed) == (1, 1, 1, 1)


def test_after_an_ingest_and_a_document_delete_only_the_touched_community_is_reported(
    store: Store,
) -> None:
    engine = Engine(
        store,
        embedder=FakeEmbedder(32),
        project="p",
        extractors=lambda name, domain: FakeExtractor(),
    )

    def doc(source: str, text: str) -> Document:
        return Document(source_id=source, title=source, text=text, sha256=source)

    def pairs(*names: str) -> str:
        return " ".join(f"{a} and {b}." for i, a in enumerate(names) for b in names[i + 1 :])

    space = pairs("Apollo", "Gemini", "Mercury", "Saturn")
    food = pairs("Pasta", "Basil", "Tomato", "Garlic")
    engine.ingest(documents=[doc("space", space), doc("food", food)], extractor="fake")
    first = engine.build_communities()
    assert first.build is not None and first.build.communities == 2 and first.reports == 2
    titles = {i["id"]: i["title"] for i in engine.list_communities().items}

    more = pairs("Oregano", "Pasta", "Basil") + " Oregano and Tomato. Oregano and Garlic."
    engine.ingest(documents=[doc("more-food", more)], extractor="fake")
    after_ingest = engine.build_communities()
    assert (after_ingest.kept, after_ingest.changed, after_ingest.reports) == (1, 1, 1)
    kept = set(titles) & {i["id"] for i in engine.list_communities().items}
    assert len(kept) == 1  # the space community kept its id and report

    engine.delete_documents(["more-food"])
    after_delete = engine.build_communities()
    assert (after_delete.kept, after_delete.changed, after_delete.reports) == (1, 1, 1)
    assert after_delete.removed == 1  # the report of the food community with Oregano
    assert {i["id"] for i in engine.list_communities().items} == set(titles)


def test_a_broad_question_prefers_a_large_community_to_a_pair_sharing_its_words(
    store: Store,
) -> None:
    # unit: the weight of a community's size and rank in its score
    from kgsearch.search.communities import _mass

    assert _mass(40, 80.0, 40, 80.0) == 1.0
    assert 0 < _mass(2, 1.0, 40, 80.0) < _mass(6, 8.0, 40, 80.0) < _mass(20, 30.0, 40, 80.0) < 1
    assert _mass(2, 1.0, 2, 1.0) == 1.0  # nothing larger to prefer
    # end to end: a pair whose report repeats the question's words against the large
    # group's report, which names them once
    engine = _engine(store)
    pair = [
        ObjectIn(type="Thing", key=k, properties={"description": "Cooking pasta, pasta, pasta."})
        for k in ("Pasta pot", "Pasta spoon")
    ]
    engine.add_objects(pair)
    engine.add_relationships([_rel("Pasta pot", "Pasta spoon")])
    engine.build_communities()
    engine.embed_pending()
    broad = engine.search("What are the main themes?", recipe="communities", limit=3)
    assert [c.size for c in broad.communities] == [6, 6, 2]
    assert [c.score for c in broad.communities] == sorted(
        (c.score for c in broad.communities), reverse=True
    )
    # a narrow question still reaches the pair that is all about it: its report is
    # many times closer to the question than the large groups' reports
    narrow = engine.search("pasta cooking", recipe="communities", limit=3)
    assert [c.size for c in narrow.communities] == [2, 6, 6]


def test_a_rebuild_renews_the_broad_candidates_a_search_read_before(store: Store) -> None:
    engine = _engine(store)
    engine.build_communities()
    engine.embed_pending()
    before = engine.search("What are the main themes?", recipe="communities", limit=5)
    names = ["Oak", "Elm", "Ash", "Yew", "Fir", "Pine", "Larch", "Birch"]
    engine.add_objects([ObjectIn(type="Thing", key=n) for n in names])
    engine.add_relationships([_rel(a, b) for i, a in enumerate(names) for b in names[i + 1 :]])
    engine.build_communities()
    engine.embed_pending()
    after = engine.search("What are the main themes?", recipe="communities", limit=5)

    assert [c.size for c in before.communities] == [6, 6]
    assert sorted(c.size for c in after.communities) == [6, 6, 8]
