"""The film graph the Citus search tests seed on each layout, and how they compare
rankings: every recipe on a distributed (or spread) store against the same graph
elsewhere."""

from __future__ import annotations

from kgsearch.engine import Engine
from kgsearch.model import ChunkIn, MentionIn, ObjectIn, ObjectRef, RelationshipIn, SourceIn
from kgsearch.store.base import Store
from kgsearch.testing import FakeEmbedder

__all__ = ["MOVIES", "QUESTIONS", "person", "ranked", "seed"]

MOVIES = {
    "Jesse James": ("Henry King", ["Tyrone Power", "Henry Fonda"]),
    "The Grapes of Wrath": ("John Ford", ["Henry Fonda", "Jane Darwell"]),
    "Young Mr. Lincoln": ("John Ford", ["Henry Fonda", "Alice Brady"]),
    "In Old Chicago": ("Henry King", ["Tyrone Power", "Alice Brady"]),
}
# the node_distance recipe's centre per engine (Henry Fonda's id in its store)
CENTRES: dict[int, str] = {}
QUESTIONS = ["who directed Jesse James", "films starring Henry Fonda", "John Ford"]


def seed(store: Store, project: str) -> Engine:
    """The movie graph, with one chunk per movie mentioning its director, embedded."""
    engine = Engine(store, embedder=FakeEmbedder(32), project=project)
    people = sorted({p for d, cast in MOVIES.values() for p in (d, *cast)})
    engine.add_objects([ObjectIn(type="Movie", key=m) for m in MOVIES])
    made = engine.add_objects([ObjectIn(type="Person", key=p) for p in people])
    # node_distance ranks by hops from a centre
    CENTRES[id(engine)] = next(o.id for o in made if o.key == "Henry Fonda")
    rels = []
    for movie, (director, cast) in MOVIES.items():
        ref = ObjectRef(type="Movie", key=movie)
        rels.append(RelationshipIn(type="DIRECTED_BY", source=ref, target=person(director)))
        rels += [RelationshipIn(type="STARRING", source=ref, target=person(p)) for p in cast]
    engine.add_relationships(rels)
    engine.add_sources([SourceIn(id="notes", title="Film notes")])
    engine.add_chunks(
        [
            ChunkIn(id=f"c{i}", text=f"{m} was directed by {d}.", source_id="notes")
            for i, (m, (d, _)) in enumerate(MOVIES.items())
        ]
    )
    engine.add_mentions(
        [
            MentionIn(chunk_id=f"c{i}", object=ObjectRef(type="Movie", key=m))
            for i, m in enumerate(MOVIES)
        ]
    )
    engine.embed_pending()
    return engine


def person(key: str) -> ObjectRef:
    return ObjectRef(type="Person", key=key)


def ranked(engine: Engine, query: str, recipe: str) -> list[tuple[str, str]]:
    centre = {"center_id": CENTRES[id(engine)]} if recipe == "node_distance" else {}
    found = engine.search(query, recipe=recipe, limit=8, **centre)
    return [(r.type, r.id) for r in found.results]
