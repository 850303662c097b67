"""Community reports on real graphs: build time and three extractive reports each.

MetaQA: the full embedded MetaQA graph (``--metaqa``, default bench-data/metaqa-full.db)
is COPIED to a temporary file first (other jobs read the original), then
``communities build`` runs on the copy. MuSiQue: the 1,890 train-100 passages'
recorded GPT-3.5 OpenIE extraction is imported into a fresh temporary store (as
scripts/bench_ingest.py does), then built. For each graph the script prints (and with
``--write`` records in docs/benchmarks.md) the build's wall time, counts, and the
three highest-ranked reports of level 1 (level 0 when there is no level 1): title,
summary and the first findings, exactly as stored.

    python scripts/bench_community_reports.py [--metaqa PATH] [--write]
"""

from __future__ import annotations

import argparse
import os
import resource
import sqlite3
import tempfile
import time
from pathlib import Path
from typing import Any

from benchdoc import table, write_section

from kgsearch import Engine
from kgsearch.community_values import CommunityReport
from kgsearch.store import connect
from kgsearch.testing import FakeEmbedder

ROOT = Path(__file__).resolve().parent.parent
METAQA = ROOT / "bench-data" / "metaqa-full.db"
OPENIE = (
    ROOT.parent
    / "shared"
    / "eval-data"
    / "musique-hipporag-train100"
    / "openie_gpt-3.5-turbo-1106.json"
)
_FINDINGS = 4


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _build(engine: Engine, name: str) -> dict[str, Any]:
    marks: dict[str, float] = {}

    def progress(stage: str, done: int, total: int) -> None:
        if stage == "detect":  # the graph is read and detected: reports follow
            marks["detected"] = time.perf_counter()

    cpu, started = _cpu(), time.perf_counter()
    report = engine.build_communities(progress=progress)
    seconds = time.perf_counter() - started
    cpu = _cpu() - cpu
    build = report.build
    assert build is not None
    listed = engine.list_communities(level=1, limit=3)
    if not listed.items:
        listed = engine.list_communities(level=0, limit=3)
    reports = [engine.community(item["id"], members=0).report for item in listed.items]
    return {
        "graph": name,
        "seconds": seconds,
        "cpu": cpu,
        "detect": marks.get("detected", started) - started,
        "communities": build.communities,
        "levels": build.levels,
        "reports": report.reports,
        "modularity": build.modularity,
        "examples": [r for r in reports if r is not None],
    }


def metaqa(path: Path, tmp: Path) -> dict[str, Any]:
    copy = tmp / "metaqa.db"
    # never write to the shared original: a read-only online backup (consistent even
    # while another process writes to it)
    source = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    target = sqlite3.connect(copy)
    with target:
        source.backup(target)
    source.close()
    target.close()
    with Engine(connect(str(copy)), embedder=FakeEmbedder(8)) as engine:
        counts = engine.stats().counts
        found = _build(engine, "MetaQA (full)")
    found["objects"], found["relationships"] = counts["objects"], counts["relationships"]
    return found


def musique(tmp: Path) -> dict[str, Any]:
    with Engine(connect(str(tmp / "musique.db")), embedder=FakeEmbedder(8)) as engine:
        engine.import_extractions(OPENIE)
        counts = engine.stats().counts
        found = _build(engine, "MuSiQue train-100 (GPT-3.5 OpenIE)")
    found["objects"], found["relationships"] = counts["objects"], counts["relationships"]
    return found


def render(report: CommunityReport) -> str:
    head = f"**{report.title}** ({report.id}, level {report.level}, rating {report.rating:g})"
    lines = [head, ""]
    lines.append(f"> {report.summary}")
    lines.append("")
    for f in report.findings[:_FINDINGS]:
        explanation = f" — {f.explanation}" if f.explanation else ""
        lines.append(f"- {f.summary}{explanation}")
    if len(report.findings) > _FINDINGS:
        lines.append(f"- … {len(report.findings) - _FINDINGS} more findings")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--metaqa", type=Path, default=METAQA)
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args()
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        runs = [metaqa(args.metaqa, Path(tmp)), musique(Path(tmp))]
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    load_after = os.getloadavg()[0]
    rows = [
        (
            r["graph"],
            f"{r['objects']:,} / {r['relationships']:,}",
            f"{r['communities']:,}",
            r["levels"],
            f"{r['reports']:,}",
            f"{r['seconds']:.1f} s",
            f"{r['detect']:.1f} s",
            f"{r['seconds'] - r['detect']:.1f} s",
            f"{r['cpu']:.1f} s",
        )
        for r in runs
    ]
    body = [
        "Extractive reports (no model) written by `communities build` for every community, "
        "on a copy of the full MetaQA store and on the MuSiQue train-100 graph imported "
        "from the recorded GPT-3.5 OpenIE file. Build time covers reading the graph, "
        "detection, the whole-set replace and every report; *read + detect* is the part "
        "before the replace, *CPU* the process's CPU time for the whole build (wall-clock "
        "time on the shared machine is up to several times larger).",
        "",
        table(
            [
                "graph",
                "objects / relationships",
                "communities",
                "levels",
                "reports",
                "build",
                "read + detect",
                "store + reports",
                "CPU",
            ],
            rows,
        ),
        "",
        f"1-minute load average {load:.1f} at the start and {load_after:.1f} at the end "
        f"(2 cores shared with other jobs); peak RSS {peak:.0f} MB.",
    ]
    for r in runs:
        body += ["", f"### {r['graph']}: the three highest-ranked communities of level 1", ""]
        for example in r["examples"]:
            body += [render(example), ""]
    text = "\n".join(body)
    print(text)
    if args.write:
        write_section(
            "community-reports",
            "Community reports (extractive) on MetaQA and MuSiQue",
            "python scripts/bench_community_reports.py --write",
            text,
        )


if __name__ == "__main__":
    main()
