"""The data of the browser tests: two projects, ``alpha`` (a small graph, a hub with
30 leaves, and rows whose names, properties, descriptions and chunk text are HTML and
``<script>``) and ``beta`` (a secret only its own key may see)."""

from __future__ import annotations

from kgsearch import ChunkIn, Engine, MentionIn, ObjectIn, RelationshipIn, SourceIn

HOSTILE_NAME = '<img src=x onerror="window.__pwned=1">Eve<script>window.__pwned=1</script>'
HOSTILE_TEXT = "<script>window.__pwned=1</script><b>bold?</b> Eve met Ada."
HOSTILE_DESC = "<iframe src=javascript:window.__pwned=1></iframe> a description"
LEAVES = 30
SUB_LEAVES = 5


def seed(engine: Engine) -> dict[str, str]:
    """Write both projects and embed them; return the ids the tests use."""
    objects = [
        ObjectIn(type="Person", key="ada", properties={"name": "Ada Lovelace", "role": "analyst"}),
        ObjectIn(type="Org", key="acme", properties={"name": "Acme Corp"}),
        ObjectIn(
            type="Person",
            key="eve",
            properties={
                "name": HOSTILE_NAME,
                "note": "<script>window.__pwned=1</script>",
                "description": HOSTILE_DESC,
            },
        ),
        ObjectIn(type="Topic", key="hub", properties={"name": "Hub Topic"}),
    ]
    objects += [
        ObjectIn(type="Leaf", key=f"leaf{i}", properties={"name": f"Leaf {i}"})
        for i in range(LEAVES)
    ]
    objects += [
        ObjectIn(type="Twig", key=f"twig{i}", properties={"name": f"Twig {i}"})
        for i in range(SUB_LEAVES)
    ]
    stored = engine.add_objects(objects, project="alpha")
    ids = {o.key: o.id for o in stored}
    rels = [
        RelationshipIn.model_validate(
            {
                "type": "WORKS_FOR",
                "source": {"type": "Person", "key": "ada"},
                "target": {"type": "Org", "key": "acme"},
            }
        ),
        RelationshipIn.model_validate(
            {
                "type": "KNOWS",
                "source": {"type": "Person", "key": "eve"},
                "target": {"type": "Person", "key": "ada"},
                "description": HOSTILE_DESC,
            }
        ),
    ]
    rels += [
        RelationshipIn.model_validate(
            {
                "type": "HAS",
                "source": {"type": "Topic", "key": "hub"},
                "target": {"type": "Leaf", "key": f"leaf{i}"},
            }
        )
        for i in range(LEAVES)
    ]
    rels += [
        RelationshipIn.model_validate(
            {
                "type": "GROWS",
                "source": {"type": "Leaf", "key": "leaf0"},
                "target": {"type": "Twig", "key": f"twig{i}"},
            }
        )
        for i in range(SUB_LEAVES)
    ]
    engine.add_relationships(rels, project="alpha")
    engine.add_sources([SourceIn(id="doc1", title="<b>Notes</b>")], project="alpha")
    engine.add_chunks([ChunkIn(id="c1", text=HOSTILE_TEXT, source_id="doc1")], project="alpha")
    engine.add_mentions([MentionIn(chunk_id="c1", object=ids["eve"])], project="alpha")
    secret = engine.add_objects(
        [ObjectIn(type="Secret", key="vault", properties={"name": "Beta Vault Ada"})],
        project="beta",
    )
    ids["vault"] = secret[0].id
    engine.embed_pending()
    return ids
