"""Extraction records into the graph: objects, relationships and chunk mentions.

Each extracted entity becomes an object keyed by its type and normalised name
(:func:`kgsearch.text.names.entity_key`), so the same name of the same type from
two chunks is one object and "Jesse James" the person stays apart from the film.
Descriptions from every chunk are merged (distinct sentences, up to a cap) and each
relationship keeps the union of its source chunks, the extractor, model and prompt
that found it, and the strongest strength seen.

Writing the same records again changes nothing (descriptions and chunk lists are
sets), so a task re-run after a crash never duplicates anything.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from kgsearch.extract.schema import ExtractionResult
from kgsearch.model import Mention, ObjectIn, ObjectRef, RelationshipIn
from kgsearch.store.base import Store
from kgsearch.store.records import Endpoint
from kgsearch.text.names import entity_key, entity_type, relation_type
from kgsearch.writes.graph import WriteContext
from kgsearch.writes.rows import relationship_id

__all__ = [
    "MAX_DESCRIPTION_CHARS",
    "BuiltGraph",
    "ChunkExtraction",
    "add_extractions",
    "merge_descriptions",
]

MAX_DESCRIPTION_CHARS = 2000
"""A merged description stops growing past this many characters (the next issue's
description summaries replace the cap)."""


@dataclass(frozen=True)
class ChunkExtraction:
    """An extraction result and the chunk (and its source) it came from."""

    chunk_id: str
    source_id: str | None
    result: ExtractionResult


@dataclass
class BuiltGraph:
    """What :func:`add_extractions` wrote: distinct objects, relationships, mentions,
    in all and per chunk (``per_chunk[chunk_id]``, with no ``per_chunk`` of its own)."""

    objects: int = 0
    relationships: int = 0
    mentions: int = 0
    per_chunk: dict[str, BuiltGraph] = field(default_factory=dict)

    def as_dict(self) -> dict[str, int]:
        """The three counts."""
        return {
            "objects": self.objects,
            "relationships": self.relationships,
            "mentions": self.mentions,
        }


Ref = tuple[str, str]
"""An entity's (type, key)."""


@dataclass
class _Entity:
    type: str
    key: str
    name: str
    descriptions: list[str] = field(default_factory=list)
    chunks: list[str] = field(default_factory=list)
    implicit: bool = False  # only named as a relationship endpoint, never listed


@dataclass
class _Edge:
    type: str
    label: str
    source: Ref
    target: Ref
    descriptions: list[str] = field(default_factory=list)
    keywords: list[str] = field(default_factory=list)
    chunks: list[str] = field(default_factory=list)
    strength: float | None = None
    provenance: dict[str, Any] = field(default_factory=dict)


def merge_descriptions(
    old: str | None, new: Sequence[str], cap: int = MAX_DESCRIPTION_CHARS
) -> str:
    """``old``'s lines plus each new distinct description (compared casefolded), one
    per line, until ``cap`` characters."""
    lines = [line for line in (old or "").split("\n") if line.strip()]
    seen = {line.strip().casefold() for line in lines}
    size = sum(len(line) + 1 for line in lines)
    for text in new:
        text = " ".join(text.split())
        if not text or text.casefold() in seen or size + len(text) > cap:
            continue
        seen.add(text.casefold())
        lines.append(text)
        size += len(text) + 1
    return "\n".join(lines)


def _union(old: Sequence[str], new: Sequence[str]) -> list[str]:
    return list(dict.fromkeys([*old, *new]))


def _collect(
    items: Sequence[ChunkExtraction],
) -> tuple[dict[Ref, _Entity], list[_Edge]]:
    entities: dict[Ref, _Entity] = {}
    edges: dict[tuple[str, Ref, Ref], _Edge] = {}
    for item in items:
        result = item.result
        by_name: dict[str, Ref] = {}
        for e in result.graph.entities:
            ref = (entity_type(e.type), entity_key(e.name))
            if not ref[1]:
                continue
            ent = entities.setdefault(ref, _Entity(ref[0], ref[1], " ".join(e.name.split())))
            if e.description.strip():
                ent.descriptions.append(e.description)
            ent.chunks = _union(ent.chunks, [item.chunk_id])
            by_name.setdefault(ref[1], ref)
        for r in result.graph.relationships:
            ends = []
            for name in (r.source, r.target):
                key = entity_key(name)
                ref = by_name.get(key) or ("entity", key)
                if key and ref not in entities:
                    entities[ref] = _Entity(ref[0], key, " ".join(name.split()), implicit=True)
                if key:
                    entities[ref].chunks = _union(entities[ref].chunks, [item.chunk_id])
                ends.append(ref)
            source, target = ends
            if not source[1] or not target[1] or source == target:
                continue
            rtype = relation_type(r.relation)
            edge = edges.setdefault(
                (rtype, source, target),
                _Edge(rtype, r.relation.strip(), source, target),
            )
            if r.description.strip():
                edge.descriptions.append(r.description)
            edge.keywords = _union(edge.keywords, [k.strip() for k in r.keywords if k.strip()])
            edge.chunks = _union(edge.chunks, [item.chunk_id])
            if r.strength is not None:
                edge.strength = max(edge.strength or r.strength, r.strength)
            edge.provenance = {
                "extractor": result.extractor,
                "model": result.model,
                "prompt": f"{result.prompt_id}@{result.prompt_version}" if result.prompt_id else "",
            }
    return entities, list(edges.values())


