"""Extraction records into the graph: objects, relationships and chunk mentions.

Each extracted entity becomes an object keyed by its type and normalised name
(:func:`kgsearch.text.names.entity_key`), so the same name of the same type from
two chunks is one object and "Jesse James" the person stays apart from the film.
What each chunk said about a row is kept with the chunk
(:mod:`kgsearch.writes.contributions`); descriptions, keywords, weights (summed over
chunks) and source chunks are derived from that, so writing the same records again
changes nothing and a task re-run after a crash never duplicates anything.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from kgsearch.extract.schema import ExtractionResult
from kgsearch.model import Kind, Mention, ObjectIn, ObjectRef, Relationship, RelationshipIn
from kgsearch.store.records import Endpoint
from kgsearch.text.names import entity_key, entity_type, relation_type
from kgsearch.writes.batch import GraphBatch, write_batch, write_objects
from kgsearch.writes.contributions import (
    EXTRACTED,
    PROVENANCE,
    Entries,
    contributions,
    merged_entries,
    object_fields,
    relationship_fields,
)
from kgsearch.writes.graph import WriteContext
from kgsearch.writes.rows import relationship_id
from kgsearch.writes.stores import NameLookup, WriteStore
from kgsearch.writes.validity import close_superseded, groups_of

__all__ = [
    "BuiltGraph",
    "ChunkExtraction",
    "Compatible",
    "add_extractions",
    "same_type",
]

_ENTRY_CHARS = 1000
"""One chunk's description of one row is cut to this many characters."""


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
    entries: Entries = field(default_factory=dict)
    implicit: bool = False  # only named as a relationship endpoint, never listed
    provenance: dict[str, Any] = field(default_factory=dict)

    def add(self, chunk: str, name: str, description: str) -> None:
        entry = {"name": " ".join(name.split()), "description": _cut(description)}
        found = self.entries.setdefault(chunk, [])
        if entry not in found:
            found.append(entry)


@dataclass
class _Edge:
    type: str
    label: str
    source: Ref
    target: Ref
    entries: Entries = field(default_factory=dict)
    provenance: dict[str, Any] = field(default_factory=dict)

    @property
    def single_valued(self) -> bool:
        return any(e.get("one_value_per") for found in self.entries.values() for e in found)


