"""Parse rate of kgsearch's tolerant extraction parser over every recorded real LLM reply.

Replies: shared/eval-data/christmas-carol-graphrag/extractions.jsonl (nano-graphrag
tuple format; gpt-4o fixture, gpt-3.5-turbo fork, gpt-4o partial; first pass and
gleaning) and the Text2KGBench Vicuna-13B and Alpaca-LoRA-13B responses (``rel(s, o)``
triples; test and unseen sentences). For each set it reports records parsed / records
seen (a record is an entity or relationship read, or a piece rejected as malformed)
and replies with at least one item / replies. Prose the parser skips (notes, echoed
sentences) is not a record.

    python scripts/bench_parse.py            # print the table
    python scripts/bench_parse.py --write    # and write its section of docs/benchmarks.md
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from benchdoc import table, write_section

from kgsearch.extract.parse import parse_reply_lenient

ROOT = Path(__file__).resolve().parent.parent
EVAL = ROOT.parent / "shared" / "eval-data"
CAROL = EVAL / "christmas-carol-graphrag" / "extractions.jsonl"
T2KG = EVAL / "text2kgbench" / "wikidata_tekgen" / "baselines"


@dataclass(frozen=True)
class ParseStats:
    """Counts over one set of replies."""

    replies: int
    replies_with_items: int
    entities: int
    relationships: int
    malformed: int

    @property
    def records(self) -> int:
        """Records seen: items read plus malformed pieces."""
        return self.entities + self.relationships + self.malformed

    @property
    def record_rate(self) -> float:
        """Records parsed / records seen."""
        return (self.entities + self.relationships) / self.records if self.records else 1.0

    @property
    def reply_rate(self) -> float:
        """Replies with at least one item / replies."""
        return self.replies_with_items / self.replies if self.replies else 1.0


def parse_rate(replies: Iterable[str]) -> ParseStats:
    """Parse every reply and count what was read."""
    counts = [0, 0, 0, 0, 0]
    for reply in replies:
        parsed = parse_reply_lenient(reply)
        counts[0] += 1
        counts[1] += bool(parsed.items)
        counts[2] += len(parsed.graph.entities)
        counts[3] += len(parsed.graph.relationships)
        counts[4] += len(parsed.rejected)
    return ParseStats(*counts)


def _jsonl(path: Path) -> Iterator[dict[str, object]]:
    with path.open(encoding="utf-8") as lines:
        for line in lines:
            yield json.loads(line)


def recorded_replies() -> dict[str, list[str]]:
    """Every recorded reply, by set name."""
    sets: dict[str, list[str]] = {}
    for row in _jsonl(CAROL):
        for key in ("first_pass", "gleaning"):
            if isinstance(row[key], str):
                sets.setdefault(f"carol/{row['run']}", []).append(str(row[key]))
    for model in ("Vicuna-13B", "Alpaca-LoRA-13B"):
        for path in sorted(T2KG.glob(f"{model}/**/llm_responses/*.jsonl")):
            kind = "unseen" if "unseen" in path.parts else "test"
            sets.setdefault(f"text2kgbench/{model}/{kind}", []).extend(
                str(row["response"]) for row in _jsonl(path)
            )
    return sets


def main() -> dict[str, ParseStats]:
    """Print (and with ``--write`` record) the parse rate of every reply set."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="write docs/benchmarks.md")
    args = parser.parse_args()
    stats = {name: parse_rate(replies) for name, replies in recorded_replies().items()}
    total = ParseStats(
        *(sum(getattr(s, f) for s in stats.values()) for f in ParseStats.__dataclass_fields__)
    )
    rows = [
        (
            name,
            s.replies,
            s.entities,
            s.relationships,
            s.malformed,
            f"{s.record_rate:.1%}",
            f"{s.reply_rate:.1%}",
        )
        for name, s in [*stats.items(), ("all", total)]
    ]
    body = table(
        [
            "replies",
            "n",
            "entities",
            "relationships",
            "malformed",
            "records parsed / seen",
            "replies with ≥1 item",
        ],
        rows,
    )
    print(body)
    if args.write:
        write_section(
            "parse",
            "Extraction parser over recorded real LLM replies",
            "python scripts/bench_parse.py --write",
            body + "\n\nA record is an entity or relationship read, or a piece that looked like a "
            "record and was rejected as malformed (e.g. `league(Gareth Bale,)`, an empty "
            "slot). Text2KGBench replies hold triples only (no entities, no descriptions); "
            "the replies without an item are mostly notes that nothing can be extracted.",
        )
    return stats


if __name__ == "__main__":
    main()