def _resolve_implicit(
    store: Store, project: str, entities: dict[Ref, _Entity], edges: list[_Edge]
) -> None:
    """Give an endpoint that no chunk listed as an entity the type of a listed entity
    or a stored object with the same key (typed ones first), instead of a new
    ``entity``-typed twin."""
    typed: dict[str, Ref] = {}
    for ref, ent in entities.items():
        if not ent.implicit:
            typed.setdefault(ref[1], ref)
    remap: dict[Ref, Ref] = {}
    for ref, ent in list(entities.items()):
        if not ent.implicit:
            continue
        target = typed.get(ref[1])
        if target is None:
            ids = [i for i, _ in store.objects_named(project, ref[1], limit=5)]
            found = sorted(
                (o for o in store.get_objects(project, ids) if o.key == ref[1]),
                key=lambda o: (o.type == "entity", o.type),
            )
            if found:
                target = (found[0].type, found[0].key)
                if target not in entities:
                    entities[target] = _Entity(target[0], target[1], found[0].name)
        if target is None or target == ref:
            continue
        entities[target].chunks = _union(entities[target].chunks, ent.chunks)
        del entities[ref]
        remap[ref] = target
    for edge in edges:
        edge.source = remap.get(edge.source, edge.source)
        edge.target = remap.get(edge.target, edge.target)
    edges[:] = [e for e in edges if e.source != e.target]


def add_extractions(ctx: WriteContext, items: Sequence[ChunkExtraction]) -> BuiltGraph:
    """Write extraction results into the graph in one transaction.

    Objects and relationships are created or merged with what is stored (descriptions
    and source chunks are unions, so writing the same results twice changes nothing);
    each chunk gets a mention of every object and relationship extracted from it. New
    and changed rows are ``pending`` for embedding.

    Returns:
        How many objects, relationships and mentions were written.
    """
    entities, edges = _collect(items)
    if not entities:
        return BuiltGraph()
    store, project = ctx.store, ctx.project
    _resolve_implicit(store, project, entities, edges)
    stamp = datetime.now(UTC).isoformat(timespec="seconds")
    chunk_sources = {i.chunk_id: i.source_id for i in items}
    text_rules = ctx.rules()
    with store.transaction():
        refs = {ref: ObjectRef(type=ref[0], key=ref[1]) for ref in entities}
        stored = store.resolve(project, list(refs.values()))
        objects = []
        for ref, ent in entities.items():
            old = stored.get(refs[ref])
            props: dict[str, Any] = dict(old.properties) if old is not None else {"name": ent.name}
            description = merge_descriptions(props.get("description"), ent.descriptions)
            if description:
                props["description"] = description
            objects.append(ObjectIn(type=ent.type, key=ent.key, properties=props))
        # A stored object keeps its name, so no display name changes and no
        # relationship text goes stale: the rows are written directly.
        object_ids = store.upsert_objects(
            project, [text_rules.object_row(project, o) for o in objects]
        )
        ends = {
            (o.type, o.key): Endpoint(id=i, type=o.type, key=o.key, properties=o.properties)
            for o, i in zip(objects, object_ids, strict=True)
        }
        rel_ids = {
            id(e): relationship_id(project, e.type, ends[e.source].id, ends[e.target].id)
            for e in edges
        }
        existing = {r.id: r for r in store.get_relationships(project, list(rel_ids.values()))}
        rows = []
        for e in edges:
            old_rel = existing.get(rel_ids[id(e)])
            rel_props = dict(old_rel.properties) if old_rel is not None else {}
            rel_props["keywords"] = _union(rel_props.get("keywords", []), e.keywords)
            rel_props.update({k: v for k, v in e.provenance.items() if v})
            rel_props["extracted_at"] = rel_props.get("extracted_at", stamp)
            weight = e.strength if e.strength is not None else 1.0
            item = RelationshipIn(
                id=rel_ids[id(e)],
                type=e.type,
                source=ends[e.source].id,
                target=ends[e.target].id,
                label=(old_rel.label if old_rel is not None else None) or e.label or None,
                description=merge_descriptions(
                    old_rel.description if old_rel is not None else None, e.descriptions
                )
                or None,
                source_chunks=_union(old_rel.source_chunks if old_rel else [], e.chunks),
                weight=max(weight, old_rel.weight) if old_rel is not None else weight,
                properties=rel_props,
            )
            rows.append(text_rules.relationship_row(project, item, ends[e.source], ends[e.target]))
        store.upsert_relationships(project, rows, endpoints_checked=True)
        mentions = [
            Mention(
                project=project,
                chunk_id=c,
                source_id=chunk_sources.get(c),
                object_id=ends[ref].id,
            )
            for ref, ent in entities.items()
            for c in ent.chunks
        ] + [
            Mention(
                project=project,
                chunk_id=c,
                source_id=chunk_sources.get(c),
                relationship_id=rel_ids[id(e)],
            )
            for e in edges
            for c in e.chunks
        ]
        store.add_mentions(project, mentions)
    ctx.committed()
    per_chunk: dict[str, BuiltGraph] = {i.chunk_id: BuiltGraph() for i in items}
    for ent in entities.values():
        for c in ent.chunks:
            per_chunk[c].objects += 1
            per_chunk[c].mentions += 1
    for e in edges:
        for c in e.chunks:
            per_chunk[c].relationships += 1
            per_chunk[c].mentions += 1
    return BuiltGraph(len(objects), len(rows), len(mentions), per_chunk)
