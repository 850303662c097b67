"""Domain-aware extraction prompts: load, override from settings, render to chat messages.

Each domain is a TOML file in ``extract/prompts/`` (package data): a version, the
entity types, extra instructions and worked examples. ``system.md`` is the template
they share. A prompt's id is ``extract/<domain>`` and its version changes whenever the
text it renders could change: bump the TOML's ``version`` when editing the domain or
the shared template (the snapshot tests in ``tests/unit/extract`` fail until you do);
settings overrides add a ``+custom.<hash>`` suffix on their own.

The model is asked for JSON matching :class:`ExtractedGraph`'s schema, and the chunk is
sent between ``<document>`` tags as data, never as instructions.
"""

from __future__ import annotations

import hashlib
import json
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cache
from importlib import resources
from string import Template
from typing import Any

from kgsearch.errors import InvalidRequest
from kgsearch.extract.ontology import GraphSchema
from kgsearch.extract.schema import ExtractedGraph
from kgsearch.llm.base import Message

__all__ = [
    "DomainPrompt",
    "PromptExample",
    "gleaning_message",
    "known_domains",
    "load_prompt",
    "output_schema",
    "prompt_from_settings",
    "render",
    "render_packed",
    "schema_section",
    "with_schema",
]

DEFAULT_LANGUAGE = "the language of the document"
GLEANING = (
    "Some entities and relationships in the document were missed in the last answer. "
    "Add them now in the same JSON format, listing only the new ones (an entity you "
    "already gave may appear again as a relationship endpoint)."
)


@dataclass(frozen=True)
class PromptExample:
    """A worked example: a short document and the graph the model should answer."""

    text: str
    graph: ExtractedGraph


@dataclass(frozen=True)
class DomainPrompt:
    """An extraction prompt for one domain.

    Attributes:
        domain: ``general``, ``software``, ``biomedical``, ``finance``, ``legal``.
        version: Changes whenever the rendered text could change.
        description: The subject matter, as the prompt names it.
        entity_types: The types the model should use.
        instructions: Domain guidance added to the shared instructions.
        examples: Worked examples shown before the document.
        language: The language descriptions are written in.
        schema: The graph schema the answer must follow (None: open extraction).
    """

    domain: str
    version: str
    description: str
    entity_types: tuple[str, ...]
    instructions: str = ""
    examples: tuple[PromptExample, ...] = field(default=())
    language: str = DEFAULT_LANGUAGE
    schema: GraphSchema | None = None

    @property
    def id(self) -> str:
        """``extract/<domain>``."""
        return f"extract/{self.domain}"


def known_domains() -> list[str]:
    """The domains with a packaged prompt, sorted."""
    return sorted(_domain_files())


@cache
def _domain_files() -> dict[str, str]:
    folder = resources.files("kgsearch.extract") / "prompts"
    return {
        entry.name.removesuffix(".toml"): entry.read_text(encoding="utf-8")
        for entry in folder.iterdir()
        if entry.name.endswith(".toml")
    }


@cache
def _template() -> Template:
    path = resources.files("kgsearch.extract") / "prompts" / "system.md"
    return Template(path.read_text(encoding="utf-8"))


def load_prompt(domain: str = "general") -> DomainPrompt:
    """The packaged prompt for ``domain``.

    Raises:
        InvalidRequest: No prompt for that domain (the message lists the known ones).
    """
    files = _domain_files()
    if domain not in files:
        raise InvalidRequest(
            f"unknown extraction domain {domain!r}; known domains: {', '.join(sorted(files))}",
            details={"domain": domain, "known": sorted(files)},
        )
    data = tomllib.loads(files[domain])
    return DomainPrompt(
        domain=domain,
        version=str(data["version"]),
        description=str(data["description"]),
        entity_types=tuple(str(t) for t in data["entity_types"]),
        instructions=str(data.get("instructions", "")).strip(),
        examples=tuple(_example(e) for e in data.get("examples", [])),
    )


