"""CLI commands for entity resolution: proposals, merges by hand, and undo."""

from __future__ import annotations

from collections.abc import Callable

import click
from rich.table import Table

from kgsearch.cli.common import State, emit, engine_from, handle_errors, out, pass_state
from kgsearch.reports import MergeReport

__all__ = ["entities"]


@click.group()
def entities() -> None:
    """Find and fix duplicate entities: proposals, merges and undo.

    Example: kgsearch entities candidates --limit 20
    """


@entities.command("candidates")
@click.option("--type", "types", multiple=True, help="Only objects of this type (repeatable).")
@click.option("--limit", "-n", default=50, show_default=True, help="Proposals shown.")
@click.option("--no-vectors", is_flag=True, help="Names only (skip embedding similarity).")
@pass_state
@handle_errors
def candidates(state: State, types: tuple[str, ...], limit: int, no_vectors: bool) -> None:
    """Propose merges without applying any.

    Pairs of objects of compatible types whose names are the same once normalised
    (case, punctuation, diacritics, width), an alias, an acronym, a typo apart, or
    (embedded objects) close in meaning with a word in common, each with its reason
    and a confidence on one 0–1 scale. Apply one with `kgsearch entities merge KEEP
    OTHER`.

    Example: kgsearch entities candidates --type person
    """
    with engine_from(state) as engine:
        found = engine.entity_candidates(types=list(types) or None, vectors=not no_vectors)
        shown = found[:limit]
        names = {
            o.id: f"{o.type}/{o.name}"
            for o in engine.store.get_objects(
                engine.project, list({i for m in shown for i in (m.a_id, m.b_id)})
            )
        }
    rows = [
        {
            "keep": m.a_id,
            "merge": m.b_id,
            "keep_name": names.get(m.a_id, ""),
            "merge_name": names.get(m.b_id, ""),
            "reason": m.reason,
            "score": round(m.score, 3),
            "confidence": _confidence(m.reason, m.score),
        }
        for m in shown
    ]
    emit(state, {"proposals": rows, "total": len(found)}, _render_candidates)


def _confidence(reason: str, score: float) -> float:
    """Every rule's score on one 0–1 scale: 1 for a name, alias or acronym match, the
    fuzzy ratio / 100, the embedding cosine."""
    if reason == "fuzzy":
        return round(score / 100, 3)
    return 1.0 if reason in ("exact", "alias", "acronym") else round(score, 3)


def _render_candidates(value: dict[str, object]) -> None:
    table = Table("keep", "merge", "reason", "confidence")
    for row in value["proposals"]:  # type: ignore[attr-defined]
        table.add_row(
            f"{row['keep_name']}\n{row['keep']}",
            f"{row['merge_name']}\n{row['merge']}",
            row["reason"],
            f"{row['confidence']:.3f}",
        )
    out.print(table)
    out.print(f"{value['total']} proposal(s)")


@entities.command("merge")
@click.argument("keep")
@click.argument("others", nargs=-1, required=True)
@click.option("--force", is_flag=True, help="Merge even across incompatible types.")
@pass_state
@handle_errors
def merge(state: State, keep: str, others: tuple[str, ...], force: bool) -> None:
    """Fold OTHERS into KEEP (ids): relationships, provenance and mentions move.

    The merged objects are deleted; everything needed to undo is kept on KEEP, so
    `kgsearch entities split KEEP OTHER` restores OTHER exactly.

    Example: kgsearch entities merge 0f8c... 9a1b...
    """
    with engine_from(state) as engine:
        report = engine.merge_entities(keep, list(others), force=force)
    emit(state, report, _render_report("merged"))


@entities.command("split")
@click.argument("keep")
@click.argument("merged")
@pass_state
@handle_errors
def split(state: State, keep: str, merged: str) -> None:
    """Undo the merge of MERGED into KEEP (ids).

    Example: kgsearch entities split 0f8c... 9a1b...
    """
    with engine_from(state) as engine:
        report = engine.split_entity(keep, merged)
    emit(state, report, _render_report("restored"))


def _render_report(verb: str) -> Callable[[MergeReport], None]:
    def render(report: MergeReport) -> None:
        out.print(
            f"{verb} {len(report.objects)} object(s) with {report.relationships} "
            f"relationship(s) (kept {report.kept}; {report.self_loops} self-loop(s) dropped)"
        )

    return render
