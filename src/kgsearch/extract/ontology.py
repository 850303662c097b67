"""Graph schemas: the entity types and relation types a project's graph should hold.

A :class:`GraphSchema` lists entity types (name, description, optional properties) and
relation types (name, description, the entity types allowed at each end, and whether
the relation holds one value at a time). It steers the LLM extractor twice: the prompt
lists the types with their descriptions and allowed patterns (and the JSON schema of
the reply gets enums), and the quality filter maps off-schema labels to the closest
allowed one or rejects them (:mod:`kgsearch.extract.conform`).

Ways to make one:

- :func:`load_schema` reads a file: TOML, JSON or YAML (YAML needs PyYAML:
  ``pip install 'kgsearch[yaml]'``) in this module's shape, or a Text2KGBench ontology
  (``{"concepts": [{"qid", "label"}], "relations": [{"pid", "label", "domain",
  "range"}]}``, recognised by its keys);
- :func:`schema_from_models` builds one from Pydantic classes (Graphiti style): an
  entity class's docstring is its description and its fields its properties;
- ``GraphSchema.model_validate(mapping)`` from a dict, e.g. an inline ``[extract.schema]``
  table.

Every malformed schema raises :class:`~kgsearch.errors.InvalidRequest` naming the file
and the line (syntax) or the field path (``relation_types[2].source[0]``).
"""

from __future__ import annotations

import hashlib
import json
import tomllib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from kgsearch.errors import InvalidRequest, MissingDependency

__all__ = [
    "EntityType",
    "GraphSchema",
    "RelationType",
    "load_schema",
    "schema_from_mapping",
    "schema_from_models",
    "schema_from_setting",
    "schema_from_text2kgbench",
]


class EntityType(BaseModel):
    """A type of entity the graph holds.

    Attributes:
        name: The type's name, as the model should write it (``person``).
        description: What counts as one (shown to the model).
        properties: Attributes an entity of this type may have, name → description.
        aliases: Other names a model may use for the type (mapped onto it).
        id: An external id (a Wikidata QID), if any.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, str_strip_whitespace=True)

    name: str = Field(min_length=1, max_length=120)
    description: str = ""
    properties: dict[str, str] = Field(default_factory=dict)
    aliases: tuple[str, ...] = ()
    id: str = ""


class RelationType(BaseModel):
    """A type of relationship the graph holds.

    Attributes:
        name: The label, as the model should write it (``member of sports team``).
        description: What the relation means (shown to the model).
        source: Entity types allowed as the subject (empty: any).
        target: Entity types allowed as the object (empty: any).
        single_valued: The subject holds one value at a time (a CEO, a capital).
        aliases: Other labels a model may use (mapped onto this one).
        id: An external id (a Wikidata PID), if any.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, str_strip_whitespace=True)

    name: str = Field(min_length=1, max_length=120)
    description: str = ""
    source: tuple[str, ...] = ()
    target: tuple[str, ...] = ()
    single_valued: bool = False
    aliases: tuple[str, ...] = ()
    id: str = ""


class GraphSchema(BaseModel):
    """The entity and relation types of a graph.

    Attributes:
        name: A title for the schema.
        description: The subject matter (shown to the model).
        entity_types: The allowed entity types (empty: any type).
        relation_types: The allowed relation types (empty: any label).
    """

    model_config = ConfigDict(extra="forbid", frozen=True, str_strip_whitespace=True)

    name: str = ""
    description: str = ""
    entity_types: tuple[EntityType, ...] = ()
    relation_types: tuple[RelationType, ...] = ()

    @model_validator(mode="after")
    def _consistent(self) -> GraphSchema:
        for kind, items in (
            ("entity_types", self.entity_types),
            ("relation_types", self.relation_types),
        ):
            seen: set[str] = set()
            for item in items:
                key = item.name.casefold()
                if key in seen:
                    raise ValueError(f"{kind}: {item.name!r} is listed twice")
                seen.add(key)
        known = {t.name.casefold() for t in self.entity_types}
        for n, relation in enumerate(self.relation_types):
            for end in ("source", "target"):
                for m, name in enumerate(getattr(relation, end)):
                    if known and name.casefold() not in known:
                        raise ValueError(
                            f"relation_types[{n}].{end}[{m}]: {name!r} is not one of the "
                            f"entity types ({', '.join(t.name for t in self.entity_types)})"
                        )
        return self

    @property
    def digest(self) -> str:
        """Eight hex digits that change whenever the schema does."""
        text = json.dumps(self.model_dump(mode="json"), sort_keys=True, ensure_ascii=False)
        return hashlib.sha256(text.encode()).hexdigest()[:8]

    def entity_type(self, name: str) -> EntityType | None:
        """The entity type called ``name`` (case-insensitive), or None."""
        key = name.casefold()
        return next((t for t in self.entity_types if t.name.casefold() == key), None)

    def relation_type(self, name: str) -> RelationType | None:
        """The relation type called ``name`` (case-insensitive), or None."""
        key = name.casefold()
        return next((t for t in self.relation_types if t.name.casefold() == key), None)

    def single_valued(self) -> frozenset[str]:
        """The names of the relations that hold one value at a time."""
        return frozenset(r.name for r in self.relation_types if r.single_valued)


