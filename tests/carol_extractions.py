"""gpt-3.5-turbo's GraphRAG extractions of *A Christmas Carol* (eval-data
christmas-carol-graphrag, run ``fork-dickens``), parsed and quality-filtered as the
LLM extractor would: shared by the description and summary tests."""

from __future__ import annotations

import json

from eval_data import EVAL_DATA

from kgsearch.extract.parse import parse_reply_lenient
from kgsearch.extract.quality import QualityRules, apply_quality
from kgsearch.extract.schema import ExtractionResult

CAROL = EVAL_DATA / "christmas-carol-graphrag" / "extractions.jsonl"


def recorded() -> list[tuple[str, str, ExtractionResult]]:
    """(chunk id, chunk text, filtered result) of each gpt-3.5 chunk."""
    out = []
    for line in CAROL.read_text("utf-8").splitlines():
        row = json.loads(line)
        if row["run"] != "fork-dickens":
            continue
        parsed = parse_reply_lenient(row["first_pass"] + "\n" + (row["gleaning"] or ""))
        chunk_id = f"carol#{int(row['chunk_order_index']):03d}"
        raw = ExtractionResult(
            chunk_id=chunk_id,
            graph=parsed.graph,
            rejected=parsed.rejected,
            extractor="llm",
            model="gpt-3.5-turbo",
        )
        # strict grounding: the names the model copied come from GraphRAG's prompt
        # examples, which are not ours (ours are rejected copied_from_examples anyway)
        rules = QualityRules(strict_in_text=True)
        out.append((chunk_id, row["chunk"], apply_quality(raw, row["chunk"], rules)))
    return out
