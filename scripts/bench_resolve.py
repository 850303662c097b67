"""Entity resolution benchmark: MuSiQue OpenIE entity strings in, clusters out.

Usage: python scripts/bench_resolve.py [--sample 50] [--seed 0] [--write]

Reads every entity string of the HippoRAG OpenIE file for the MuSiQue train-100
corpus (each passage's ``extracted_entities`` and both ends of its triples, via
:func:`kgsearch.extract.openie.load_openie`), makes one untyped candidate per distinct
string and clusters them with :func:`kgsearch.resolve.match.resolve` under the default
rules (no embeddings). Prints the number of distinct strings, distinct normalised keys,
clusters, merges by reason, time and strings/s, and a seeded sample of merges as a
Markdown table for checking precision by hand. ``--write`` puts it all into
docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import random
import time
from collections import Counter
from pathlib import Path

from benchdoc import table, write_section

from kgsearch.extract.openie import load_openie
from kgsearch.resolve.match import Candidate, normalise, resolve

OPENIE = Path("/work/shared/eval-data/musique-hipporag-train100/openie_gpt-3.5-turbo-1106.json")


def entity_strings(path: Path) -> list[str]:
    """Distinct entity strings (names and triple ends), in first-seen order."""
    seen: dict[str, None] = {}
    for record in load_openie(path):
        for entity in record.graph.entities:
            seen.setdefault(entity.name, None)
        for relation in record.graph.relationships:
            seen.setdefault(relation.source, None)
            seen.setdefault(relation.target, None)
    return [name for name in seen if name.strip()]


def main() -> None:
    """Run the benchmark and print (and with --write, record) the figures."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sample", type=int, default=50)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args()

    names = entity_strings(OPENIE)
    candidates = [Candidate(str(i), name) for i, name in enumerate(names)]
    keys = {normalise(name) for name in names}
    start = time.perf_counter()
    result = resolve(candidates)
    seconds = time.perf_counter() - start

    reasons = Counter(m.reason for m in result.merges)
    figures = table(
        ["figure", "value"],
        [
            ["distinct entity strings", f"{len(names):,}"],
            ["distinct normalised keys", f"{len(keys):,}"],
            ["clusters after resolution", f"{len(result.clusters):,}"],
            ["merges", f"{len(result.merges):,}"],
            *[[f"merges: {reason}", f"{n:,}"] for reason, n in reasons.most_common()],
            ["refused (type conflict)", f"{len(result.refused):,}"],
            ["time (s)", f"{seconds:.2f}"],
            ["strings/s", f"{len(names) / seconds:,.0f}"],
        ],
    )
    by_id = {c.id: c.name for c in candidates}
    merges = sorted(result.merges, key=lambda m: (m.a_id, m.b_id))
    sample = random.Random(args.seed).sample(merges, min(args.sample, len(merges)))
    rows = [
        [
            by_id[m.a_id].replace("|", "\\|"),
            by_id[m.b_id].replace("|", "\\|"),
            m.reason,
            f"{m.score:.1f}",
        ]
        for m in sample
    ]
    samples = table(["string A", "string B", "reason", "score"], rows)
    body = (
        f"Input: {OPENIE.name} (MuSiQue train-100, 1,890 passages), every distinct string "
        "among `extracted_entities` and triple ends, one untyped candidate each; default "
        "`MatchRules` (token_sort_ratio ≥ 92, acronyms on, no embeddings).\n\n"
        f"{figures}\n\n### {len(rows)} sampled merges (seed {args.seed})\n\n{samples}\n"
    )
    print(body)
    if args.write:
        command = "python scripts/bench_resolve.py --write"
        write_section("resolve", "Entity resolution (MuSiQue OpenIE strings)", command, body)


if __name__ == "__main__":
    main()
