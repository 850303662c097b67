"""Readers that turn import files into ``(location, record)`` pairs, streaming.

Formats (see ``docs/data-format.md``):

* ``.jsonl`` / ``.ndjson`` — one JSON record per line with a ``kind``;
* ``.json`` — a graph document ``{"objects": [...], "relationships": [...], ...}``
  or a list of records (read whole: use JSONL for large graphs);
* ``.csv`` — objects (columns ``type,key,...``) or relationships (columns
  ``type`` plus ``source_id`` or ``source_type,source_key`` and the same for target);
  other columns become properties.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

__all__ = ["Raw", "RecordError", "count_records", "read_records"]

_LIST_COLUMNS = ("tags", "labels", "source_chunks")
_GRAPH_KEYS = {
    "objects": "object",
    "relationships": "relationship",
    "sources": "source",
    "chunks": "chunk",
    "mentions": "mention",
}
_REL_FIELDS = ("id", "label", "weight", "valid_from", "valid_to", "description")
_OBJECT_FIELDS = ("id",)


class RecordError(Exception):
    """A record that cannot be read at all; carries its location."""

    def __init__(self, location: str, reason: str) -> None:
        super().__init__(f"{location}: {reason}")
        self.location = location
        self.reason = reason


Raw = dict[str, Any] | str | RecordError


def _format(path: Path) -> str:
    suffix = path.suffix.lower()
    if suffix in (".jsonl", ".ndjson"):
        return "jsonl"
    if suffix == ".json":
        return "json"
    if suffix == ".csv":
        return "csv"
    raise RecordError(str(path), "unknown file type; use .jsonl, .json or .csv")


def count_records(path: Path) -> int | None:
    """A cheap count of records for progress bars (lines for JSONL/CSV)."""
    if _format(path) == "json":
        return None
    with path.open("rb") as handle:
        lines = sum(chunk.count(b"\n") for chunk in iter(lambda: handle.read(1 << 20), b""))
    return lines


def read_records(path: Path) -> Iterator[tuple[str, Raw]]:
    """Yield ``(location, record)``: a dict, a raw JSON line, or a :class:`RecordError`."""
    fmt = _format(path)
    if not path.is_file():
        raise RecordError(str(path), "file not found")
    if fmt == "jsonl":
        yield from _jsonl(path)
    elif fmt == "json":
        yield from _json(path)
    else:
        yield from _csv(path)


def _jsonl(path: Path) -> Iterator[tuple[str, Raw]]:
    with path.open(encoding="utf-8-sig") as handle:  # a BOM (Excel, Notepad) is skipped
        lineno = 0
        while True:
            lineno += 1
            try:
                line = handle.readline()
            except UnicodeDecodeError as exc:
                loc = f"{path}:{lineno}"
                yield loc, RecordError(loc, f"not valid UTF-8: {exc.reason}")
                return
            if not line:
                return
            if not line.strip():
                continue
            # The line stays raw: the importer reads its kind cheaply and validates it
            # with pydantic's JSON parser once, in the pass that writes that kind.
            yield f"{path}:{lineno}", line


def _json(path: Path) -> Iterator[tuple[str, Raw]]:
    try:
        document = json.loads(path.read_text(encoding="utf-8-sig"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        line = getattr(exc, "lineno", None)
        loc = f"{path}:{line}" if line else str(path)
        yield loc, RecordError(loc, f"invalid JSON: {exc}")
        return
    except RecursionError:
        yield str(path), RecordError(str(path), "invalid JSON: nested too deeply to read")
        return
    if isinstance(document, list):
        for index, record in enumerate(document):
            loc = f"{path}:[{index}]"
            if isinstance(record, dict):
                yield loc, record
            else:
                yield loc, RecordError(loc, "a record must be a JSON object with a 'kind'")
        return
    if not isinstance(document, dict):
        yield str(path), RecordError(str(path), "expected a graph object or a list of records")
        return
    unknown = set(document) - set(_GRAPH_KEYS)
    if unknown:
        yield (
            str(path),
            RecordError(
                str(path), f"unknown top-level keys {sorted(unknown)}; expected {list(_GRAPH_KEYS)}"
            ),
        )
        return
    for key, kind in _GRAPH_KEYS.items():
        items = document.get(key, [])
        if not isinstance(items, list):
            yield f"{path}:{key}", RecordError(f"{path}:{key}", "must be a list")
            continue
        for index, record in enumerate(items):
            loc = f"{path}:{key}[{index}]"
            if isinstance(record, dict):
                yield loc, {"kind": kind, **record}
            else:
                yield loc, RecordError(loc, "a record must be a JSON object")


def _csv(path: Path) -> Iterator[tuple[str, Raw]]:
    with path.open(encoding="utf-8-sig", newline="") as handle:
        reader = csv.DictReader(handle)
        header = [h.strip() for h in (reader.fieldnames or [])]
        is_rel = "source_id" in header or "source_key" in header
        problem = _csv_header_problem(header, is_rel)
        if problem is not None:
            loc = f"{path}:1"
            yield loc, RecordError(loc, f"{problem}; got {header}")
            return
        try:
            for row in reader:
                loc = f"{path}:{reader.line_num}"
                if None in row:
                    yield loc, RecordError(loc, "more cells than header columns")
                    continue
                cells = {k.strip(): v for k, v in row.items() if v not in (None, "")}
                yield loc, (_csv_relationship(cells) if is_rel else _csv_object(cells))
        except (csv.Error, UnicodeDecodeError) as exc:
            loc = f"{path}:{reader.line_num}"
            yield loc, RecordError(loc, f"unreadable CSV: {exc}")


_OBJECTS_HEADER = "an objects CSV needs columns type,key (then any properties)"
_RELATIONSHIPS_HEADER = (
    "a relationships CSV needs columns type,source_id,target_id or "
    "type,source_type,source_key,target_type,target_key (then any properties)"
)


def _csv_header_problem(header: list[str], is_rel: bool) -> str | None:
    """What is wrong with a CSV header, in the words of the kind it looks like."""
    columns = set(header)
    ends = ("source", "target")
    if is_rel or any(h.startswith(ends) for h in header):
        sides = all(
            f"{end}_id" in columns or {f"{end}_type", f"{end}_key"} <= columns for end in ends
        )
        return None if sides and "type" in columns else _RELATIONSHIPS_HEADER
    if {"type", "key"} <= columns:
        return None
    return f"{_OBJECTS_HEADER}, or {_RELATIONSHIPS_HEADER}"


def _split(value: str) -> list[str]:
    return [v.strip() for v in value.split(";") if v.strip()]


def _csv_object(cells: dict[str, str]) -> dict[str, Any]:
    record: dict[str, Any] = {
        "kind": "object",
        "type": cells.pop("type", ""),
        "key": cells.pop("key", ""),
    }
    for name in _OBJECT_FIELDS:
        if name in cells:
            record[name] = cells.pop(name)
    for name in ("tags", "labels"):
        if name in cells:
            record[name] = _split(cells.pop(name))
    record["properties"] = cells
    return record


def _endpoint(cells: dict[str, str], side: str) -> str | dict[str, str]:
    if f"{side}_id" in cells:
        return cells.pop(f"{side}_id")
    return {"type": cells.pop(f"{side}_type", ""), "key": cells.pop(f"{side}_key", "")}


def _csv_relationship(cells: dict[str, str]) -> dict[str, Any]:
    record: dict[str, Any] = {
        "kind": "relationship",
        "type": cells.pop("type", ""),
        "source": _endpoint(cells, "source"),
        "target": _endpoint(cells, "target"),
    }
    for name in _REL_FIELDS:
        if name in cells:
            record[name] = cells.pop(name)
    if "source_chunks" in cells:
        record["source_chunks"] = _split(cells.pop("source_chunks"))
    record["properties"] = cells
    return record
