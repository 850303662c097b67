"""Text2KGBench: schema labels mapped by embedding (the bundled model) on top of names.

The recorded Vicuna-13B and Alpaca-LoRA-13B replies of the five Wikidata-TekGen
ontologies go through parse → schema → quality filter as in ``bench_text2kg.py``, once
mapping labels by name only and once per threshold with
:class:`kgsearch.extract.conform.SimilarLabels` over the bundled embedder. Prints, per
model and setting, the official F1 and raw precision averaged over the ontologies, the
triples kept and how many labels the embedding mapped.

    python scripts/bench_schema_similarity.py 0.7 0.8 0.85 0.9

Data: Text2KGBench (Mihindukulasooriya et al., ISWC 2023), CC BY-SA 4.0; see
shared/eval-data/text2kgbench/README.md.
"""

from __future__ import annotations

import sys

import bench_text2kg as bench

from kgsearch.embed.bundled import BundledEmbedder
from kgsearch.extract.conform import SimilarLabels
from kgsearch.extract.ontology import GraphSchema, load_schema
from kgsearch.extract.parse import parse_reply_lenient
from kgsearch.extract.quality import QualityRules, apply_quality
from kgsearch.extract.schema import ExtractionResult


def triples(
    replies: dict[str, str],
    sentences: dict[str, str],
    schema: GraphSchema,
    similar: SimilarLabels | None,
) -> tuple[dict[str, list[bench.Triple]], int]:
    """Each sentence's kept triples, and how many labels were mapped by embedding."""
    rules = QualityRules(schema=schema, similar_labels=similar)
    out: dict[str, list[bench.Triple]] = {}
    mapped = 0
    for sid, reply in replies.items():
        graph = parse_reply_lenient(reply).graph
        result = apply_quality(ExtractionResult(chunk_id=sid, graph=graph), sentences[sid], rules)
        mapped += sum(
            1
            for s in result.signals
            if s.reason == "mapped_to_schema" and isinstance(s.item, dict) and "by" in s.item
        )
        out[sid] = [
            (r.source, bench._label(r.relation), r.target) for r in result.graph.relationships
        ]
    return out, mapped


def main() -> None:
    """Print one line per model and setting."""
    thresholds = [float(x) for x in sys.argv[1:]] or [0.8, 0.85, 0.9]
    model = BundledEmbedder()
    settings: list[float | None] = [None, *thresholds]
    similar = {t: SimilarLabels(lambda: model, threshold=t) for t in thresholds}
    totals: dict[tuple[str, float | None], list[float]] = {}
    for ontology in bench.ONTOLOGIES:
        schema = load_schema(bench.TEKGEN / "ontologies" / f"{ontology}_ontology.json")
        truth = list(
            bench._jsonl(bench.TEKGEN / "ground_truth" / f"ont_{ontology}_ground_truth.jsonl")
        )
        gold = {
            str(t["id"]): [(x["sub"], x["rel"], x["obj"]) for x in t["triples"]]  # type: ignore[attr-defined]
            for t in truth
        }
        sentences = {str(t["id"]): str(t["sent"]) for t in truth}
        for name, (responses, _) in bench.MODELS.items():
            path = bench.TEKGEN / "baselines" / name / "llm_responses" / responses.format(ontology)
            replies = {str(r["id"]): str(r["response"]) for r in bench._jsonl(path)}
            for t in settings:
                found, mapped = triples(replies, sentences, schema, similar[t] if t else None)
                s = bench.score(found, gold)
                total = totals.setdefault((name, t), [0.0, 0.0, 0.0, 0.0])
                total[0] += s.f1 / len(bench.ONTOLOGIES)
                total[1] += s.raw_precision / len(bench.ONTOLOGIES)
                total[2] += s.triples
                total[3] += mapped
    for (name, t), (f1, raw_p, kept, by_embedding) in totals.items():
        setting = "names only" if t is None else f"embedding >= {t}"
        print(
            f"{name:16} {setting:18} F1 {f1:.4f}  raw P {raw_p:.4f}  "
            f"triples {int(kept)}  mapped by embedding {int(by_embedding)}"
        )


if __name__ == "__main__":
    main()