def _cut(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _ENTRY_CHARS else text[: _ENTRY_CHARS - 1] + "…"


def _provenance(result: ExtractionResult) -> dict[str, Any]:
    return {
        "extractor": result.extractor,
        "model": result.model,
        "prompt": f"{result.prompt_id}@{result.prompt_version}" if result.prompt_id else "",
    }


def _collect(
    items: Sequence[ChunkExtraction],
) -> tuple[dict[Ref, _Entity], list[_Edge]]:
    entities: dict[Ref, _Entity] = {}
    edges: dict[tuple[str, Ref, Ref], _Edge] = {}
    for item in items:
        result, chunk = item.result, item.chunk_id
        provenance = _provenance(result)
        by_name: dict[str, Ref] = {}
        for e in result.graph.entities:
            ref = (entity_type(e.type), entity_key(e.name))
            if not ref[1]:
                continue
            ent = entities.setdefault(ref, _Entity(ref[0], ref[1], " ".join(e.name.split())))
            ent.implicit = False
            ent.provenance = provenance
            ent.add(chunk, e.name, e.description)
            by_name.setdefault(ref[1], ref)
        for r in result.graph.relationships:
            ends = []
            for name in (r.source, r.target):
                key = entity_key(name)
                ref = by_name.get(key) or ("entity", key)
                if key and ref not in entities:
                    entities[ref] = _Entity(ref[0], key, " ".join(name.split()), implicit=True)
                if key and chunk not in entities[ref].entries:
                    entities[ref].add(chunk, name, "")
                    entities[ref].provenance = provenance
                ends.append(ref)
            source, target = ends
            if not source[1] or not target[1] or source == target:
                continue
            rtype = relation_type(r.relation)
            edge = edges.setdefault(
                (rtype, source, target),
                _Edge(rtype, r.relation.strip(), source, target),
            )
            entry = {
                "description": _cut(r.description),
                "keywords": [k.strip() for k in r.keywords if k.strip()],
                "strength": r.strength,
            }
            if r.evidence.strip():  # the sentence that states it (offline facts)
                entry["evidence"] = _cut(r.evidence)
            for name, value in (
                ("valid_from", r.valid_from),
                ("valid_to", r.valid_to),
                ("one_value_per", r.one_value_per),
            ):
                if value:
                    entry[name] = value
            found = edge.entries.setdefault(chunk, [])
            if entry not in found:
                found.append(entry)
            edge.provenance = provenance
    return entities, list(edges.values())


def _combine(a: Entries, b: Entries) -> Entries:
    out = {c: list(v) for c, v in a.items()}
    for c, entries in b.items():
        found = out.setdefault(c, [])
        found.extend(e for e in entries if e not in found)
    return out


Compatible = Callable[[str, str], bool]
"""Whether an extracted entity type and a stored object's type may be one entity."""


def same_type(a: str, b: str) -> bool:
    """The default :data:`Compatible`: the same type once normalised (``Person`` and
    ``person``)."""
    return entity_type(a) == entity_type(b)


def _stored_matches(
    store: NameLookup, project: str, wanted: Sequence[tuple[Ref, bool]], compatible: Compatible
) -> dict[Ref, tuple[Ref, str]]:
    """The stored object each (entity, implicit) lands on, with its name, in two reads:
    for an endpoint no chunk typed, any object with its key (typed ones first); for a
    listed entity, one of a compatible type (imported data keyed differently,
    ``Person/Jesse James``). Entities that land nowhere else are left out."""
    if not wanted:
        return {}
    named = store.objects_named_many(project, [ref[1] for ref, _ in wanted], limit=10)
    ids = list(dict.fromkeys(i for found in named.values() for i in found))
    rows = {o.id: o for o in store.get_objects(project, ids)}
    matches: dict[Ref, tuple[Ref, str]] = {}
    for ref, implicit in wanted:
        found = sorted(
            (
                o
                for o in (rows[i] for i in named.get(ref[1], []) if i in rows)
                if entity_key(o.key) == ref[1] and (implicit or compatible(ref[0], o.type))
            ),
            key=lambda o: (o.type == "entity", o.type != ref[0], o.type, o.key),
        )
        if found and (found[0].type, found[0].key) != ref:
            matches[ref] = (found[0].type, found[0].key), found[0].name
    return matches


def _landing(
    entities: dict[Ref, _Entity], exact: Mapping[ObjectRef, Endpoint]
) -> list[tuple[Ref, _Entity]]:
    """The entities that may land elsewhere: endpoints no chunk typed, and listed
    entities with no stored object of their own type and key (``exact``: the stored
    ones)."""
    return [
        (ref, ent)
        for ref, ent in entities.items()
        if ent.implicit or ObjectRef(type=ref[0], key=ref[1]) not in exact
    ]


def _link_to_stored(
    store: NameLookup,
    project: str,
    entities: dict[Ref, _Entity],
    edges: list[_Edge],
    compatible: Compatible,
) -> dict[Ref, Endpoint]:
    """Land entities on what is there already: an endpoint that no chunk listed as an
    entity takes the type of a listed entity or a stored object with the same key
    (typed ones first) instead of making an ``entity``-typed twin; a listed entity with
    no stored object of its own type and key lands on a stored one of a compatible
    type with the same name (extracted text linked to imported structured data).

    Returns:
        The stored object of each entity left that has one (read once, in the caller's
        transaction, for the rows built from them).
    """
    typed: dict[str, Ref] = {}
    for ref, ent in entities.items():
        if not ent.implicit:
            typed.setdefault(ref[1], ref)
    exact = store.resolve(project, [ObjectRef(type=t, key=k) for t, k in entities])
    landing = _landing(entities, exact)
    stored = _stored_matches(
        store,
        project,
        [(ref, ent.implicit) for ref, ent in landing if not ent.implicit or ref[1] not in typed],
        compatible,
    )
    remap: dict[Ref, Ref] = {}
    for ref, ent in landing:
        target = typed.get(ref[1]) if ent.implicit else None
        if target is None and ref in stored:
            target, name = stored[ref]
            if target not in entities:
                entities[target] = _Entity(target[0], target[1], name)
        if target is None or target == ref:
            continue
        entities[target].entries = _combine(entities[target].entries, ent.entries)
        entities[target].provenance = entities[target].provenance or ent.provenance
        del entities[ref]
        remap[ref] = target
    for edge in edges:
        edge.source = remap.get(edge.source, edge.source)
        edge.target = remap.get(edge.target, edge.target)
    edges[:] = [e for e in edges if e.source != e.target]
    found = {(r.type, r.key): e for r, e in exact.items()}
    more = [ObjectRef(type=t, key=k) for t, k in entities if (t, k) not in found]
    if more:  # the stored objects entities landed on
        found.update(((r.type, r.key), e) for r, e in store.resolve(project, more).items())
    return {ref: found[ref] for ref in entities if ref in found}


def add_extractions(
    ctx: WriteContext,
    items: Sequence[ChunkExtraction],
    *,
    compatible: Compatible = same_type,
) -> BuiltGraph:
    """Write extraction results into the graph in one transaction.

    Each row's ``_chunks`` gains (or has replaced) the contributions of these chunks
    and its derived fields are computed again (:mod:`kgsearch.writes.contributions`),
    so writing the same results twice changes nothing; each chunk gets a mention of
    every object and relationship extracted from it. New and changed rows are
    ``pending`` for embedding.

    Args:
        ctx: Where the rows go.
        items: Each chunk's extraction.
        compatible: Whether an extracted type and a stored object's type may be one
            entity, for landing extracted entities on stored objects of another type
            with the same name (the engine passes entity resolution's type table).

    Returns:
        How many objects, relationships and mentions were written.
    """
    entities, edges = _collect(items)
    if not entities:
        return BuiltGraph()
    store, project = ctx.store, ctx.project
    stamp = datetime.now(UTC).isoformat(timespec="seconds")
    sources = {i.chunk_id: i.source_id for i in items}
    rules = ctx.rules()
    with store.transaction():
        stored = _link_to_stored(store, project, entities, edges, compatible)
        objects = [object_in(ent, stored.get(ref), stamp) for ref, ent in entities.items()]
        # The display name stays while a chunk still uses it, so relationship texts
        # do not go stale: the rows are written directly.
        ids = write_objects(store, project, [rules.object_row(project, o) for o in objects])
        ends = {
            (o.type, o.key): Endpoint(id=i, type=o.type, key=o.key, properties=o.properties)
            for o, i in zip(objects, ids, strict=True)
        }
        rel_ids = [
            relationship_id(project, e.type, ends[e.source].id, ends[e.target].id) for e in edges
        ]
        existing = {r.id: r for r in store.get_relationships(project, rel_ids)}
        batch = GraphBatch(
            relationships=[
                rules.relationship_row(
                    project,
                    relationship_in(e, i, ends, existing.get(i), stamp),
                    ends[e.source],
                    ends[e.target],
                )
                for e, i in zip(edges, rel_ids, strict=True)
            ],
            mentions=mention_rows(project, sources, entities, ends, edges, rel_ids),
            endpoints_checked=True,
        )
        write_batch(store, project, batch)
        old = {ref for ref in entities if ref in stored}
        skip, wake = _embedding_policy(store, project, entities, objects, ids, edges, old)
        store.set_skipped(project, Kind.OBJECT, skip, skipped=True)
        store.set_skipped(project, Kind.OBJECT, wake, skipped=False)
        if any(e.single_valued for e in edges):
            written = store.get_relationships(project, rel_ids)
            close_superseded(ctx, groups_of(written))
    ctx.committed()
    return _built(items, entities, edges, len(batch.mentions))


def _embedding_policy(
    store: WriteStore,
    project: str,
    entities: dict[Ref, _Entity],
    objects: Sequence[ObjectIn],
    ids: Sequence[str],
    edges: Sequence[_Edge],
    old: set[Ref],
) -> tuple[list[str], list[str]]:
    """(object ids to skip for embedding, object ids to wake): an object extraction
    created is not embedded on its own while one passage names it and no relationship
    reaches it (it stays found by full text, its passage and its name, and the graph
    legs read its mention); a second passage or a relationship wakes it. Objects that
    were there before extraction (imported, written by hand) are never skipped."""
    ends = {e.source for e in edges} | {e.target for e in edges}
    skip: list[str] = []
    wake: list[str] = []
    for ref, obj, id in zip(entities, objects, ids, strict=True):
        alone = len(contributions(obj.properties)) < 2 and ref not in ends
        (skip if alone and obj.properties.get(EXTRACTED) is True else wake).append(id)
    existing = [id for ref, id in zip(entities, ids, strict=True) if ref in old and id in skip]
    if existing:  # a relationship written by hand also earns the object its vector
        linked = {
            i
            for r in store.relationships_touching(project, existing)
            for i in (r.source_id, r.target_id)
        }
        wake += [i for i in skip if i in linked]
        skip = [i for i in skip if i not in linked]
    return skip, wake


def object_in(ent: _Entity, old: Endpoint | None, stamp: str) -> ObjectIn:
    """The object an extracted entity becomes: the stored one's properties (or a new
    extracted object's) with these chunks' contributions merged in and the fields
    derived again; the first extraction time stays."""
    props: dict[str, Any] = (
        dict(old.properties) if old is not None else {"name": ent.name, EXTRACTED: True}
    )
    entries = merged_entries(contributions(props), ent.entries)
    seen = props.get(PROVENANCE)
    first = seen.get("extracted_at") if isinstance(seen, dict) else None
    props[PROVENANCE] = {
        **{k: v for k, v in ent.provenance.items() if v},
        "extracted_at": first or stamp,
    }
    return ObjectIn(type=ent.type, key=ent.key, properties=object_fields(props, entries))


def relationship_in(
    e: _Edge, id: str, ends: dict[Ref, Endpoint], old: Relationship | None, stamp: str
) -> RelationshipIn:
    """The relationship an extracted edge becomes: merged into the stored one ``old``
    (its label and, for one extraction did not create, validity, description and
    weight stay) or new. An extracted row's validity is what its chunks state (a later
    fact of a single-valued relation closes it afterwards,
    :mod:`kgsearch.writes.validity`)."""
    props: dict[str, Any] = dict(old.properties) if old is not None else {EXTRACTED: True}
    entries = merged_entries(contributions(props), e.entries)
    props, fields, source_chunks = relationship_fields(
        props, entries, old.source_chunks if old is not None else ()
    )
    props.update({k: v for k, v in e.provenance.items() if v})
    props["extracted_at"] = props.get("extracted_at", stamp)
    valid_from = old.valid_from if old is not None else None
    valid_to = old.valid_to if old is not None else None
    if fields is not None:
        description, weight = fields.description, fields.weight
        valid_from, valid_to = fields.valid_from, fields.valid_to
    elif old is not None:
        description, weight = old.description, old.weight
    else:
        description, weight = None, 1.0
    return RelationshipIn(
        id=id,
        type=e.type,
        source=ends[e.source].id,
        target=ends[e.target].id,
        label=(old.label if old is not None else None) or e.label or None,
        description=description,
        source_chunks=source_chunks,
        weight=weight,
        properties=props,
        valid_from=valid_from,
        valid_to=valid_to,
    )


def mention_rows(
    project: str,
    sources: dict[str, str | None],
    entities: dict[Ref, _Entity],
    ends: dict[Ref, Endpoint],
    edges: Sequence[_Edge],
    rel_ids: Sequence[str],
) -> list[Mention]:
    """Each chunk's mention of every object and relationship extracted from it."""
    return [
        Mention(project=project, chunk_id=c, source_id=sources.get(c), object_id=ends[ref].id)
        for ref, ent in entities.items()
        for c in ent.entries
    ] + [
        Mention(project=project, chunk_id=c, source_id=sources.get(c), relationship_id=i)
        for e, i in zip(edges, rel_ids, strict=True)
        for c in e.entries
    ]


def _built(
    items: Sequence[ChunkExtraction],
    entities: dict[Ref, _Entity],
    edges: Sequence[_Edge],
    mentions: int,
) -> BuiltGraph:
    per_chunk: dict[str, BuiltGraph] = {i.chunk_id: BuiltGraph() for i in items}
    for ent in entities.values():
        for c in ent.entries:
            per_chunk[c].objects += 1
            per_chunk[c].mentions += 1
    for e in edges:
        for c in e.entries:
            per_chunk[c].relationships += 1
            per_chunk[c].mentions += 1
    return BuiltGraph(len(entities), len(edges), mentions, per_chunk)