def _example(data: Mapping[str, Any]) -> PromptExample:
    try:
        graph = ExtractedGraph.model_validate(
            {
                "entities": data.get("entities", []),
                "relationships": data.get("relationships", []),
            }
        )
        return PromptExample(text=str(data["text"]).strip(), graph=graph)
    except (KeyError, ValueError) as exc:
        raise InvalidRequest(f"bad extraction example: {exc}") from exc


def prompt_from_settings(settings: Mapping[str, Any]) -> DomainPrompt:
    """The prompt an ``[extract]`` settings section asks for.

    Args:
        settings: ``domain`` (default ``general``) and optional overrides:
            ``entity_types`` (list of str), ``instructions`` (str, added after the
            domain's own), ``examples`` (list of ``{text, entities, relationships}``,
            replacing the domain's), ``language`` (str). Other keys are ignored.

    Returns:
        The domain's prompt with the overrides applied; its version carries a
        ``+custom.<hash>`` suffix when anything was overridden.

    Raises:
        InvalidRequest: Unknown domain or a malformed override.
    """
    prompt = load_prompt(str(settings.get("domain") or "general"))
    changes: dict[str, Any] = {}
    if settings.get("entity_types"):
        types = settings["entity_types"]
        if isinstance(types, str) or not isinstance(types, Sequence):
            raise InvalidRequest("extract.entity_types must be a list of strings")
        changes["entity_types"] = tuple(str(t).strip() for t in types if str(t).strip())
    if settings.get("instructions"):
        extra = str(settings["instructions"]).strip()
        changes["instructions"] = f"{prompt.instructions}\n{extra}".strip()
    if settings.get("examples") is not None:
        examples = settings["examples"]
        if not isinstance(examples, Sequence) or not all(isinstance(e, Mapping) for e in examples):
            raise InvalidRequest("extract.examples must be a list of {text, entities, …}")
        changes["examples"] = tuple(_example(e) for e in examples)
    if settings.get("language"):
        changes["language"] = str(settings["language"]).strip()
    if not changes:
        return prompt
    digest = hashlib.sha256(
        json.dumps(changes, sort_keys=True, default=_jsonable).encode()
    ).hexdigest()[:8]
    return replace(prompt, version=f"{prompt.version}+custom.{digest}", **changes)


def with_schema(prompt: DomainPrompt, schema: GraphSchema | None) -> DomainPrompt:
    """``prompt`` asking for ``schema``'s types and relations (unchanged for None).

    The entity types become the schema's (when it lists any), the system prompt gets a
    "Graph schema" section and the reply's JSON schema enums; the version gains a
    ``+schema.<digest>`` suffix, so cached replies never cross schemas.
    """
    if schema is None:
        return prompt
    types = tuple(t.name for t in schema.entity_types) or prompt.entity_types
    return replace(
        prompt,
        schema=schema,
        entity_types=types,
        version=f"{prompt.version}+schema.{schema.digest}",
    )


def schema_section(schema: GraphSchema) -> str:
    """The prompt's "Graph schema" section: each entity type and relation type with
    its description, and each relation's allowed (source, target) types."""
    lines = ["# Graph schema", "Use only these types and relations; leave out facts that fit none."]
    if schema.description:
        lines.append(schema.description.strip())
    if schema.entity_types:
        lines.append("Entity types:")
        for entity in schema.entity_types:
            line = f"- {entity.name}" + (f": {entity.description}" if entity.description else "")
            if entity.properties:
                line += f" (properties: {', '.join(entity.properties)})"
            lines.append(line)
    if schema.relation_types:
        lines.append(
            'Relations (write the "relation" field exactly as named; source → target types):'
        )
        for relation in schema.relation_types:
            source = " or ".join(relation.source) or "any"
            target = " or ".join(relation.target) or "any"
            line = f"- {relation.name} ({source} → {target})"
            if relation.description:
                line += f": {relation.description}"
            if relation.single_valued:
                line += " [one value at a time]"
            lines.append(line)
    return "\n".join(lines)


def _jsonable(value: Any) -> Any:
    if isinstance(value, PromptExample):
        return {"text": value.text, "graph": value.graph.model_dump()}
    raise TypeError(type(value).__name__)