def _path(loc: Sequence[int | str]) -> str:
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or "(top level)"


def schema_from_mapping(data: Any, *, source: str = "schema") -> GraphSchema:
    """A schema from parsed data: this module's shape, or a Text2KGBench ontology.

    Args:
        data: The parsed file (a mapping).
        source: What to call it in errors (the file name).

    Raises:
        InvalidRequest: Not a mapping, or a field is missing or wrong (the message
            names each field path).
    """
    if not isinstance(data, Mapping):
        raise InvalidRequest(
            f"{source}: a graph schema is a table/object with entity_types and "
            f"relation_types, not {type(data).__name__}",
            details={"source": source},
        )
    if "concepts" in data and "relations" in data:
        return schema_from_text2kgbench(data, source=source)
    try:
        return GraphSchema.model_validate(dict(data))
    except ValidationError as exc:
        problems = [
            (f"{_path(e['loc'])}: " if e["loc"] else "") + e["msg"].removeprefix("Value error, ")
            for e in exc.errors()
        ]
        raise InvalidRequest(
            f"{source}: bad graph schema: " + "; ".join(problems),
            details={"source": source, "fields": [_path(e["loc"]) for e in exc.errors()]},
        ) from None


def schema_from_text2kgbench(data: Mapping[str, Any], *, source: str = "ontology") -> GraphSchema:
    """A schema from a Text2KGBench ontology: concepts become entity types (their QID
    kept as ``id``), relations become relation types whose source and target are the
    concepts with the domain's and range's QID (an empty range, or a QID that is not
    a listed concept: any type). A relation listed twice allows both patterns.

    Raises:
        InvalidRequest: A concept or relation without its keys (named by index).
    """
    names: dict[str, list[str]] = {}
    entities: dict[str, EntityType] = {}
    try:
        for n, concept in enumerate(data["concepts"]):
            where = f"concepts[{n}]"
            label, qid = str(_field(concept, "label", where)), str(_field(concept, "qid", where))
            if label.casefold() not in entities:
                entities[label.casefold()] = EntityType(name=label, id=qid)
            names.setdefault(qid, []).append(label)
        relations: dict[str, RelationType] = {}
        for n, relation in enumerate(data["relations"]):
            where = f"relations[{n}]"
            label = str(_field(relation, "label", where))
            ends = [
                tuple(dict.fromkeys(names.get(str(relation.get(end) or ""), [])))
                for end in ("domain", "range")
            ]
            known = relations.get(label.casefold())
            if known is not None:  # listed again with another pattern: either is allowed
                ends = [_union(known.source, ends[0]), _union(known.target, ends[1])]
            relations[label.casefold()] = RelationType(
                name=label, id=str(relation.get("pid", "")), source=ends[0], target=ends[1]
            )
        return GraphSchema(
            name=str(data.get("title", "")),
            entity_types=tuple(entities.values()),
            relation_types=tuple(relations.values()),
        )
    except (TypeError, ValidationError, ValueError) as exc:
        raise InvalidRequest(f"{source}: bad Text2KGBench ontology: {exc}") from None


def _union(first: tuple[str, ...], second: tuple[str, ...]) -> tuple[str, ...]:
    """Two allowed-type lists merged (an empty one allows any type, so wins)."""
    return tuple(dict.fromkeys([*first, *second])) if first and second else ()


