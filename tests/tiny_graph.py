"""The tiny graph the REST tests share: two objects, one relationship, a source with a chunk.

``ADA``, ``ACME`` and ``WORKS`` are request bodies; ``seed(engine)`` writes them (and a
source with one chunk) into a project and embeds everything.
"""

from __future__ import annotations

from kgsearch import ChunkIn, Engine, ObjectIn, RelationshipIn, SourceIn

ADA = {"type": "Person", "key": "ada", "properties": {"name": "Ada Lovelace", "role": "analyst"}}
ACME = {"type": "Org", "key": "acme", "properties": {"name": "Acme Corp"}}
WORKS = {
    "type": "WORKS_FOR",
    "source": {"type": "Person", "key": "ada"},
    "target": {"type": "Org", "key": "acme"},
}


def seed(engine: Engine, project: str = "alpha") -> None:
    """A tiny embedded graph: two objects, one relationship, a source with a chunk."""
    engine.add_objects(
        [ObjectIn.model_validate(ADA), ObjectIn.model_validate(ACME)], project=project
    )
    engine.add_relationships([RelationshipIn.model_validate(WORKS)], project=project)
    engine.add_sources([SourceIn(id="doc1", title="Analytical engines")], project=project)
    engine.add_chunks(
        [
            ChunkIn(
                id="c1", text="The analytical engine computes Bernoulli numbers.", source_id="doc1"
            )
        ],
        project=project,
    )
    engine.embed_pending()
