"""Documents stored together (``store_many``) give what storing them one by one
gives: the same results, the same rows, a source given twice seeing its first write."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from kgsearch import Engine
from kgsearch.document_values import Document
from kgsearch.store import connect
from kgsearch.testing import FakeEmbedder
from kgsearch.writes.documents import StoredDocument, store_document, store_many

PARAS = [f"Paragraph {i} tells of place {i} and person {i * 7}." for i in range(12)]


def doc(source: str, paras: list[str]) -> Document:
    text = "\n\n".join(paras)
    return Document(source_id=source, title=source, text=text, sha256=str(hash(text)))


def engine(path: Path) -> Engine:
    return Engine(connect(f"sqlite:///{path}"), embedder=FakeEmbedder(8), embed_on_write=False)


def shape(results: list[StoredDocument]) -> list[tuple[Any, ...]]:
    return [
        (r.source.id, r.source.metadata, [c.id for c in r.chunks], r.unchanged, r.removed)
        for r in results
    ]


def test_together_as_one_by_one(tmp_path: Path) -> None:
    first = [doc("a", PARAS[:6]), doc("b", PARAS[6:]), doc("c", PARAS[2:5])]
    then = [
        first[0],  # unchanged
        doc("b", PARAS[6:9]),  # lost chunks
        doc("a", [*PARAS[:3], "A new closing paragraph."]),  # again, changed
        doc("d", PARAS[:2]),  # new
    ]
    one, many = engine(tmp_path / "one.db"), engine(tmp_path / "many.db")
    ctx_one, ctx_many = one._writes(None), many._writes(None)
    got_one = [store_document(ctx_one, d, max_chars=60) for d in first]
    got_many = store_many(ctx_many, first, max_chars=60)
    assert shape(got_many) == shape(got_one)
    got_one = [store_document(ctx_one, d, max_chars=60) for d in then]
    got_many = store_many(ctx_many, then, max_chars=60)
    assert shape(got_many) == shape(got_one)
    assert [r.unchanged for r in got_many] == [True, False, False, False]
    assert got_many[1].removed and got_many[2].removed
    assert _rows(one) == _rows(many)


def _rows(e: Engine) -> list[tuple[Any, ...]]:
    db = e.store.db  # type: ignore[attr-defined]
    found: list[tuple[Any, ...]] = []
    for table in ("sources", "chunks"):
        for r in db.all(f"SELECT rowid, * FROM {table} ORDER BY rowid"):
            found.append(tuple(r[k] for k in r.keys() if not k.endswith("_at")))  # noqa: SIM118 (a Row iterates values)
    found += [tuple(r) for r in db.all("SELECT rowid, text FROM chunks_fts ORDER BY rowid")]
    return found


def test_a_document_alone_is_stored_as_before(tmp_path: Path) -> None:
    e = engine(tmp_path / "s.db")
    ctx = e._writes(None)
    stored = store_document(ctx, doc("x", PARAS), max_chars=80)
    assert not stored.unchanged and len(stored.chunks) > 1
    again = store_document(ctx, replace(doc("x", PARAS)), max_chars=80)
    assert again.unchanged and [c.id for c in again.chunks] == [c.id for c in stored.chunks]