def _field(item: Any, key: str, where: str) -> Any:
    if not isinstance(item, Mapping) or not str(item.get(key) or "").strip():
        raise ValueError(f"{where}.{key} is missing")
    return item[key]


def load_schema(path: str | Path) -> GraphSchema:
    """Read a graph schema file (``.toml``, ``.json``, ``.yaml``/``.yml``).

    Raises:
        InvalidRequest: No such file, an unknown extension, a syntax error (with its
            line) or a malformed schema (with the field path).
        MissingDependency: A YAML file without PyYAML installed.
    """
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in {".toml", ".json", ".yaml", ".yml"}:
        raise InvalidRequest(
            f"{path}: a graph schema is a .toml, .json or .yaml file", details={"path": str(path)}
        )
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidRequest(f"cannot read graph schema {path}: {exc}") from None
    return schema_from_mapping(_parse(text, suffix, path), source=str(path))


def _parse(text: str, suffix: str, path: Path) -> Any:
    try:
        if suffix == ".toml":
            return tomllib.loads(text)
        if suffix == ".json":
            return json.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InvalidRequest(f"{path}: not valid TOML: {exc}") from None
    except json.JSONDecodeError as exc:
        raise InvalidRequest(
            f"{path}: not valid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}",
            details={"line": exc.lineno},
        ) from None
    try:
        import yaml  # type: ignore[import-untyped]
    except ImportError:
        raise MissingDependency(
            f"{path}: reading YAML needs PyYAML: pip install 'kgsearch[yaml]' "
            "(or write the schema as TOML or JSON)"
        ) from None
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f" at line {mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or exc
        raise InvalidRequest(f"{path}: not valid YAML{line}: {problem}") from None


def schema_from_models(
    entities: Sequence[type[BaseModel]],
    relations: Mapping[type[BaseModel], tuple[Sequence[type[BaseModel]], Sequence[type[BaseModel]]]]
    | None = None,
    *,
    name: str = "",
    description: str = "",
    single_valued: Sequence[type[BaseModel]] = (),
) -> GraphSchema:
    """A schema from Pydantic classes: each class's name is the type's name, its
    docstring the description and its fields (with their descriptions) the properties.

    Args:
        entities: The entity classes.
        relations: Each relation class → (allowed source classes, allowed target
            classes); an empty sequence allows any type.
        name: A title.
        description: The subject matter.
        single_valued: The relation classes that hold one value at a time.

    Example::

        class Person(BaseModel):
            \"\"\"A human being.\"\"\"
            birth_date: str | None = Field(None, description="as written")

        class Company(BaseModel):
            \"\"\"A business.\"\"\"

        class WorksFor(BaseModel):
            \"\"\"Employment of a person by a company.\"\"\"

        schema = schema_from_models([Person, Company], {WorksFor: ([Person], [Company])})
    """

    def described(model: type[BaseModel]) -> dict[str, Any]:
        return {
            "name": model.__name__,
            "description": " ".join((model.__doc__ or "").split()),
            "properties": {
                field: info.description or "" for field, info in model.model_fields.items()
            },
        }

    relation_types = []
    for model, (sources, targets) in (relations or {}).items():
        fields = described(model)
        fields.pop("properties")
        fields["source"] = [m.__name__ for m in sources]
        fields["target"] = [m.__name__ for m in targets]
        fields["single_valued"] = model in single_valued
        relation_types.append(fields)
    return schema_from_mapping(
        {
            "name": name,
            "description": description,
            "entity_types": [described(m) for m in entities],
            "relation_types": relation_types,
        },
        source="schema_from_models",
    )


def schema_from_setting(
    value: str | Path | Mapping[str, Any] | None, *, base: Path | None = None
) -> GraphSchema | None:
    """The schema an ``[extract] schema`` setting names: a file path, an inline table,
    or None (open extraction).

    Args:
        value: The setting.
        base: The folder a relative path is read from (that of ``kgsearch.toml``);
            None: the working directory.

    Raises:
        InvalidRequest: The file or the table is not a valid schema.
    """
    if value is None or value == "":
        return None
    if isinstance(value, Mapping):
        return schema_from_mapping(value, source="[extract] schema")
    path = Path(value)
    if base is not None and not path.is_absolute():
        path = base / path
    return load_schema(path)
