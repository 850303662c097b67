"""Prepare the stores ``scripts/bench_global.py`` reads: community builds with embedded
reports on a copy of the full MetaQA store and on the MuSiQue train-100 graph.

MetaQA: ``bench-data/metaqa-full.db`` is copied (a read-only online backup), its
communities are built (extractive reports) and the reports embedded with the bundled
model the store was embedded with. MuSiQue: the recorded GPT-3.5 OpenIE extraction of
the 1,890 train-100 passages (shared/eval-data/musique-hipporag-train100, MIT
HippoRAG; text CC BY 4.0) is imported into a fresh store, built and its reports
embedded with the bundled model (objects and relationships are left unembedded: the
communities scope reads reports only).

    python scripts/global_bench_prep.py OUT_DIR [--metaqa PATH] [--only metaqa|musique] [--defer]
"""

from __future__ import annotations

import argparse
import sqlite3
import time
from pathlib import Path

from kgsearch import Engine
from kgsearch.embed import create_embedder
from kgsearch.model import Kind
from kgsearch.store import connect

ROOT = Path(__file__).resolve().parent.parent
METAQA = Path("/work/bench-data/metaqa-full.db")
OPENIE = (
    ROOT.parent
    / "shared"
    / "eval-data"
    / "musique-hipporag-train100"
    / "openie_gpt-3.5-turbo-1106.json"
)


DEFER = (
    "UPDATE community_reports SET status = 'dead', last_error = 'deferred by the global "
    "benchmark' WHERE status = 'pending' AND (level >= 2 OR (level = 1 AND id NOT IN "
    "(SELECT id FROM communities WHERE level = 1 ORDER BY rank DESC LIMIT 300)))"
)
"""What ``--defer`` leaves unembedded (embedding every report of MetaQA took longer than
the session had on the shared machine): levels 2 and deeper, and level 1 past its 300
highest-ranked communities. Reports already embedded stay."""


def _defer(path: Path) -> None:
    with sqlite3.connect(path) as db:
        db.execute(DEFER)


def _build_and_embed(engine: Engine, name: str) -> None:
    started = time.perf_counter()
    if engine.store.community_build(engine.project) is None:  # a rerun resumes embedding
        report = engine.build_communities()
        built = report.build.communities if report.build else 0
        print(name, "built", built, f"{time.perf_counter() - started:.0f}s", flush=True)
    embedded = engine.embed_pending(kinds=[Kind.COMMUNITY])
    print(name, "embedded", embedded, f"{time.perf_counter() - started:.0f}s", flush=True)


def _metaqa(out: Path, original: Path, defer: bool) -> None:
    copy = out / "metaqa.db"
    if not copy.exists():
        source = sqlite3.connect(f"file:{original}?mode=ro", uri=True)
        target = sqlite3.connect(copy)
        with target:
            source.backup(target)
        source.close()
        target.close()
    with Engine(connect(str(copy)), embedder=create_embedder("bundled")) as engine:
        if engine.store.community_build(engine.project) is None:
            engine.build_communities()
    if defer:
        _defer(copy)
    with Engine(connect(str(copy)), embedder=create_embedder("bundled")) as engine:
        _build_and_embed(engine, "metaqa")


def _musique(out: Path, defer: bool) -> None:
    path = out / "musique.db"
    fresh = not path.exists()
    with Engine(connect(str(path)), embedder=create_embedder("bundled")) as engine:
        if fresh:
            engine.import_extractions(OPENIE)
        if engine.store.community_build(engine.project) is None:
            engine.build_communities()
    if defer:
        _defer(path)
    with Engine(connect(str(path)), embedder=create_embedder("bundled")) as engine:
        _build_and_embed(engine, "musique")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("out", type=Path)
    parser.add_argument("--metaqa", type=Path, default=METAQA)
    parser.add_argument("--only", choices=["metaqa", "musique"])
    parser.add_argument("--defer", action="store_true", help="embed levels 0 and 1 only")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    if args.only != "musique":
        _metaqa(args.out, args.metaqa, args.defer)
    if args.only != "metaqa":
        _musique(args.out, args.defer)


if __name__ == "__main__":
    main()
