"""Export a project to JSONL or a JSON graph file that imports back identically.

Rows keep their ids, so re-importing an export into any store reproduces the same
objects, relationships, chunks, sources and mentions (and the same embedding texts).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

from kgsearch.errors import InvalidRequest
from kgsearch.model import Chunk, GraphObject, Mention, Relationship, Source
from kgsearch.store.base import GraphReads

__all__ = ["export", "records"]


def _object(o: GraphObject) -> dict[str, Any]:
    return {
        "kind": "object",
        "id": o.id,
        "type": o.type,
        "key": o.key,
        "tags": o.tags,
        "properties": o.properties,
        "labels": o.labels,
    }


def _relationship(r: Relationship) -> dict[str, Any]:
    record: dict[str, Any] = {
        "kind": "relationship",
        "id": r.id,
        "type": r.type,
        "source": r.source_id,
        "target": r.target_id,
    }
    optional = {
        "label": r.label,
        "description": r.description,
        "valid_from": r.valid_from.isoformat() if r.valid_from else None,
        "valid_to": r.valid_to.isoformat() if r.valid_to else None,
    }
    record.update({k: v for k, v in optional.items() if v is not None})
    if r.properties:
        record["properties"] = r.properties
    if r.weight != 1.0:
        record["weight"] = r.weight
    if r.source_chunks:
        record["source_chunks"] = r.source_chunks
    return record


def _source(s: Source) -> dict[str, Any]:
    return {"kind": "source", "id": s.id, "title": s.title, "uri": s.uri, "metadata": s.metadata}


def _chunk(c: Chunk) -> dict[str, Any]:
    return {
        "kind": "chunk",
        "id": c.id,
        "text": c.text,
        "source_id": c.source_id,
        "position": c.position,
        "metadata": c.metadata,
    }


def _mention(m: Mention) -> dict[str, Any]:
    record: dict[str, Any] = {"kind": "mention"}
    for name, value in (
        ("source_id", m.source_id),
        ("chunk_id", m.chunk_id),
        ("object", m.object_id),
        ("relationship_id", m.relationship_id),
    ):
        if value:
            record[name] = value
    return record


def records(store: GraphReads, project: str) -> Iterator[dict[str, Any]]:
    """Every live row of a project as import records, objects first."""
    yield from (_object(o) for o in store.iter_rows(project, "object"))
    yield from (_source(s) for s in store.iter_rows(project, "source"))
    yield from (_chunk(c) for c in store.iter_rows(project, "chunk"))
    yield from (_relationship(r) for r in store.iter_rows(project, "relationship"))
    yield from (_mention(m) for m in store.iter_rows(project, "mention"))


def export(
    store: GraphReads, path: Path, *, project: str, fmt: Literal["jsonl", "json"] = "jsonl"
) -> dict[str, int]:
    """Write ``project`` to ``path``; return rows written per kind.

    JSONL streams in constant memory; the JSON graph format holds the project in memory.
    """
    if fmt not in ("jsonl", "json"):
        raise InvalidRequest(f"unknown export format {fmt!r}; use jsonl or json")
    counts: dict[str, int] = {}
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".partial")
    if fmt == "jsonl":
        with tmp.open("w", encoding="utf-8") as handle:
            for record in records(store, project):
                counts[record["kind"]] = counts.get(record["kind"], 0) + 1
                handle.write(json.dumps(record, ensure_ascii=False) + "\n")
    else:
        graph: dict[str, list[dict[str, Any]]] = {
            "objects": [],
            "sources": [],
            "chunks": [],
            "relationships": [],
            "mentions": [],
        }
        for record in records(store, project):
            kind = record.pop("kind")
            counts[kind] = counts.get(kind, 0) + 1
            graph[kind + "s"].append(record)
        tmp.write_text(json.dumps(graph, ensure_ascii=False, indent=1), encoding="utf-8")
    tmp.replace(path)
    return counts