def output_schema(*, packed: bool = False, graph: GraphSchema | None = None) -> dict[str, Any]:
    """The JSON Schema the reply must match: :class:`ExtractedGraph`'s, plus a
    required ``chunk`` number on every item when several chunks share one call, and
    with a graph schema, enums of its entity types and relation labels (the relation
    then required)."""
    schema = ExtractedGraph.model_json_schema()
    if graph is not None and graph.entity_types:
        entity = schema["$defs"]["ExtractedEntity"]["properties"]["type"]
        entity["enum"] = [t.name for t in graph.entity_types]
    if graph is not None and graph.relation_types:
        definition = schema["$defs"]["ExtractedRelation"]
        definition["properties"]["relation"]["enum"] = [r.name for r in graph.relation_types]
        definition["required"] = [*definition.get("required", []), "relation"]
    if packed:
        for name in ("ExtractedEntity", "ExtractedRelation"):
            definition = schema["$defs"][name]
            definition["properties"]["chunk"] = {"title": "Chunk", "type": "integer"}
            definition["required"] = [*definition.get("required", []), "chunk"]
    return schema


def _system(prompt: DomainPrompt, *, packed: bool) -> str:
    examples = "".join(
        f"\n# Example {n}\n{_document(e.text)}\nAnswer:\n"
        f"{json.dumps(e.graph.model_dump(), ensure_ascii=False, indent=1)}\n"
        for n, e in enumerate(prompt.examples, 1)
    )
    instructions = prompt.instructions
    if packed:
        instructions += (
            '\n\nThe document is split into numbered chunks (<chunk n="1">…</chunk>). '
            'Add "chunk": n to every entity and relationship, the number of the chunk '
            "it comes from; list an entity once per chunk that mentions it."
        )
    guidance = f"# Domain guidance\n{instructions}" if instructions else ""
    if prompt.schema is not None:
        guidance = f"{guidance}\n\n{schema_section(prompt.schema)}".strip()
    text = _template().substitute(
        domain_description=prompt.description,
        entity_types=", ".join(prompt.entity_types),
        instructions=guidance,
        schema=json.dumps(output_schema(packed=packed, graph=prompt.schema), separators=(",", ":")),
        language=prompt.language,
        examples=examples,
    )
    return text.strip() + "\n"


def _escape(text: str) -> str:
    """Keep a document from closing its own tags (and so escaping into instructions)."""
    for tag in ("document", "chunk"):
        text = text.replace(f"</{tag}", f"&lt;/{tag}").replace(f"<{tag}", f"&lt;{tag}")
    return text


def _document(text: str) -> str:
    return f"<document>\n{_escape(text)}\n</document>"


def render(prompt: DomainPrompt, text: str) -> list[Message]:
    """The messages that ask for one chunk's graph.

    Args:
        prompt: The domain prompt.
        text: The chunk text (sent inside ``<document>`` tags, tags in it escaped).
    """
    return [
        Message("system", _system(prompt, packed=False)),
        Message(
            "user",
            f"{_document(text)}\n\nExtract the entities and relationships of the document "
            "above as one JSON object.",
        ),
    ]


def render_packed(prompt: DomainPrompt, texts: Sequence[str]) -> list[Message]:
    """The messages that ask for several short chunks' graphs in one call.

    Each chunk is a numbered ``<chunk n="…">`` section (from 1) inside the document, and
    the model tags every item with its chunk number.
    """
    sections = "\n".join(
        f'<chunk n="{n}">\n{_escape(text)}\n</chunk>' for n, text in enumerate(texts, 1)
    )
    return [
        Message("system", _system(prompt, packed=True)),
        Message(
            "user",
            f"<document>\n{sections}\n</document>\n\nExtract the entities and "
            'relationships of every chunk above as one JSON object; give each item its "chunk".',
        ),
    ]


def gleaning_message(prompt: DomainPrompt) -> Message:
    """The follow-up that asks for what the previous answer missed."""
    return Message("user", GLEANING)
