"""Model summaries of long descriptions, row by row, resumable.

An extracted object or relationship whose descriptions pass the budget gets the
offline extractive summary when it is written. :func:`summarize_descriptions` asks the
model for a real one (:mod:`kgsearch.extract.summarize`, map-reduce, every call through
the response cache) and stores it with the digest of the descriptions it was made
from, so it is used only while they are unchanged: when a chunk adds or takes a
description the row falls back to the offline summary until the next run. Each row is
written in its own transaction, so a failure or an interrupt loses nothing done.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

from kgsearch.errors import ProviderError
from kgsearch.extract.summarize import summarize
from kgsearch.http import ProviderSkipped
from kgsearch.llm.base import LLM
from kgsearch.reports import SummaryReport
from kgsearch.text.descriptions import DESCRIPTION_BUDGET
from kgsearch.writes.contributions import SUMMARY, summary_due
from kgsearch.writes.forget import rebuild
from kgsearch.writes.graph import WriteContext

__all__ = ["summarize_descriptions"]

_ERRORS_KEPT = 10

Due = tuple[Literal["object", "relationship"], str, str, str, list[str]]
"""(kind, row id, subject, digest, descriptions)."""


def _due(ctx: WriteContext) -> list[Due]:
    store, project = ctx.store, ctx.project
    found: list[Due] = []
    for o in store.iter_rows(project, "object"):
        due = summary_due(o.properties)
        if due is not None:
            found.append(("object", o.id, f"{o.name} ({o.type})", *due))
    rels = [
        (r, due)
        for r in store.iter_rows(project, "relationship")
        if (due := summary_due(r.properties)) is not None
    ]
    names = store.endpoints(project, list({i for r, _ in rels for i in (r.source_id, r.target_id)}))
    for r, due in rels:
        ends = [
            names[i].properties.get("name") or names[i].key if i in names else i
            for i in (r.source_id, r.target_id)
        ]
        subject = f"{ends[0]} {r.label or r.type.replace('_', ' ')} {ends[1]}"
        found.append(("relationship", r.id, subject, *due))
    return found


def summarize_descriptions(
    ctx: WriteContext,
    llm: LLM,
    *,
    limit: int | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> SummaryReport:
    """Give every extracted row whose descriptions pass the budget a model summary.

    Args:
        ctx: The project's rows.
        llm: The chat model (wrapped in the response cache by the engine).
        limit: At most this many rows.
        progress: Called with (rows done, rows due) after each row.
    """
    due = _due(ctx)
    if limit is not None:
        due = due[:limit]
    done = failed = calls = cached = 0
    errors: dict[str, str] = {}
    for n, (kind, row_id, subject, digest, texts) in enumerate(due, 1):
        try:
            summary = summarize(llm, subject, texts, DESCRIPTION_BUDGET)
        except ProviderSkipped as exc:  # the model keeps failing: stop, keep the rest due
            failed += len(due) - n + 1
            errors[row_id] = str(exc)[:500]
            break
        except ProviderError as exc:
            failed += 1
            if len(errors) < _ERRORS_KEPT:
                errors[row_id] = str(exc)[:500]
        else:
            calls += summary.calls
            cached += summary.cached
            extra = {
                row_id: {SUMMARY: {"of": digest, "text": summary.text, "model": summary.model}}
            }
            objects, relationships = ([row_id], []) if kind == "object" else ([], [row_id])
            rebuild(ctx, objects, relationships, extra=extra)
            ctx.committed()
            done += 1
        if progress is not None:
            progress(n, len(due))
    return SummaryReport(
        due=len(due), summarized=done, failed=failed, calls=calls, cached=cached, errors=errors
    )
