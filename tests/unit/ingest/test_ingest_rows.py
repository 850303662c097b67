"""The rows an ingest writes are pinned: a fixed corpus through a fixed extractor gives
exactly these objects, relationships, chunks, sources, mentions, task records and
full-text rows (a digest of them, stamps left out), so a change that only makes the
write path faster (issue 29) cannot change what it stores.

The corpus makes the write path do all its work: names repeated across documents and
extraction batches (rows merged again with stored ones, descriptions summarised past
the budget), endpoints no chunk typed (landing on typed objects), an imported object
the extracted names land on, a soft-deleted object with an id of its own that an
extracted entity revives, and a second ingest that changes and drops chunks.

The extraction runs leave the objects' full-text upkeep to their end (m014): the
digest reads the tables as every reader sees them, and the index itself is checked
against a fresh index of the live rows' texts, with nothing left waiting.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
import sqlite3
from collections.abc import Sequence
from itertools import pairwise
from pathlib import Path

from kgsearch import Engine
from kgsearch.extract.schema import (
    ChunkText,
    ExtractedEntity,
    ExtractedGraph,
    ExtractedRelation,
    ExtractionResult,
)
from kgsearch.io.documents import Document
from kgsearch.model import ObjectIn
from kgsearch.store import connect
from kgsearch.testing import FakeEmbedder

# The digest of the rows written by 72dda37 (before the issue 29 write-path work).
EXPECTED = "3abf7e7a6da39578"

_NAME = re.compile(r"\b[A-Z][a-z]+(?: [A-Z][a-z]+)*")
_PEOPLE = ["Ada Lovelace", "Charles Babbage", "Mary Somerville", "Alan Turing", "Grace Hopper"]
_PLACES = ["London", "Paris", "Cambridge", "Berlin"]
_DEEDS = [
    "wrote to",
    "worked with",
    "met",
    "argued with",
    "praised the notes of",
    "visited",
    "corresponded at length with",
]


class _Extractor:
    """Capitalised runs are entities (people or places, described by their sentence);
    neighbours in a sentence are related, described by it."""

    name = "rows"
    version = "rows@1"

    def extract(self, chunks: Sequence[ChunkText]) -> list[ExtractionResult]:
        return [self._one(c) for c in chunks]

    def _one(self, chunk: ChunkText) -> ExtractionResult:
        entities: dict[str, ExtractedEntity] = {}
        relations: list[ExtractedRelation] = []
        for sentence in re.split(r"(?<=[.!?])\s+", chunk.text):
            names = _NAME.findall(sentence)
            for name in names:
                # the first word of a sentence is an endpoint no chunk typed
                if name != names[0]:
                    kind = "place" if name in _PLACES else "person"
                    entities.setdefault(
                        name,
                        ExtractedEntity(
                            name=name, type=kind, description=f"{name} appears: {sentence}"
                        ),
                    )
            for a, b in pairwise(names):
                if a != b:
                    relations.append(
                        ExtractedRelation(
                            source=a,
                            target=b,
                            relation="linked",
                            description=sentence,
                            keywords=[a.split()[0].lower(), "link"],
                            strength=0.5 + len(sentence) % 5 / 10,
                        )
                    )
        return ExtractionResult(
            chunk_id=chunk.id,
            extractor=self.name,
            model="rows:model",
            graph=ExtractedGraph(entities=list(entities.values()), relationships=relations),
        )


def _corpus(seed: int, count: int) -> list[Document]:
    rng = random.Random(seed)
    docs = []
    for i in range(count):
        sentences = []
        for _ in range(rng.randint(2, 4)):
            a, b = rng.sample(_PEOPLE, 2)
            place = rng.choice(_PLACES)
            sentences.append(
                f"{a} {rng.choice(_DEEDS)} {b} in {place} during year {rng.randint(1800, 1990)} "
                f"about topic {rng.randint(1, 40)}."
            )
        text = " ".join(sentences)
        docs.append(Document(source_id=f"doc:{i}", title=f"Doc {i}", text=text, sha256=text))
    return docs


def _rows(path: Path) -> str:
    stamp = re.compile(r'"extracted_at": ?"[^"]*"')
    skip = {"created_at", "updated_at", "claimed_until", "next_attempt_at", "embedded_at"}
    db = sqlite3.connect(path)
    db.row_factory = sqlite3.Row
    digest = hashlib.sha256()
    for table in (
        "objects",
        "relationships",
        "chunks",
        "sources",
        "mentions",
        "tasks",
        "objects_fts",
        "relationships_fts",
        "chunks_fts",
    ):
        lines = []
        for row in db.execute(f"SELECT * FROM {table}"):
            values = {k: row[k] for k in row.keys() if k not in skip}  # noqa: SIM118
            if "deleted_at" in values:  # when is a stamp; whether is the row's state
                values["deleted_at"] = values["deleted_at"] is not None
            if table == "tasks" and values["result"]:
                values["result"] = json.loads(values["result"])
            line = json.dumps(values, sort_keys=True, default=str)
            lines.append(stamp.sub("STAMP", line.replace('\\"', '"')))
        digest.update(f"{table}:{len(lines)}\n".encode())
        digest.update("\n".join(sorted(lines)).encode())
    db.close()
    return digest.hexdigest()[:16]


def _index_is_current(path: Path, table: str) -> bool:
    """Whether ``{table}_fts`` indexes exactly the live rows' current texts (word by
    word and row by row, against a fresh index of them) and no row waits for it."""
    db = sqlite3.connect(path)
    db.execute("CREATE VIRTUAL TABLE temp.fresh USING fts5(text, tokenize='porter unicode61')")
    db.execute(
        f"INSERT INTO temp.fresh(rowid, text) SELECT rowid, text FROM {table} "
        "WHERE deleted_at IS NULL"
    )
    db.execute("CREATE VIRTUAL TABLE temp.v_fresh USING fts5vocab(temp, fresh, instance)")
    db.execute(f"CREATE VIRTUAL TABLE temp.v_kept USING fts5vocab(main, {table}_fts, instance)")
    query = "SELECT term, doc, offset FROM temp.{} ORDER BY 1, 2, 3"
    same = (
        db.execute(query.format("v_fresh")).fetchall()
        == db.execute(query.format("v_kept")).fetchall()
    )
    (waiting,) = db.execute("SELECT count(*) FROM fts_stale").fetchone()
    db.close()
    return same and waiting == 0


def test_an_ingest_writes_exactly_the_pinned_rows(tmp_path: Path) -> None:
    path = tmp_path / "kg.db"
    extractor = _Extractor()
    engine = Engine(
        connect(f"sqlite:///{path}"),
        embedder=FakeEmbedder(8),
        extractors=lambda name, domain: extractor,
    )
    # imported data an extracted name lands on, and a soft-deleted object with an id of
    # its own that extraction writes again (it keeps that id)
    engine.add_objects([ObjectIn(type="city", key="paris", properties={"name": "Paris"})])
    (gone,) = engine.add_objects(
        [ObjectIn(id="custom-berlin", type="place", key="berlin", properties={"name": "Berlin"})]
    )
    engine.delete("object", [gone.id])
    first = _corpus(1, 90)
    engine.ingest(documents=first, extractor="rows", extract=False)
    engine.extract(batch_size=16)
    # the second ingest changes a third of the documents (their old chunks go)
    second = [d if i % 3 else _corpus(2, 90)[i] for i, d in enumerate(first)]
    engine.ingest(documents=second, extractor="rows", extract=False)
    engine.extract(batch_size=16)
    berlin = engine.get_object_by_key("place", "berlin")
    assert berlin.id == "custom-berlin"
    counts = engine.stats().counts
    assert counts["objects"] >= 8 and counts["relationships"] > 20
    engine.close()
    assert _rows(path) == EXPECTED
    assert all(_index_is_current(path, t) for t in ("objects", "relationships", "chunks"))
