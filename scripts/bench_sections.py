"""Chunks of Wikipedia paragraphs written as Markdown notes, before and after sections.

Writes MuSiQue paragraphs (``## title`` + paragraph, several articles per file) into a
temporary folder, reads them with the ingest reader and counts the chunks of the flat
chunking (the whole text packed greedily, as before issue 30) and of the section
chunking, and how many chunks hold more than one ``##`` article. No store, no model.

    PYTHONPATH=src python scripts/bench_sections.py --paragraphs 490 --per-file 10

Data: MuSiQue (CC BY 4.0) as shipped by HippoRAG, read from the eval-data folder.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from dataclasses import replace
from pathlib import Path

from kgsearch.io.documents import read_documents
from kgsearch.writes.documents import chunk_document

CORPUS = Path(
    "/work/shared/eval-data/musique-hipporag-train100/musique_train_corpus.json"
)


def main() -> None:
    """Print the chunk counts as JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--paragraphs", type=int, default=490)
    parser.add_argument("--per-file", type=int, default=10)
    parser.add_argument("--max-chars", type=int, default=1200)
    args = parser.parse_args()
    corpus = json.loads(CORPUS.read_text(encoding="utf-8"))[: args.paragraphs]
    with tempfile.TemporaryDirectory() as folder:
        for start in range(0, len(corpus), args.per_file):
            notes = corpus[start : start + args.per_file]
            text = "".join(f"## {p['title']}\n\n{p['text']}\n\n" for p in notes)
            Path(folder, f"notes-{start // args.per_file:03d}.md").write_text(text, "utf-8")
        documents, problems = read_documents([Path(folder)])
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
                "section_chunks_spanning_articles": sum(
                    c.text.count("## ") > 1 for c in sections
                ),
                "section_chunks_without_path": sum("section" not in c.metadata for c in sections),
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
