"""Atomic, idempotent, streaming import of JSONL, JSON graph and CSV files.

Three passes over the files inside one transaction: the first writes objects and
sources, the second relationships and chunks, the third mentions (so a record may
come before what it points at in a file, and every reference is checked against
what the import and the store hold). Every bad record is collected with its file,
line and reason: a malformed record, a duplicate explicit id, a reference to a
missing object, source, chunk or relationship. If there is any, the transaction
rolls back and nothing is written. Memory stays bounded by the batch size and the
first 500,000 ids seen (duplicates past those are upserts, as on re-import).
"""

from __future__ import annotations

import gc
import json
import re
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ValidationError

from kgsearch.errors import ImportFailed
from kgsearch.io.readers import Raw, RecordError, count_records, read_records
from kgsearch.model import (
    Chunk,
    ChunkIn,
    Mention,
    MentionIn,
    ObjectIn,
    ObjectRef,
    Relationship,
    RelationshipIn,
    Source,
    SourceIn,
    display_name,
)
from kgsearch.store.base import Endpoint
from kgsearch.text import TEXT_VERSION
from kgsearch.writes.batch import ChunkRow, GraphBatch, write_batch
from kgsearch.writes.rows import (
    TextRules,
    describe_ref,
    refresh_relationship_texts,
    resolve_endpoints,
)
from kgsearch.writes.stores import GraphStore

__all__ = ["ImportProgress", "import_files"]

ImportProgress = Callable[[int, int | None], None]
"""Called as ``progress(advance, total)``; total counts records over both passes."""

_MODELS: dict[str, type[BaseModel]] = {
    "object": ObjectIn,
    "relationship": RelationshipIn,
    "source": SourceIn,
    "chunk": ChunkIn,
    "mention": MentionIn,
}
_PASSES: tuple[tuple[str, ...], ...] = (
    ("object", "source"),
    ("relationship", "chunk"),
    ("mention",),
)


class _ObjectRecord(ObjectIn):
    kind: Literal["object"]


class _RelationshipRecord(RelationshipIn):
    kind: Literal["relationship"]


class _SourceRecord(SourceIn):
    kind: Literal["source"]


class _ChunkRecord(ChunkIn):
    kind: Literal["chunk"]


class _MentionRecord(MentionIn):
    kind: Literal["mention"]


# Import lines carry a ``kind``; these subclasses accept it, so a JSON line is parsed
# and validated in one call of pydantic's (Rust) JSON parser.
_RECORDS: dict[str, type[BaseModel]] = {
    "object": _ObjectRecord,
    "relationship": _RelationshipRecord,
    "source": _SourceRecord,
    "chunk": _ChunkRecord,
    "mention": _MentionRecord,
}
_KIND = re.compile(r'\s*\{\s*"kind"\s*:\s*"([a-z]+)"')
"""A line that starts with its kind (as exported ones do) is sorted without parsing it;
any other is parsed, and only its top-level ``kind`` counts (a property named kind
does not)."""


def _kind_of(raw: dict[str, Any] | str) -> Any:
    """The record's kind, read without parsing the whole line when possible."""
    if isinstance(raw, dict):
        return raw.get("kind")
    match = _KIND.match(raw)
    if match is not None:
        return match.group(1)
    try:
        record = json.loads(raw)
    except (json.JSONDecodeError, RecursionError):
        return _INVALID
    return record.get("kind") if isinstance(record, dict) else _NOT_OBJECT


_INVALID = object()
_NOT_OBJECT = object()


def _bad_kind(raw: dict[str, Any] | str, kind: Any) -> str:
    if kind is _INVALID and isinstance(raw, str):
        try:
            json.loads(raw)
        except json.JSONDecodeError as exc:
            return f"invalid JSON: {exc.msg} (column {exc.colno})"
        except RecursionError:
            return "invalid JSON: nested too deeply to read"
    if kind is _NOT_OBJECT:
        return "a record must be a JSON object with a 'kind'"
    return f"unknown kind {kind!r}; expected one of {list(_MODELS)}"


_MAX_ERRORS = 100
_BATCH = 2000
_KNOWN_MAX = 500_000
_BULK_MIN = 5_000


