"""Offline temporal facts: how many facts the spaCy extractor dates, and a sample to check.

Extracts the first N passages of the 2WikiMultihopQA corpus (HippoRAG's copy; Apache-2.0;
shared/eval-data/2wikimultihopqa-hipporag) with the default offline extractor and prints
how many relationships carry a ``valid_from`` / ``valid_to``, the CPU time, and a seeded
sample of dated facts with their sentences for a hand check (is the date the fact's own?).

    python scripts/bench_temporal.py 1000 25
"""

from __future__ import annotations

import json
import random
import sys
import time
from pathlib import Path

from kgsearch.extract.schema import ChunkText
from kgsearch.extract.spacy import SpacyExtractor

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT.parent / "shared" / "eval-data" / "2wikimultihopqa-hipporag"
if not CORPUS.is_dir():
    CORPUS = Path("/work/shared/eval-data/2wikimultihopqa-hipporag")


def main() -> None:
    """Print the counts and the sample."""
    passages = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    shown = int(sys.argv[2]) if len(sys.argv) > 2 else 25
    corpus = json.loads((CORPUS / "2wikimultihopqa_corpus.json").read_text("utf-8"))[:passages]
    extractor = SpacyExtractor()
    started = time.process_time()
    results = extractor.extract([ChunkText(str(i), p["text"]) for i, p in enumerate(corpus)])
    seconds = time.process_time() - started
    facts = [r for result in results for r in result.graph.relationships]
    dated = [r for r in facts if r.valid_from or r.valid_to]
    print(
        f"{len(corpus)} passages, {seconds:.1f} CPU-s: {len(facts)} facts, {len(dated)} dated "
        f"({sum(1 for r in dated if r.valid_from)} with a start, "
        f"{sum(1 for r in dated if r.valid_to)} with an end)"
    )
    for r in random.Random(31).sample(dated, min(shown, len(dated))):
        print(f"- {r.source} | {r.relation} | {r.target} | {r.valid_from} -> {r.valid_to}")
        print(f"    {r.evidence[:230]}")


if __name__ == "__main__":
    main()
