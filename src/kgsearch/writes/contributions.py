"""What each chunk contributed to an extracted row, and the fields derived from it.

Every object and relationship that extraction touched keeps, in the hidden property
``_chunks`` (a leading underscore keeps it out of the embedded text), what each chunk
said about it::

    objects:        {chunk_id: [{"name": "Ada", "description": "…"}, …]}
    relationships:  {chunk_id: [{"description": "…", "keywords": […], "strength": 0.8,
                                 "evidence": "the sentence that states it",
                                 "valid_from": "2002-06-29", "valid_to": "2005",
                                 "one_value_per": "source"}, …]}

A row extraction created also carries ``_extracted: true``; it belongs to its chunks.
Its description (and, for a relationship, keywords, weight, source chunks and stated
validity: the earliest start and the latest end any chunk gives) is a
function of ``_chunks`` alone (:func:`object_fields`, :func:`relationship_fields`), so
adding the same chunk twice changes nothing, forgetting a chunk is removing its key and
deriving again (no model call), and a graph built in any order of chunks is the same.
An extracted row left with no chunk is deleted; a row that was there before extraction
(imported data the extraction linked to) keeps its own description and fields and only
gains or loses provenance.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from kgsearch.extract.dates import period_end, period_start
from kgsearch.text.descriptions import DESCRIPTION_BUDGET, digest, distinct, merge_descriptions

__all__ = [
    "CHUNKS",
    "EXTRACTED",
    "INVALIDATED",
    "ONE_VALUE_PER",
    "PROVENANCE",
    "SUMMARY",
    "Entries",
    "ObjectFields",
    "RelationshipFields",
    "contributions",
    "describe",
    "merged_entries",
    "object_fields",
    "owned",
    "relationship_fields",
    "summary_due",
    "texts",
    "without_chunks",
]

CHUNKS = "_chunks"
"""Property holding each chunk's contribution."""

EXTRACTED = "_extracted"
"""Property marking a row extraction created (deleted when no chunk supports it)."""

SUMMARY = "_summary"
"""A model-written summary of the row's descriptions: ``{"of": digest, "text", "model"}``;
used while the descriptions are those it was made from (:func:`describe`)."""

PROVENANCE = "_provenance"
"""Object property: the extractor, model and prompt that last touched it and when it
was first extracted (relationships carry the same as plain properties)."""

INVALIDATED = "_invalidated"
"""Relationship property: why its ``valid_to`` is not what its chunks state, ``{"by":
the later relationship's id, "reason", "at": the instant it was closed}``
(:mod:`kgsearch.writes.validity`)."""

ONE_VALUE_PER = "_one_value_per"
"""Relationship property: the end (``source`` or ``target``) that holds one value of the
relation at a time, when a chunk says so (a schema's single-valued relation)."""

_DEFAULT_STRENGTH = 1.0

Entries = dict[str, list[dict[str, Any]]]
"""Chunk id → that chunk's contributions to one row."""


def contributions(properties: Mapping[str, Any]) -> Entries:
    """The row's ``_chunks`` (empty when extraction never touched it)."""
    found = properties.get(CHUNKS)
    if not isinstance(found, dict):
        return {}
    return {str(c): [e for e in v if isinstance(e, dict)] for c, v in found.items() if v}


def owned(properties: Mapping[str, Any]) -> bool:
    """Whether extraction created the row."""
    return properties.get(EXTRACTED) is True


def merged_entries(old: Entries, new: Entries) -> Entries:
    """``old`` with each chunk of ``new`` replacing that chunk's entries, sorted by chunk."""
    both = {**old, **new}
    return {c: both[c] for c in sorted(both)}


def without_chunks(entries: Entries, chunk_ids: Iterable[str]) -> Entries:
    """``entries`` minus the given chunks."""
    gone = set(chunk_ids)
    return {c: v for c, v in entries.items() if c not in gone}


def texts(entries: Entries) -> list[str]:
    """Every description of the row, in chunk order."""
    return [
        str(e.get("description") or "")
        for c in sorted(entries)
        for e in entries[c]
        if str(e.get("description") or "").strip()
    ]


def describe(properties: Mapping[str, Any], entries: Entries) -> str:
    """The row's description: its model summary while that was made from these
    descriptions, else the offline merge (:func:`merge_descriptions`)."""
    said = texts(entries)
    summary = properties.get(SUMMARY)
    if (
        isinstance(summary, dict)
        and isinstance(summary.get("text"), str)
        and summary.get("of") == digest(said)
    ):
        return str(summary["text"])
    return merge_descriptions(said)


def summary_due(properties: Mapping[str, Any]) -> tuple[str, list[str]] | None:
    """(digest, distinct descriptions) of an extracted row whose descriptions pass the
    budget and have no model summary yet; None otherwise."""
    if not owned(properties):
        return None
    said = texts(contributions(properties))
    kept = distinct(said)
    if sum(len(t) + 1 for t in kept) - 1 <= DESCRIPTION_BUDGET:
        return None
    summary = properties.get(SUMMARY)
    done = digest(said)
    if isinstance(summary, dict) and summary.get("of") == done:
        return None
    return done, kept


