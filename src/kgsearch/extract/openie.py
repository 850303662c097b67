"""Import of HippoRAG-style OpenIE output: entities and triples already extracted per passage.

The file (HippoRAG v1's ``openie_*_results_ner_<model>_<n>.json``) is one JSON object
whose ``docs`` list holds, per passage, ``title``, ``text`` (and ``passage`` =
``title + "\\n" + text``), ``extracted_entities`` (strings) and ``extracted_triples``
(``[subject, predicate, object]`` lists). It has no entity types, no descriptions and
no keywords, so every entity gets type ``entity`` and an empty description, and a
relationship's description is the triple read as a sentence ("subject predicate
object"). Triple ends missing from the passage's entity list are added as entities, so
every relationship has both endpoints (names are merged case-insensitively, and an end
takes the spelling of the listed entity). A triple that is not three non-empty strings
becomes a :class:`~kgsearch.extract.schema.Rejection` (kind ``record``, reason
``malformed``); a file that is not this format raises
:class:`~kgsearch.errors.ImportFailed` naming the position.

Records are matched to chunks by text (:func:`text_key`, :func:`index_by_text`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kgsearch.errors import ImportFailed
from kgsearch.extract.schema import (
    ExtractedEntity,
    ExtractedGraph,
    ExtractedRelation,
    ExtractionResult,
    Rejection,
)

__all__ = [
    "OpenIERecord",
    "index_by_text",
    "load_openie",
    "openie_model",
    "parse_openie",
    "text_key",
]

_MODEL_IN_NAME = re.compile(r"((?:gpt|o\d)[-\w.]*?)(?:_\d+)?$")


@dataclass(frozen=True)
class OpenIERecord:
    """One passage of an OpenIE file and the graph read from it.

    Attributes:
        position: Index of the passage in the file's ``docs`` list.
        title: The passage title ("" when the file has none).
        text: The passage text, without the title.
        graph: Entities (type ``entity``) and relationships from the triples.
        rejected: Triples (and entity strings) that could not be used, with the reason.
        model: The model that made the extraction (``provider:model``), or "".
        extractor: Always ``openie``.
    """

    position: int
    title: str
    text: str
    graph: ExtractedGraph
    rejected: tuple[Rejection, ...] = ()
    model: str = ""
    extractor: str = "openie"

    @property
    def passage(self) -> str:
        """``title + "\\n" + text`` (HippoRAG's ``passage``), or the text alone."""
        return f"{self.title}\n{self.text}" if self.title else self.text

    def result(self, chunk_id: str) -> ExtractionResult:
        """This record as the extraction result of the chunk it was matched to."""
        return ExtractionResult(
            chunk_id=chunk_id,
            graph=self.graph.model_copy(deep=True),
            rejected=list(self.rejected),
            extractor=self.extractor,
            model=self.model,
        )


def openie_model(path: str | Path) -> str:
    """The model named in a HippoRAG OpenIE file name, as ``openai:<model>``, or "".

    ``openie_gpt-3.5-turbo-1106.json`` and
    ``openie_musique_train_results_ner_gpt-3.5-turbo-1106_1890.json`` both give
    ``openai:gpt-3.5-turbo-1106``.
    """
    match = _MODEL_IN_NAME.search(Path(path).stem)
    return f"openai:{match.group(1)}" if match else ""


def load_openie(path: str | Path, *, model: str | None = None) -> list[OpenIERecord]:
    """Read an OpenIE file into one record per passage, in file order.

    Args:
        path: The JSON file (its bare ``NaN`` values are accepted, as HippoRAG writes them).
        model: The extraction model as ``provider:model``; by default read from the file
            name (:func:`openie_model`).

    Returns:
        One :class:`OpenIERecord` per entry of ``docs``.

    Raises:
        ImportFailed: The file is missing, is not JSON, or is not this format; the
            message and ``details['errors']`` give the position.
    """
    path = Path(path)
    if not path.is_file():
        raise _failed(str(path), "file not found")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as exc:
        raise _failed(f"{path}: byte {exc.start}", "not UTF-8 text") from None
    except json.JSONDecodeError as exc:
        raise _failed(f"{path}:{exc.lineno}:{exc.colno}", f"not JSON ({exc.msg})") from None
    return parse_openie(
        data, model=openie_model(path) if model is None else model, source=str(path)
    )


def parse_openie(data: Any, *, model: str = "", source: str = "openie") -> list[OpenIERecord]:
    """Records from already-parsed OpenIE JSON (see :func:`load_openie`).

    Args:
        data: The decoded file: an object with a ``docs`` list.
        model: Stored on every record.
        source: Where the data came from, used in error positions.

    Raises:
        ImportFailed: ``data`` is not this format; the error names the position.
    """
    if not isinstance(data, dict) or not isinstance(data.get("docs"), list):
        raise _failed(source, 'expected a JSON object with a "docs" list (HippoRAG OpenIE output)')
    return [_record(i, doc, model, f"{source}: docs[{i}]") for i, doc in enumerate(data["docs"])]


def text_key(text: str) -> str:
    """The key passages and chunks are matched on: the text with whitespace collapsed."""
    return " ".join(text.split())


def index_by_text(records: Iterable[OpenIERecord]) -> dict[str, OpenIERecord]:
    """Records by :func:`text_key` of both their text and their title + text.

    A chunk made from a passage with or without its title line then finds its record
    with ``index[text_key(chunk.text)]``. The first record wins when texts repeat.
    """
    index: dict[str, OpenIERecord] = {}
    for record in records:
        for text in (record.text, record.passage):
            index.setdefault(text_key(text), record)
    return index


def _record(position: int, doc: Any, model: str, where: str) -> OpenIERecord:
    if not isinstance(doc, dict):
        raise _failed(where, f"expected an object, got {type(doc).__name__}")
    for name in ("text", "extracted_entities", "extracted_triples"):
        if name not in doc:
            raise _failed(where, f'missing "{name}"')
    text, title = doc["text"], doc.get("title", "")
    if not isinstance(text, str) or not isinstance(title, str):
        raise _failed(where, '"text" and "title" must be strings')
    for name in ("extracted_entities", "extracted_triples"):
        if not isinstance(doc[name], list):
            raise _failed(where, f'"{name}" must be a list, got {type(doc[name]).__name__}')
    graph, rejected = _graph(doc["extracted_entities"], doc["extracted_triples"])
    return OpenIERecord(position, title, text, graph, tuple(rejected), model)


def _graph(names: list[Any], triples: list[Any]) -> tuple[ExtractedGraph, list[Rejection]]:
    entities: dict[str, ExtractedEntity] = {}
    relationships: list[ExtractedRelation] = []
    rejected: list[Rejection] = []
    for name in names:
        if not isinstance(name, str) or not name.strip():
            rejected.append(Rejection(kind="entity", reason="malformed", item=json.dumps(name)))
            continue
        entities.setdefault(name.strip().casefold(), ExtractedEntity(name=name.strip()))
    for triple in triples:
        if not (
            isinstance(triple, list)
            and len(triple) == 3
            and all(isinstance(part, str) and part.strip() for part in triple)
        ):
            rejected.append(Rejection(kind="record", reason="malformed", item=json.dumps(triple)))
            continue
        source, relation, target = (part.strip() for part in triple)
        # Ends take the spelling of the entity already listed, so they match it by name.
        source, target = (
            entities.setdefault(end.casefold(), ExtractedEntity(name=end)).name
            for end in (source, target)
        )
        relationships.append(
            ExtractedRelation(
                source=source,
                target=target,
                relation=relation,
                description=f"{source} {relation} {target}",
            )
        )
    return ExtractedGraph(entities=list(entities.values()), relationships=relationships), rejected


def _failed(location: str, reason: str) -> ImportFailed:
    return ImportFailed(
        f"{location}: {reason}", details={"errors": [{"location": location, "reason": reason}]}
    )
