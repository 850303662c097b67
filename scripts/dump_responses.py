"""Dump search responses as JSON lines, to diff two versions of kgsearch.

Usage (one dump per version, then compare the files)::

    PYTHONPATH=/work/wt-head/src python scripts/dump_responses.py --out /tmp/before.jsonl
    PYTHONPATH=src python scripts/dump_responses.py --out /tmp/after.jsonl
    python scripts/dump_responses.py --diff /tmp/before.jsonl /tmp/after.jsonl

Questions: MetaQA 1-hop dev (as ``bench_quality.py --part metaqa`` draws them) on
``bench-data/metaqa-full.db``, unified search with and without debug; and the passage
sets (as ``bench_passages.py``) with the ``multi_hop`` and ``chunks`` recipes and the
default search. Timings are left out of each line; everything else (ids, order, scores,
``found_by``, fields, metadata) must match.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_passages import questions as passage_questions
from bench_quality import metaqa_questions

from kgsearch import Engine, Kind, SearchRequest, connect
from kgsearch.embed import create_embedder

DATA = Path(__file__).resolve().parent.parent / "bench-data"


def _clean(response: Any) -> dict[str, Any]:
    """A response as JSON, without its timings."""
    body: dict[str, Any] = response.model_dump(mode="json", by_alias=True)
    body["metadata"].pop("executionTime", None)
    details = (body.get("debug") or {}).get("fusion_details")
    if details:
        details.pop("leg_ms", None)
    return body


def _engine(path: Path) -> Engine:
    engine = Engine(connect(str(path)), embedder=create_embedder("bundled"))
    for kind in Kind:
        getattr(engine.store, "wait_for_index", lambda *a, **k: True)("default", kind, 900)
    return engine


def dump(out: Path, metaqa: int, passages: int, sets: list[str]) -> None:
    """Write one line per (set, question, request)."""
    with out.open("w", encoding="utf-8") as sink:
        engine = _engine(DATA / "metaqa-full.db")
        for question, _ in metaqa_questions(metaqa):
            for label, options in (("default", {}), ("debug", {"include_debug": True})):
                response = engine.search(SearchRequest(query=question, limit=10, **options))
                line = {"set": "metaqa", "q": question, "req": label, "r": _clean(response)}
                sink.write(json.dumps(line, sort_keys=True) + "\n")
        engine.close()
        for name in sets:
            engine = _engine(DATA / f"passages-{name}.db")
            for question, _ in passage_questions(name)[:passages]:
                for label, request in (
                    ("multi_hop", SearchRequest(query=question, limit=40, recipe="multi_hop")),
                    ("chunks", SearchRequest(query=question, limit=5, recipe="chunks")),
                    ("default", SearchRequest(query=question, limit=10)),
                ):
                    line = {
                        "set": name,
                        "q": question,
                        "req": label,
                        "r": _clean(engine.search(request)),
                    }
                    sink.write(json.dumps(line, sort_keys=True) + "\n")
            engine.close()


def _close(a: Any, b: Any, tolerance: float) -> bool:
    """Whether two parsed responses are equal, floats within ``tolerance`` of each other."""
    if isinstance(a, float) or isinstance(b, float):
        both = isinstance(a, int | float) and isinstance(b, int | float)
        return both and abs(float(a) - float(b)) <= tolerance
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_close(a[k], b[k], tolerance) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_close(x, y, tolerance) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def diff(before: Path, after: Path, tolerance: float = 0.0) -> int:
    """Print the lines that differ (beyond ``tolerance`` in any float); the number of them."""
    old = before.read_text("utf-8").splitlines()
    new = after.read_text("utf-8").splitlines()
    if len(old) != len(new):
        print(f"line counts differ: {len(old)} / {len(new)}")
    bad = floats = 0
    for a, b in zip(old, new, strict=False):
        if a == b:
            continue
        if tolerance and _close(json.loads(a), json.loads(b), tolerance):
            floats += 1
            continue
        bad += 1
        if bad <= 5:
            print("-", a[:600])
            print("+", b[:600])
    within = f" ({floats} more differ only in floats within {tolerance:g})" if tolerance else ""
    print(f"{len(old)} responses, {bad} differ{within}")
    return bad


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path)
    parser.add_argument("--metaqa", type=int, default=1000)
    parser.add_argument("--passages", type=int, default=100)
    parser.add_argument("--sets", default="musique-spacy,hotpotqa-spacy")
    parser.add_argument("--diff", nargs=2, type=Path, help="compare two dumps (before, after)")
    parser.add_argument(
        "--tolerance",
        type=float,
        default=0.0,
        help="with --diff: floats (scores) this close count as equal; a change of candidate "
        "set moves scores in their last float32 bits (e.g. 1e-6)",
    )
    args = parser.parse_args()
    if args.diff:
        before, after = args.diff
        raise SystemExit(1 if diff(before, after, args.tolerance) else 0)
    if args.out is None:
        parser.error("--out or --diff")
    dump(args.out, args.metaqa, args.passages, [s for s in args.sets.split(",") if s])


if __name__ == "__main__":
    main()