def _reason(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors()[:3]:
        if err["type"] == "json_invalid":
            detail = str(err["msg"]).removeprefix("Invalid JSON: ").replace(" line 1 ", " ")
            return f"invalid JSON: {detail}"
        loc = ".".join(str(x) for x in err["loc"]) or "record"
        parts.append(f"{loc}: {err['msg']}")
    return "; ".join(parts)


class _Run:
    """State of one import: batches, counts and collected errors."""

    def __init__(
        self,
        store: GraphStore,
        rules: TextRules,
        project: str,
        progress: ImportProgress | None,
        total: int | None,
    ) -> None:
        self.store = store
        self.rules = rules
        self.project = project
        self.progress = progress
        self.total = total
        self.errors: list[dict[str, str]] = []
        self.error_count = 0
        self.counts = {"objects": 0, "relationships": 0, "sources": 0, "chunks": 0, "mentions": 0}
        self.batch: dict[str, list[tuple[str, Any]]] = {k: [] for k in _MODELS}
        self.renamed: list[str] = []
        # Endpoints of objects written by this import, so relationships resolve without
        # a query; bounded so memory stays flat on huge files (misses go to the store).
        self.known: dict[str | tuple[str, str], Endpoint] = {}
        # Explicit ids read so far, with where: a second record with one is refused.
        self.ids: dict[tuple[str, str], str] = {}
        self.fresh = store.counts(project)["objects"] == 0

    def error(self, location: str, reason: str) -> None:
        self.error_count += 1
        if len(self.errors) < _MAX_ERRORS:
            self.errors.append({"location": location, "reason": reason})

    def parse(self, location: str, raw: Raw, kinds: tuple[str, ...]) -> tuple[str, Any] | None:
        first_pass = kinds == _PASSES[0]
        if isinstance(raw, RecordError):
            if first_pass:
                self.error(raw.location, raw.reason)
            return None
        kind = _kind_of(raw)
        if kind not in _MODELS:
            if first_pass:
                self.error(location, _bad_kind(raw, kind))
            return None
        if kind not in kinds:
            return None
        model = _RECORDS[kind]
        try:
            if isinstance(raw, str):
                return kind, model.model_validate_json(raw.strip())
            return kind, model.model_validate(raw)
        except ValidationError as exc:
            self.error(location, _reason(exc))
            return None

    def add(self, location: str, kind: str, item: Any) -> None:
        explicit = getattr(item, "id", None)
        if explicit is not None:
            first = self.ids.get((kind, explicit))
            if first is not None:
                self.error(location, f"duplicate {kind} id {explicit!r} (first at {first})")
                return
            if len(self.ids) < _KNOWN_MAX:
                self.ids[(kind, explicit)] = location
        self.batch[kind].append((location, item))
        if len(self.batch[kind]) >= _BATCH:
            self.flush(kind)

    def flush(self, kind: str) -> None:
        items = self.batch[kind]
        self.batch[kind] = []
        if not items:
            return
        {
            "object": self._objects,
            "source": self._sources,
            "relationship": self._relationships,
            "chunk": self._chunks,
            "mention": self._mentions,
        }[kind](items)
        if self.progress is not None:
            self.progress(len(items), self.total)

    def _objects(self, items: Sequence[tuple[str, Any]]) -> None:
        objects: list[ObjectIn] = [o for _, o in items]
        refs = [ObjectRef(type=o.type, key=o.key) for o in objects]
        validating = self.error_count > 0  # nothing will be committed: resolve only
        before = {} if self.fresh else self.store.resolve(self.project, refs)
        rows = [self.rules.object_row(self.project, o) for o in objects]
        if not validating:
            write_batch(self.store, self.project, GraphBatch(objects=rows))
            self.counts["objects"] += len(objects)
        for ref, o, row in zip(refs, objects, rows, strict=True):
            stored = before.get(ref)
            earlier = self.known.get((o.type, o.key))
            if (
                stored is not None
                and not validating
                and display_name(stored.properties, stored.key, stored.id)
                != display_name(o.properties, o.key, stored.id)
            ):
                self.renamed.append(stored.id)
            # The store keeps the id a (type, key) was first stored with.
            first_id = stored.id if stored else earlier.id if earlier else row.id
            endpoint = Endpoint(first_id, o.type, o.key, dict(o.properties))
            if earlier is not None or len(self.known) < _KNOWN_MAX:
                self.known[(o.type, o.key)] = endpoint
                self.known[first_id] = endpoint

    def _sources(self, items: Sequence[tuple[str, Any]]) -> None:
        now = datetime.now(UTC)
        if self.error_count:
            return
        sources = [
            Source(
                id=s.id,
                project=self.project,
                title=s.title,
                uri=s.uri,
                metadata=s.metadata,
                created_at=now,
            )
            for _, s in items
        ]
        write_batch(self.store, self.project, GraphBatch(sources=sources))
        self.counts["sources"] += len(items)

    def _lookup(
        self, refs: Sequence[str | ObjectRef]
    ) -> tuple[dict[str | tuple[str, str], Endpoint], set[str | tuple[str, str]]]:
        """Resolve refs from this import's objects first, then the store."""
        found: dict[str | tuple[str, str], Endpoint] = {}
        unknown: list[str | ObjectRef] = []
        for ref in refs:
            key = _ref_key(ref)
            hit = self.known.get(key)
            if hit is not None:
                found[key] = hit
            elif key not in found:
                unknown.append(ref)
        resolved, missing = resolve_endpoints(self.store, self.project, unknown)
        for ref, endpoint in resolved.items():
            found[_ref_key(ref)] = endpoint
        return found, {_ref_key(m) for m in missing}

    def _relationships(self, items: Sequence[tuple[str, Any]]) -> None:
        found, missing = self._lookup([x for _, r in items for x in (r.source, r.target)])
        rows = []
        for location, r in items:
            source, target = found.get(_ref_key(r.source)), found.get(_ref_key(r.target))
            if source is None or target is None:
                absent = [describe_ref(x) for x in (r.source, r.target) if _ref_key(x) in missing]
                self.error(location, f"endpoint not found: {', '.join(absent)}")
                continue
            rows.append(self.rules.relationship_row(self.project, r, source, target))
        if not self.error_count:
            # Endpoints were resolved above against this transaction's objects.
            batch = GraphBatch(relationships=rows, endpoints_checked=True)
            write_batch(self.store, self.project, batch)
            self.counts["relationships"] += len(rows)

    def _chunks(self, items: Sequence[tuple[str, Any]]) -> None:
        if self.error_count:
            return
        titles = {
            s.id: s.title
            for s in self.store.get_sources(
                self.project, [c.source_id for _, c in items if c.source_id]
            )
        }
        dangling = [(loc, c) for loc, c in items if c.source_id and c.source_id not in titles]
        for location, c in dangling:  # sources are all written in the first pass
            self.error(location, f"source not found: {c.source_id!r}")
        if dangling:
            return
        now = datetime.now(UTC)
        rows: list[ChunkRow] = []
        for _, c in items:
            text, digest = TextRules.chunk_text(c, titles.get(c.source_id or ""))
            rows.append(
                (
                    Chunk(
                        id=c.id,
                        project=self.project,
                        text=c.text,
                        source_id=c.source_id,
                        position=c.position,
                        metadata=c.metadata,
                        created_at=now,
                        updated_at=now,
                    ),
                    text,
                    digest,
                    TEXT_VERSION,
                )
            )
        write_batch(self.store, self.project, GraphBatch(chunks=rows))
        self.counts["chunks"] += len(rows)

    def _mentions(self, items: Sequence[tuple[str, Any]]) -> None:
        found, missing = self._lookup([m.object for _, m in items if m.object is not None])
        absent = self._absent_targets([m for _, m in items])
        rows = []
        for location, m in items:
            dangling = [
                f"{what} not found: {value!r}"
                for what, value in (
                    ("source", m.source_id),
                    ("chunk", m.chunk_id),
                    ("relationship", m.relationship_id),
                )
                if value is not None and (what, value) in absent
            ]
            if not (m.source_id or m.chunk_id):
                self.error(location, "a mention needs source_id or chunk_id")
            elif m.object is None and m.relationship_id is None:
                self.error(location, "a mention needs an object or a relationship_id")
            elif m.object is not None and _ref_key(m.object) in missing:
                self.error(location, f"object not found: {describe_ref(m.object)}")
            elif dangling:
                self.error(location, "; ".join(dangling))
            else:
                rows.append(
                    Mention(
                        project=self.project,
                        source_id=m.source_id,
                        chunk_id=m.chunk_id,
                        object_id=found[_ref_key(m.object)].id if m.object else None,
                        relationship_id=m.relationship_id,
                    )
                )
        if not self.error_count:
            write_batch(self.store, self.project, GraphBatch(mentions=rows))
            self.counts["mentions"] += len(rows)

    def _absent_targets(self, mentions: Sequence[MentionIn]) -> set[tuple[str, str]]:
        """The (kind, id) of sources, chunks and relationships the mentions name that
        neither this import (written in earlier passes) nor the store holds. Once a
        record was bad nothing was written, so references are not checked then (they
        would all look missing)."""
        if self.error_count:
            return set()
        wanted = {
            "source": {m.source_id for m in mentions if m.source_id is not None},
            "chunk": {m.chunk_id for m in mentions if m.chunk_id is not None},
            "relationship": {m.relationship_id for m in mentions if m.relationship_id is not None},
        }
        readers: dict[str, Callable[[str, list[str]], Sequence[Source | Chunk | Relationship]]]
        readers = {
            "source": self.store.get_sources,
            "chunk": self.store.get_chunks,
            "relationship": self.store.get_relationships,
        }
        absent: set[tuple[str, str]] = set()
        for what, ids in wanted.items():
            if ids:
                there = {row.id for row in readers[what](self.project, sorted(ids))}
                absent.update((what, i) for i in ids - there)
        return absent


def _ref_key(ref: str | ObjectRef) -> str | tuple[str, str]:
    """A cheap dict key for a reference (pydantic models hash slowly)."""
    return ref if isinstance(ref, str) else (ref.type, ref.key)


def import_files(
    store: GraphStore,
    rules: TextRules,
    paths: Sequence[Path],
    *,
    project: str,
    progress: ImportProgress | None = None,
) -> dict[str, int]:
    """Import files into ``project`` in one transaction; all or nothing.

    Re-importing the same files changes nothing: objects are matched by type + key,
    relationships by id (or by type + endpoints when they have none).

    Returns:
        Rows written per kind.

    Raises:
        ImportFailed: Any record is bad; ``details['errors']`` lists up to 100 of
            them as ``{"location": "file:line", "reason": ...}``. Nothing is written.
    """
    paths = [Path(p) for p in paths]
    total = _records_total(paths)
    run = _Run(store, rules, project, progress, total)
    # Large imports rebuild indexes once at the end instead of row by row.
    existing = sum(store.counts(project).values())
    bulk = total is None or total // 2 >= max(_BULK_MIN, existing // 4)
    try:
        with _gc_paused(), store.bulk_load() if bulk else store.transaction():
            _read_all(run, paths)
            if run.renamed and not run.error_count:
                refresh_relationship_texts(
                    store, project, store.relationships_touching(project, run.renamed)
                )
            if run.error_count:
                raise _Abort
    except _Abort:
        first = run.errors[0]
        raise ImportFailed(
            f"{run.error_count} bad record(s); nothing was imported. First: "
            f"{first['location']}: {first['reason']}",
            details={"errors": run.errors, "error_count": run.error_count},
        ) from None
    return run.counts


def _records_total(paths: Sequence[Path]) -> int | None:
    """Records the progress bar expects (two passes), None when a file can't be counted.

    Raises:
        ImportFailed: A path is not a file, or a file cannot be read as records.
    """
    try:
        sizes = [count_records(p) for p in paths if p.is_file()]
    except RecordError as exc:
        raise ImportFailed(
            str(exc), details={"errors": [{"location": exc.location, "reason": exc.reason}]}
        ) from None
    missing = [str(p) for p in paths if not p.is_file()]
    if missing:
        raise ImportFailed(
            f"file(s) not found: {', '.join(missing)}",
            details={"errors": [{"location": m, "reason": "file not found"} for m in missing]},
        )
    if any(s is None for s in sizes):
        return None
    return 2 * sum(s for s in sizes if s is not None)


def _read_all(run: _Run, paths: Sequence[Path]) -> None:
    """Three passes over the files: objects and sources first, so the second pass's
    relationships and chunks can resolve what they point at, and mentions last, when
    every source, chunk and relationship of the import is written."""
    for kinds in _PASSES:
        for path in paths:
            for location, raw in read_records(path):
                parsed = run.parse(location, raw, kinds)
                if parsed is not None:
                    run.add(location, *parsed)
                if run.error_count >= 10 * _MAX_ERRORS:
                    break
        for kind in kinds:
            run.flush(kind)


@contextmanager
def _gc_paused() -> Iterator[None]:
    """The cyclic garbage collector off for the block.

    It rescans every live object once per ~700 allocations; an import allocates
    millions of short-lived, acyclic ones (measured: a quarter of the import time on
    MetaQA). Reference counting still frees them; collection resumes after.
    """
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()


class _Abort(Exception):
    """Internal: roll the import transaction back."""
