"""Chunks of Wikipedia paragraphs written as Markdown notes, before and after sections.

Writes MuSiQue paragraphs (``## title`` + paragraph, several articles per file) into a
temporary folder, reads them with the ingest reader and counts the chunks of the flat
chunking (the whole text packed greedily, as before issue 30) and of the section
chunking, and how many chunks hold more than one ``##`` article. No store, no model.
With ``--extract`` it also ingests the notes with the spaCy extractor into a temporary
SQLite store (the fake embedder: nothing here is searched) and counts relationships
whose two ends are never named together in one article (title and paragraph).

    PYTHONPATH=src python scripts/bench_sections.py --paragraphs 490 --per-file 10
    PYTHONPATH=src python scripts/bench_sections.py --extract

Data: MuSiQue (CC BY 4.0) as shipped by HippoRAG, read from the eval-data folder.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from kgsearch import Engine
from kgsearch.io.documents import read_documents
from kgsearch.store import connect
from kgsearch.testing import FakeEmbedder
from kgsearch.writes.documents import chunk_document

CORPUS = Path("/work/shared/eval-data/musique-hipporag-train100/musique_train_corpus.json")


def _all(engine: Engine, kind: Any) -> list[Any]:
    rows, cursor = [], None
    while True:
        page = engine.list_rows(kind, cursor=cursor, limit=1000)
        rows += page.items
        cursor = page.next_cursor
        if not cursor:
            return rows


def _extract(folder: Path, corpus: list[dict[str, str]], max_chars: int) -> dict[str, Any]:
    """Ingest with spaCy; count relationships across articles."""
    engine = Engine(connect(f"sqlite:///{folder / 'kg.db'}"), embedder=FakeEmbedder(16))
    started = time.perf_counter()
    engine.ingest([folder], extractor="spacy", chunk_chars=max_chars)
    seconds = time.perf_counter() - started
    names = {o.id: o.name.lower() for o in _all(engine, "object")}
    articles = [f"{p['title']} {p['text']}".lower() for p in corpus]
    relationships = _all(engine, "relationship")
    cross = [
        r
        for r in relationships
        if not any(names[r.source_id] in a and names[r.target_id] in a for a in articles)
    ]
    return {
        "objects": len(names),
        "relationships": len(relationships),
        "relationships_across_articles": len(cross),
        "ingest_seconds": round(seconds, 1),
    }


def main() -> None:
    """Print the chunk counts as JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--paragraphs", type=int, default=490)
    parser.add_argument("--per-file", type=int, default=10)
    parser.add_argument("--max-chars", type=int, default=1200)
    parser.add_argument("--extract", action="store_true", help="also ingest with spaCy")
    args = parser.parse_args()
    corpus = json.loads(CORPUS.read_text(encoding="utf-8"))[: args.paragraphs]
    with tempfile.TemporaryDirectory() as folder:
        for start in range(0, len(corpus), args.per_file):
            notes = corpus[start : start + args.per_file]
            text = "".join(f"## {p['title']}\n\n{p['text']}\n\n" for p in notes)
            Path(folder, f"notes-{start // args.per_file:03d}.md").write_text(text, "utf-8")
        documents, problems = read_documents([Path(folder)])
        extracted = _extract(Path(folder), corpus, args.max_chars) if args.extract else {}
    assert not problems, problems
    flat = [c for d in documents for c in chunk_document(replace(d, sections=()), args.max_chars)]
    sections = [c for d in documents for c in chunk_document(d, args.max_chars)]
    print(
        json.dumps(
            {
                "paragraphs": len(corpus),
                "files": len(documents),
                "max_chars": args.max_chars,
                "chunks_flat": len(flat),
                "chunks_sections": len(sections),
                "flat_chunks_spanning_articles": sum(c.text.count("## ") > 1 for c in flat),
                "section_chunks_spanning_articles": sum(c.text.count("## ") > 1 for c in sections),
                "section_chunks_without_path": sum("section" not in c.metadata for c in sections),
                **extracted,
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
