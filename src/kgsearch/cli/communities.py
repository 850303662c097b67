"""``kgsearch communities build|status|list|show``: communities of a project's graph."""

from __future__ import annotations

from typing import Any

import click
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from kgsearch.cli.common import State, console, emit, engine_from, handle_errors, out, pass_state
from kgsearch.community_values import (
    CommunityBuildReport,
    CommunityDetail,
    CommunityPage,
    CommunityStatus,
)

__all__ = ["communities"]


@click.group()
def communities() -> None:
    """Hierarchical Leiden communities and their reports (docs/communities.md).

    Example: kgsearch communities build && kgsearch communities list --level 0
    """


@communities.command("build")
@click.option(
    "--method",
    type=click.Choice(["extractive", "llm"]),
    default="extractive",
    show_default=True,
    help="Reports without a model, or by the chat model of [llm] (bottom-up, cached).",
)
@click.option("--max-cluster-size", type=click.IntRange(1), default=10, show_default=True)
@click.option("--seed", type=click.IntRange(0, 2**32 - 1), default=0xDEADBEEF)
@click.option("--resolution", type=click.FloatRange(min=0, min_open=True), default=1.0)
@click.option(
    "--min-jaccard",
    type=click.FloatRange(0.5, 1.0, min_open=True),
    default=0.9,
    show_default=True,
    help="A community this similar to a stored one keeps its report.",
)
@click.option("--force", is_flag=True, help="Write every report again.")
@pass_state
@handle_errors
def build(
    state: State,
    method: str,
    max_cluster_size: int,
    seed: int,
    resolution: float,
    min_jaccard: float,
    force: bool,
) -> None:
    """Detect communities, store them whole, write the reports that are due.

    Only communities that are new or whose membership changed past --min-jaccard get
    a new report; run `kgsearch embed generate` afterwards to make reports searchable.

    Example: kgsearch communities build --method extractive
    """
    bar = Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        disable=state.as_json,
    )
    with engine_from(state) as engine, bar:
        detect = bar.add_task("detecting", total=1)
        reports = bar.add_task("reports", total=None, visible=False)

        def progress(stage: str, done: int, total: int) -> None:
            if stage == "detect":
                bar.update(detect, completed=done, total=total)
            else:
                bar.update(reports, completed=done, total=total, visible=True)

        report = engine.build_communities(
            method="llm" if method == "llm" else "extractive",
            max_cluster_size=max_cluster_size,
            seed=seed,
            resolution=resolution,
            min_jaccard=min_jaccard,
            force=force,
            progress=progress,
        )
    emit(state, report, _render_build)


def _render_build(report: CommunityBuildReport) -> None:
    build = report.build
    if build is None or build.communities == 0:
        out.print(f"no communities: {report.reason or 'nothing to cluster'}")
        return
    out.print(
        f"build {build.id} (generation {build.generation}): {build.communities} communities "
        f"on {build.levels} level(s), modularity {build.modularity:.3f}, "
        f"{build.nodes} objects ({build.isolated} isolated)"
    )
    out.print(
        f"reports: {report.reports} written, {report.kept} kept, {report.changed} changed, "
        f"{report.removed} removed, {report.failed} failed, {report.calls} model calls "
        f"in {report.seconds:.1f} s"
    )
    for line in (*build.warnings, *report.errors):
        out.print(f"  {line}")


@communities.command("status")
@pass_state
@handle_errors
def status(state: State) -> None:
    """The current build, communities per level, reports, and whether it is stale.

    Example: kgsearch communities status --json
    """
    with engine_from(state) as engine:
        emit(state, engine.community_status(project=state.project), _render_status)


def _render_status(status: CommunityStatus) -> None:
    if status.build is None:
        out.print("no communities yet: run `kgsearch communities build`")
        return
    b = status.build
    out.print(f"build {b.id} (generation {b.generation}, {b.created_at})")
    levels = ", ".join(f"level {lvl}: {n}" for lvl, n in status.by_level.items())
    out.print(f"communities: {b.communities} ({levels or 'none'})")
    out.print(
        f"reports: {status.reports} ({status.missing_reports} missing) "
        + " ".join(f"{k}={v}" for k, v in sorted(status.reports_by_status.items()))
    )
    if status.stale:
        out.print("the graph changed since this build: run `kgsearch communities build`")


@communities.command("list")
@click.option("--level", type=click.IntRange(0), help="Only this level.")
@click.option("--limit", type=click.IntRange(1, 1000), default=50, show_default=True)
@click.option("--offset", type=click.IntRange(0), default=0)
@pass_state
@handle_errors
def list_cmd(state: State, level: int | None, limit: int, offset: int) -> None:
    """Communities by level, then rank, with their report titles.

    Example: kgsearch communities list --level 0 --limit 20
    """
    with engine_from(state) as engine:
        page = engine.list_communities(
            project=state.project, level=level, limit=limit, offset=offset
        )
    emit(state, page, _render_page)


def _render_page(page: CommunityPage) -> None:
    table = Table("id", "level", "size", "rank", "title")
    for item in page.items:
        table.add_row(
            item["id"],
            str(item["level"]),
            str(item["size"]),
            f"{item['rank']:g}",
            item["title"] or "",
        )
    out.print(table)
    out.print(f"{len(page.items)} of {page.total}")


@communities.command("show")
@click.argument("community_id")
@click.option("--members", type=click.IntRange(0), default=20, show_default=True)
@pass_state
@handle_errors
def show(state: State, community_id: str, members: int) -> None:
    """One community: its report (title, summary, findings), children and members.

    Example: kgsearch communities show c0-3a69c5276b7429af
    """
    with engine_from(state) as engine:
        detail = engine.community(community_id, project=state.project, members=members)
    emit(state, detail, _render_detail)


def _render_detail(detail: CommunityDetail) -> None:
    c = detail.community
    parent = f", parent {c.parent}" if c.parent else ""
    out.print(f"{c.id}: level {c.level}, {c.size} members, rank {c.rank:g}{parent}")
    report: Any = detail.report
    if report is not None:
        title = escape(report.title)
        out.print(f"[bold]{title}[/bold] (rating {report.rating:g}, {report.method})")
        out.print(report.summary, markup=False)
        for f in report.findings:
            line = f"  - {f.summary}" + (f": {f.explanation}" if f.explanation else "")
            out.print(line, markup=False)
    if detail.children:
        out.print("children: " + ", ".join(detail.children), markup=False)
    if detail.members:
        names = ", ".join(f"{m['name']} ({m['type']})" for m in detail.members)
        out.print("members: " + names, markup=False)
