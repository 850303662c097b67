"""How the light commands print what they read: a project's stats and an embedding
report as tables.

Both paths of ``kgsearch stats`` and ``kgsearch embed status`` (read-only here, or by the
engine) print through these, so the light command modules and the engine-backed ones
share one renderer instead of importing each other.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kgsearch.cli import output
from kgsearch.cli.output import table

__all__ = ["render_stats", "render_status"]


def render_stats(value: Mapping[str, Any]) -> None:
    """Print a project's stats (``Engine.stats`` as JSON) as a table."""
    grid = table(
        "what", "count", title=f"project {value['project']} — {value['store']}", show_header=False
    )
    for k, n in value["counts"].items():
        grid.add_row(k, str(n))
    grid.add_row("embedding model", str(value["embedding_model"] or "(none yet)"))
    grid.add_row("projects", ", ".join(value["projects"]) or "(none)")
    output.out.print(grid)


_COUNTS = (
    "total",
    "embedded",
    "pending",
    "failed",
    "dead",
    "skipped",
    "stale",
    "percent_embedded",
)


def render_status(value: Mapping[str, Any], queries: str | None = None) -> None:
    """Print an embedding report (``Engine.embedding_status`` as JSON) as a table, and
    how searches embed their queries (``queries``) when known."""
    headings = (c.replace("percent_embedded", "% embedded") for c in _COUNTS)
    grid = table("project", "kind", *headings, title=f"model {value['model'] or '(none yet)'}")
    for r in value["rows"]:
        grid.add_row(
            r["project"],
            r["kind"],
            *(str(r[k]) for k in _COUNTS),
        )
    output.out.print(grid)
    latency = value["mean_latency_ms_per_text"]
    output.out.print(
        f"overall {value['percent_embedded']}% embedded, failure rate {value['failure_rate']}, "
        + (f"mean latency {latency} ms/text" if latency is not None else "no latency yet")
    )
    if queries is not None:
        output.out.print(f"queries: {queries}", markup=False)
