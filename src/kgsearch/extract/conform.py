"""Hold an extraction to a graph schema: map near-miss labels, reject the rest.

:func:`conform` runs first in the quality filter when a schema is set
(``QualityRules.schema``). For each item of a parsed reply:

- an entity's type is mapped onto the schema's type with the same normalised name
  (case, ``_``/camelCase as spaces, plural endings: "Sports_Teams" → ``sports team``),
  else onto the one that shares most words with it (its name or an alias, words as
  written) when that one is clear (at least half the words of both together in common,
  and no other as close); else the entity is rejected ``off_schema``. The generic types
  ``entity``, ``other``, ``unknown`` and an empty type are left untyped (kept, not
  checked against patterns);
- a relationship's label is mapped the same way onto the schema's relation types, else
  rejected ``off_schema``; so is one whose endpoint was rejected ``off_schema``;
- with :class:`SimilarLabels` (the project's embedder), a type or label no name matches
  is mapped onto the schema's whose name or alias is most similar by embedding, when
  that similarity reaches its threshold and leads the next type's by its margin (the
  signal then says ``"by": "embedding"`` and the similarity);
- a relationship whose endpoint has a type (from the chunk's entity list) outside the
  relation's allowed source or target types is turned round when both ends are typed
  and the reversed pattern fits (a ``reversed_to_schema`` signal: "Grace Hopper chief
  executive Acme" for a company → person relation), else rejected ``pattern_mismatch``.

A relationship of a single-valued relation type is marked ``one_value_per="source"``, so
the graph write closes an earlier value when a later one arrives
(:mod:`kgsearch.writes.validity`).

Each mapping is recorded as a ``mapped_to_schema`` signal (``{"from", "to"}``), so
``kgsearch extract show`` tells what the model wrote from what was kept.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from kgsearch.embed.base import Embedder, Vector
from kgsearch.extract.ontology import EntityType, GraphSchema, RelationType
from kgsearch.extract.schema import ExtractedEntity, ExtractedGraph, ExtractedRelation, Rejection

__all__ = [
    "GENERIC_TYPES",
    "Conformed",
    "SchemaMatcher",
    "SimilarLabels",
    "conform",
    "label_words",
]

GENERIC_TYPES = frozenset({"", "entity", "other", "unknown", "thing"})
"""Entity types that say nothing: left untyped under a schema, never rejected."""
_LITTLE = frozenset(
    {"a", "an", "the", "of", "by", "in", "on", "at", "to", "for", "is", "was", "has"}
)
_MIN_OVERLAP = 0.5


def label_words(label: str) -> str:
    """A label as lower-case words: ``countryOfOrigin``, ``country_of_origin`` and
    ``country\\_of\\_origin`` → "country of origin"."""
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", label.replace("\\", ""))
    return " ".join(re.sub(r"[_\W]+", " ", spaced).split()).lower()


def _stem(word: str) -> str:
    for suffix in ("ies", "es", "s"):
        if len(word) > len(suffix) + 2 and word.endswith(suffix):
            return word[: -len(suffix)] + ("y" if suffix == "ies" else "")
    return word


def _stemmed(words: str) -> str:
    """Words with plural endings dropped: the form exact matches compare."""
    return " ".join(_stem(w) for w in words.split())


def _tokens(words: str) -> frozenset[str]:
    """The words that carry meaning, as written (unstemmed: "sports club" shares no
    word with "sport")."""
    return frozenset(w for w in words.split() if w not in _LITTLE)


@dataclass(frozen=True)
class _Names:
    """The forms a schema type answers to: its words and token sets."""

    exact: dict[str, str]
    tokens: tuple[tuple[str, frozenset[str]], ...]
    forms: tuple[tuple[str, str], ...]

    @classmethod
    def of(cls, items: tuple[EntityType, ...] | tuple[RelationType, ...]) -> _Names:
        exact: dict[str, str] = {}
        tokens = []
        forms = []
        for item in items:
            for form in (item.name, *item.aliases):
                exact.setdefault(_stemmed(label_words(form)), item.name)
                tokens.append((item.name, _tokens(label_words(form))))
                forms.append((item.name, form))
        return cls(exact, tuple(tokens), tuple(forms))

    def match(self, label: str) -> str | None:
        """The schema name ``label`` stands for, or None when none is clear."""
        words = label_words(label)
        if _stemmed(words) in self.exact:
            return self.exact[_stemmed(words)]
        mine = _tokens(words)
        if not mine:
            return None
        best: dict[str, float] = {}
        for name, theirs in self.tokens:
            if theirs:
                score = len(mine & theirs) / len(mine | theirs)
                best[name] = max(best.get(name, 0.0), score)
        ranked = sorted(best.items(), key=lambda kv: kv[1], reverse=True)
        if not ranked or ranked[0][1] < _MIN_OVERLAP:
            return None
        if len(ranked) > 1 and ranked[1][1] == ranked[0][1]:
            return None
        return ranked[0][0]


class SimilarLabels:
    """Maps a label no schema name matches onto the most similar one by embedding.

    Args:
        embedder: Returns the embedder (the project's), called on the first label that
            needs it, so a reply whose labels all match by name loads no model.
        threshold: Least cosine similarity of the label's words to a type's name or
            alias (as words) for the mapping.
        margin: How far the best type must lead the next one; closer is not clear.
    """

    def __init__(
        self, embedder: Callable[[], Embedder], *, threshold: float = 0.8, margin: float = 0.02
    ) -> None:
        self._embedder = embedder
        self.threshold = threshold
        self.margin = margin
        self._vectors: dict[str, Vector] = {}
        self._lock = threading.Lock()

    @property
    def id(self) -> str:
        """What changes its answers (part of the quality rules' digest)."""
        return f"embedding>={self.threshold}/{self.margin}"

    def _embedded(self, texts: list[str]) -> list[Vector]:
        with self._lock:
            missing = [t for t in dict.fromkeys(texts) if t not in self._vectors]
            if missing:
                for text, vector in zip(
                    missing, self._embedder().embed_documents(missing), strict=True
                ):
                    norm = float(np.linalg.norm(vector)) or 1.0
                    self._vectors[text] = (np.asarray(vector, dtype=np.float32) / norm).astype(
                        np.float32
                    )
            return [self._vectors[t] for t in texts]

    def closest(self, label: str, forms: tuple[tuple[str, str], ...]) -> tuple[str, float] | None:
        """The schema name (of ``(name, form)`` pairs) most similar to ``label`` and the
        similarity, or None when none reaches the threshold or leads clearly."""
        words = label_words(label)
        if not words or not forms:
            return None
        mine, *theirs = self._embedded([words, *(label_words(f) for _, f in forms)])
        best: dict[str, float] = {}
        for (name, _), vector in zip(forms, theirs, strict=True):
            best[name] = max(best.get(name, -1.0), float(np.dot(mine, vector)))
        ranked = sorted(best.items(), key=lambda kv: kv[1], reverse=True)
        if ranked[0][1] < self.threshold:
            return None
        if len(ranked) > 1 and ranked[0][1] - ranked[1][1] < self.margin:
            return None
        return ranked[0][0], round(ranked[0][1], 4)


@dataclass(frozen=True)
class SchemaMatcher:
    """A schema's names, indexed once for matching labels."""

    schema: GraphSchema
    entities: _Names
    relations: _Names

    @classmethod
    def of(cls, schema: GraphSchema) -> SchemaMatcher:
        """Index ``schema`` (cached per schema)."""
        return _matcher(schema)

    def entity_type(self, name: str) -> str | None:
        """The schema's entity type for ``name`` (None: off-schema); any name when the
        schema lists no entity types."""
        if not self.schema.entity_types:
            return name
        return self.entities.match(name)

    def relation(self, label: str) -> str | None:
        """The schema's relation label for ``label`` (None: off-schema); any label when
        the schema lists no relation types."""
        if not self.schema.relation_types:
            return label
        return self.relations.match(label)


_MATCHERS: dict[str, SchemaMatcher] = {}


def _matcher(schema: GraphSchema) -> SchemaMatcher:
    found = _MATCHERS.get(schema.digest)
    if found is None:
        found = SchemaMatcher(
            schema, _Names.of(schema.entity_types), _Names.of(schema.relation_types)
        )
        _MATCHERS[schema.digest] = found
    return found


@dataclass
class Conformed:
    """A graph held to a schema: what is kept, what was rejected and what was mapped."""

    graph: ExtractedGraph
    rejected: list[Rejection] = field(default_factory=list)
    signals: list[Rejection] = field(default_factory=list)
    similar: SimilarLabels | None = field(default=None, repr=False)
    by_embedding: dict[tuple[str, str], float] = field(default_factory=dict, repr=False)

    def match(self, kind: str, label: str, names: _Names, by_name: str | None) -> str | None:
        """``by_name`` when the name matched, else the embedding's choice (recorded)."""
        if by_name is not None or self.similar is None:
            return by_name
        found = self.similar.closest(label, names.forms)
        if found is None:
            return None
        self.by_embedding[(kind, label)] = found[1]
        return found[0]


def conform(
    graph: ExtractedGraph, schema: GraphSchema, *, similar: SimilarLabels | None = None
) -> Conformed:
    """Map ``graph``'s entity types and relation labels onto ``schema`` and reject what
    does not fit (see the module docstring); ``similar`` maps by embedding what no
    name matches."""
    matcher = SchemaMatcher.of(schema)
    out = Conformed(graph=ExtractedGraph(), similar=similar)
    types: dict[str, str] = {}
    off: set[str] = set()
    for entity in graph.entities:
        kept = _entity(entity, matcher, out)
        key = entity.name.casefold().strip()
        if kept is None:
            off.add(key)
            continue
        out.graph.entities.append(kept)
        if kept.type.casefold() not in GENERIC_TYPES:
            types.setdefault(key, kept.type)
    for relation in graph.relationships:
        kept_relation = _relation(relation, matcher, out, types, off)
        if kept_relation is not None:
            out.graph.relationships.append(kept_relation)
    return out


def _mapped(out: Conformed, kind: str, before: str, after: str) -> None:
    item: dict[str, object] = {"from": before, "to": after}
    similarity = out.by_embedding.get((kind, before))
    if similarity is not None:
        item.update({"by": "embedding", "similarity": similarity})
    out.signals.append(Rejection(kind=kind, reason="mapped_to_schema", item=item))


def _entity(
    entity: ExtractedEntity, matcher: SchemaMatcher, out: Conformed
) -> ExtractedEntity | None:
    given = entity.type.strip()
    if given.casefold() in GENERIC_TYPES:
        return entity
    name = matcher.entity_type(given)
    if matcher.schema.entity_types:
        name = out.match("entity", given, matcher.entities, name)
    if name is None:
        out.rejected.append(Rejection(kind="entity", reason="off_schema", item=entity.model_dump()))
        return None
    if name != given:
        _mapped(out, "entity", given, name)
        return entity.model_copy(update={"type": name})
    return entity


def _fits(
    kind: RelationType, source: str | None, target: str | None, *, typed: bool = False
) -> bool:
    """Whether ends of these types fit ``kind``'s pattern (an untyped end fits any;
    with ``typed``, both ends must be typed and allowed)."""
    for given, allowed in ((source, kind.source), (target, kind.target)):
        if given is None:
            if typed:
                return False
            continue
        if allowed and given.casefold() not in {a.casefold() for a in allowed}:
            return False
    return True


def _relation(
    relation: ExtractedRelation,
    matcher: SchemaMatcher,
    out: Conformed,
    types: dict[str, str],
    off: set[str],
) -> ExtractedRelation | None:
    def reject(reason: str) -> None:
        out.rejected.append(
            Rejection(kind="relationship", reason=reason, item=relation.model_dump())
        )

    label = matcher.relation(relation.relation) if relation.relation.strip() else None
    if relation.relation.strip() and matcher.schema.relation_types:
        label = out.match("relationship", relation.relation, matcher.relations, label)
    source, target = relation.source.casefold().strip(), relation.target.casefold().strip()
    if label is None or source in off or target in off:
        reject("off_schema")
        return None
    kind = matcher.schema.relation_type(label)
    if kind is not None and not _fits(kind, types.get(source), types.get(target)):
        if not _fits(kind, types.get(target), types.get(source), typed=True):
            reject("pattern_mismatch")
            return None
        item = {"from": f"{relation.source} → {relation.target}", "to": "reversed"}
        out.signals.append(Rejection(kind="relationship", reason="reversed_to_schema", item=item))
        relation = relation.model_copy(
            update={"source": relation.target, "target": relation.source}
        )
    if kind is not None and kind.single_valued:
        relation = relation.model_copy(update={"one_value_per": "source"})
    if label != relation.relation:
        _mapped(out, "relationship", relation.relation, label)
        return relation.model_copy(update={"relation": label})
    return relation