class ObjectFields:
    """Fields of an extracted object derived from its contributions."""

    def __init__(self, properties: Mapping[str, Any], entries: Entries) -> None:
        self.description = describe(properties, entries)
        names: Counter[str] = Counter()
        first: dict[str, int] = {}
        for i, name in enumerate(
            " ".join(str(e.get("name") or "").split()) for c in sorted(entries) for e in entries[c]
        ):
            if name:
                names[name] += 1
                first.setdefault(name, i)
        self.names = names
        self.first = first

    def name(self, current: str | None) -> str | None:
        """``current`` while some chunk still uses it, else the most used name."""
        if current and current in self.names:
            return current
        if not self.names:
            return current
        return min(self.names, key=lambda n: (-self.names[n], self.first[n]))


def object_fields(properties: Mapping[str, Any], entries: Entries) -> dict[str, Any]:
    """The object's properties with ``_chunks`` set to ``entries`` and, for an
    extracted object, its description and name derived from them."""
    props = dict(properties)
    if entries:
        props[CHUNKS] = {c: entries[c] for c in sorted(entries)}
    else:
        props.pop(CHUNKS, None)
        props.pop(PROVENANCE, None)
    if not owned(props):
        return props
    fields = ObjectFields(props, entries)
    if fields.description:
        props["description"] = fields.description
    else:
        props.pop("description", None)
    name = fields.name(props.get("name") if isinstance(props.get("name"), str) else None)
    if name:
        props["name"] = name
    return props


class RelationshipFields:
    """Fields of an extracted relationship derived from its contributions.

    Attributes:
        description: The merged description (None when no chunk gave one).
        keywords: Every keyword, the most used first (ties alphabetically).
        weight: The sum of each contribution's strength (1 when it gave none).
        source_chunks: The contributing chunk ids, sorted.
        valid_from: The start of the earliest period a contribution dates it from.
        valid_to: The end of the latest period a contribution dates it to (dropped
            when not after ``valid_from``).
        one_value_per: ``source`` or ``target`` when a contribution marks the relation
            single-valued, else None.
    """

    def __init__(self, properties: Mapping[str, Any], entries: Entries) -> None:
        self.description = describe(properties, entries) or None
        counts: Counter[str] = Counter()
        weight = 0.0
        for chunk in entries.values():
            for e in chunk:
                counts.update(dict.fromkeys(_keywords(e.get("keywords")), 1))
                strength = e.get("strength")
                weight += (
                    float(strength) if isinstance(strength, int | float) else _DEFAULT_STRENGTH
                )
        self.keywords = sorted(counts, key=lambda k: (-counts[k], k))
        self.weight = round(weight, 6) if entries else _DEFAULT_STRENGTH
        self.source_chunks = sorted(entries)
        said = [e for chunk in entries.values() for e in chunk]
        starts = _instants(e.get("valid_from") for e in said)
        ends = _instants((e.get("valid_to") for e in said), end=True)
        self.valid_from: datetime | None = min(starts) if starts else None
        self.valid_to: datetime | None = max(ends) if ends else None
        if self.valid_from and self.valid_to and self.valid_to <= self.valid_from:
            self.valid_to = None
        sides = sorted({str(e["one_value_per"]) for e in said if e.get("one_value_per")})
        self.one_value_per: str | None = sides[0] if len(sides) == 1 else None


def _instants(values: Iterable[Any], *, end: bool = False) -> list[datetime]:
    found = [(period_end if end else period_start)(v) for v in values if isinstance(v, str) and v]
    return [f for f in found if f is not None]


def _keywords(value: Any) -> list[str]:
    if not isinstance(value, list):
        return []
    return [k.strip() for k in value if isinstance(k, str) and k.strip()]


def relationship_fields(
    properties: Mapping[str, Any], entries: Entries, old_chunks: Sequence[str] = ()
) -> tuple[dict[str, Any], RelationshipFields | None, list[str]]:
    """Properties with ``_chunks`` set, the derived fields of an extracted relationship
    (None for one extraction did not create), and its source chunks: the derived ones,
    or for a relationship extraction did not create, ``old_chunks`` kept with the
    contributing chunks added."""
    props = dict(properties)
    if entries:
        props[CHUNKS] = {c: entries[c] for c in sorted(entries)}
    else:
        props.pop(CHUNKS, None)
    if not owned(props):
        return props, None, list(dict.fromkeys([*old_chunks, *sorted(entries)]))
    fields = RelationshipFields(props, entries)
    if fields.keywords:
        props["keywords"] = fields.keywords
    else:
        props.pop("keywords", None)
    # validity is stated again here; a later fact closes it again afterwards
    props.pop(INVALIDATED, None)
    if fields.one_value_per:
        props[ONE_VALUE_PER] = fields.one_value_per
    else:
        props.pop(ONE_VALUE_PER, None)
    return props, fields, fields.source_chunks
