"""Community builds: detect, replace the stored set whole, then write the reports due.

:func:`build_communities` reads the project's graph, runs hierarchical Leiden
(:mod:`kgsearch.communities.detect`), matches the new communities to the stored ones
(:func:`~kgsearch.communities.incremental.compare_communities`: a community whose
membership stayed within the Jaccard threshold keeps its report, under its new id) and
replaces the stored set in one transaction, which the store refuses when the graph's
digest changed since it was read (a write or delete during the build): the caller gets
a :class:`~kgsearch.errors.Conflict` and the previous set stays whole.

Then the reports that are due (the community is new or changed past the threshold, has
none, or has one of another method or prompt version) are written as tasks of the job
``community_report`` on the one task runner, deepest level first, so a parent's LLM
report can summarise its children's. Each report is written as soon as it is made; a
report of a community that a newer build replaced meanwhile is skipped by the store.
Reports are embeddable rows of kind ``community`` and become ``pending``.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from kgsearch.communities.associations import co_mentions
from kgsearch.communities.detect import Community, Detection, detect_communities
from kgsearch.communities.incremental import compare_communities
from kgsearch.communities.reports import (
    EXTRACTIVE_VERSION,
    PROMPT_VERSION,
    Edge,
    Material,
    Member,
    extractive_report,
    llm_report,
)
from kgsearch.community_values import (
    CommunityBuild,
    CommunityBuildReport,
    CommunityRecord,
    CommunityReport,
    ReportMethod,
)
from kgsearch.errors import InvalidRequest
from kgsearch.lifecycle.runner import Outcome, RetryPolicy
from kgsearch.lifecycle.tasks import TaskDone, run_tasks
from kgsearch.llm.base import LLM
from kgsearch.store.base import CommunityStore, GraphReads, TaskQueue
from kgsearch.store.records import Task, TaskIn
from kgsearch.text.enrich import text_hash

__all__ = ["JOB", "REPORT_TEXT_VERSION", "BuildOptions", "CommunityBuildStore", "build_communities"]

JOB = "community_report"
"""The task queue's job name for community reports."""

ASSOCIATION_STRENGTH = 0.3
"""How much a shared passage weighs beside a relationship of weight 1 (the strength
the offline extractor gave its co-occurrence relationships)."""

REPORT_TEXT_VERSION = 1
"""Version of the report text that is embedded (title, summary, findings)."""

_ERRORS_KEPT = 10

Progress = Callable[[str, int, int], None]
"""Called with (stage, done, total): ``detect`` once, then ``reports`` per batch."""


class _ReportStore(CommunityStore, TaskQueue, Protocol):
    """Community reports written through the task queue."""


class CommunityBuildStore(GraphReads, CommunityStore, TaskQueue, Protocol):
    """What a build needs: the graph's rows, the community set and the report tasks."""


@dataclass(frozen=True)
class BuildOptions:
    """How a build runs.

    Attributes:
        method: ``extractive`` (no model) or ``llm``.
        max_cluster_size: Communities above this size are split one level further.
        seed: Leiden's seed.
        resolution: Modularity resolution.
        min_jaccard: A community at least this similar to a stored one keeps its report.
        force: Write every report again.
        budget_chars: An LLM report's data limit (bottom-up past it).
    """

    method: ReportMethod = "extractive"
    max_cluster_size: int = 10
    seed: int = 0xDEADBEEF
    resolution: float = 1.0
    min_jaccard: float = 0.9
    force: bool = False
    budget_chars: int = 16_000


@dataclass
class _Graph:
    """The project's graph as report material: members and edges made once."""

    members: dict[str, Member]
    edges: list[Edge]
    associations: dict[tuple[str, str], float] = field(default_factory=dict)
    touching: dict[str, list[Edge]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for e in self.edges:
            self.touching.setdefault(e.source, []).append(e)
            if e.target != e.source:
                self.touching.setdefault(e.target, []).append(e)


def _read_graph(store: GraphReads, project: str) -> _Graph:
    members = {
        o.id: Member(
            id=o.id,
            name=o.name,
            type=o.type,
            description=str(o.properties.get("description") or ""),
        )
        for o in store.iter_rows(project, "object")
    }
    edges = [
        Edge(
            id=r.id,
            source=r.source_id,
            target=r.target_id,
            type=r.label or r.type,
            weight=r.weight,
            description=r.description or "",
        )
        for r in store.iter_rows(project, "relationship")
    ]
    associations = co_mentions(
        (m.chunk_id, m.object_id)
        for m in store.iter_rows(project, "mention")
        if m.chunk_id and m.object_id in members
    )
    return _Graph(members, edges, associations)


def _weighted_edges(graph: _Graph) -> list[tuple[str, str, float]]:
    """The relationships and, weaker, the associations (objects named by the same
    passages): a graph built from documents has few stated facts, and its passages
    are what hold it together. Associations shape the communities only; the reports
    cite relationships."""
    edges = [(e.source, e.target, e.weight) for e in graph.edges]
    edges += [(a, b, ASSOCIATION_STRENGTH * w) for (a, b), w in graph.associations.items()]
    return edges


def _build_id(project: str, detection: Detection, digest: str) -> str:
    h = hashlib.blake2b(digest_size=8)
    h.update(f"{project}\x1f{digest}\x1f{detection.seed}\x1f{detection.max_cluster_size}".encode())
    h.update(f"\x1f{detection.resolution!r}\x1f{len(detection.communities)}".encode())
    return f"b-{h.hexdigest()}"


def _version(method: ReportMethod) -> str:
    return PROMPT_VERSION if method == "llm" else EXTRACTIVE_VERSION


def build_communities(
    store: CommunityBuildStore,
    project: str,
    options: BuildOptions,
    *,
    llm: LLM | None = None,
    progress: Progress | None = None,
    policy: RetryPolicy | None = None,
) -> CommunityBuildReport:
    """Detect the project's communities, store them whole, and write the due reports.

    Args:
        store: The store.
        project: The project.
        options: Method and detection parameters.
        llm: The chat model (``method="llm"``; wrap it in the response cache).
        progress: Called with (stage, done, total).
        policy: Retry policy of the report tasks.

    Returns:
        What the build did.

    Raises:
        InvalidRequest: Bad parameters, or ``llm`` method without a model.
        Conflict: The graph changed while the build ran; nothing was written.
    """
    if options.method not in ("extractive", "llm"):
        raise InvalidRequest(f"method must be 'extractive' or 'llm', got {options.method!r}")
    if options.method == "llm" and llm is None:
        raise InvalidRequest("method 'llm' needs a chat model: configure [llm] in the settings")
    started = time.perf_counter()
    digest = store.graph_digest(project)
    graph = _read_graph(store, project)
    detection = detect_communities(
        _weighted_edges(graph),
        nodes=graph.members,
        max_cluster_size=options.max_cluster_size,
        seed=options.seed,
        resolution=options.resolution,
    )
    if progress:
        progress("detect", 1, 1)
    previous = [
        Community(c.id, c.level, c.parent, c.members, c.size, c.rank)
        for c in store.communities(project)
    ]
    changes = compare_communities(previous, detection.communities, min_jaccard=options.min_jaccard)
    build = CommunityBuild(
        id=_build_id(project, detection, digest),
        generation=0,
        seed=detection.seed,
        max_cluster_size=detection.max_cluster_size,
        resolution=detection.resolution,
        modularity=detection.modularity,
        levels=detection.levels,
        communities=len(detection.communities),
        nodes=detection.nodes,
        isolated=len(detection.isolated),
        graph_digest=digest,
        warnings=detection.warnings,
    )
    records = [
        CommunityRecord(
            id=c.id,
            level=c.level,
            parent=c.parent,
            members=c.members,
            size=c.size,
            rank=c.rank,
            build_id=build.id,
        )
        for c in detection.communities
    ]
    renamed = {old: new for new, old in changes.kept.items()}
    removed = store.replace_communities(
        project, build, records, renamed=renamed, expected_digest=digest
    )
    stored = store.community_build(project) or build
    due = _due(store, project, records, options, llm.model_id if llm is not None else None)
    writer = _ReportWriter(store, project, graph, records, options, llm)
    run = writer.run(due, progress, policy)
    store.delete_tasks(project, JOB, list(changes.removed))
    return CommunityBuildReport(
        build=stored,
        reason=detection.reason,
        kept=len(changes.kept),
        changed=len(changes.changed),
        removed=removed,
        reports=writer.written,
        failed=run.failed,
        calls=writer.calls,
        seconds=round(time.perf_counter() - started, 3),
        errors=tuple(run.errors[:_ERRORS_KEPT]),
    )


def _due(
    store: CommunityStore,
    project: str,
    records: Sequence[CommunityRecord],
    options: BuildOptions,
    model: str | None,
) -> list[CommunityRecord]:
    """Communities whose report is missing, or of another method, version or model."""
    if options.force:
        return list(records)
    existing = {r.id: r for r in store.community_reports(project, [c.id for c in records])}
    version = _version(options.method)
    return [
        c
        for c in records
        if (r := existing.get(c.id)) is None
        or r.method != options.method
        or r.prompt_version != version
        or (model is not None and r.model != model)
    ]


@dataclass
class _RunTotals:
    failed: int = 0
    errors: list[str] = field(default_factory=list)


class _ReportWriter:
    """Writes the due reports through the task runner, deepest level first."""

    def __init__(
        self,
        store: _ReportStore,
        project: str,
        graph: _Graph,
        records: Sequence[CommunityRecord],
        options: BuildOptions,
        llm: LLM | None,
    ) -> None:
        self.store, self.project, self.graph = store, project, graph
        self.options, self.llm = options, llm
        self.by_id = {c.id: c for c in records}
        self.children: dict[str, list[str]] = {}
        for c in records:
            if c.parent is not None:
                self.children.setdefault(c.parent, []).append(c.id)
        self.max_rank = max((c.rank for c in records), default=0.0)
        self.written = 0
        self.calls = 0

    def run(
        self,
        due: Sequence[CommunityRecord],
        progress: Progress | None,
        policy: RetryPolicy | None,
    ) -> _RunTotals:
        totals = _RunTotals()
        if not due:
            return totals
        version = _version(self.options.method)
        build_id = next(iter(self.by_id.values())).build_id
        model = self.llm.model_id if self.llm is not None else ""
        forced = time.time_ns() if self.options.force else ""  # every forced build runs
        self.store.enqueue_tasks(
            self.project,
            JOB,
            [
                TaskIn(
                    c.id,
                    f"{build_id}:{self.options.method}:{version}:{model}:{forced}",
                    {"level": c.level},
                )
                for c in due
            ],
        )
        # an explicit build retries the reports an earlier one failed on, now
        self.store.requeue_tasks(JOB, project=self.project, statuses=("failed", "dead"))
        done = 0
        for level in sorted({c.level for c in due}, reverse=True):
            ids = [c.id for c in due if c.level == level]

            def tick(n: int) -> None:
                nonlocal done
                done += n
                if progress:
                    progress("reports", done, len(due))

            report = run_tasks(
                self.store,
                JOB,
                self._work,
                project=self.project,
                policy=policy,
                # a model call per report: small batches; extractive: few transactions
                batch_size=8 if self.options.method == "llm" else 64,
                wait_for_retries=False,
                progress=tick,
                row_ids=ids,
            )
            totals.failed += report.failed
            totals.errors.extend(e for e in report.errors if e not in totals.errors)
        return totals

    def material(self, community: CommunityRecord) -> Material:
        inside = set(community.members)
        edges: dict[str, Edge] = {}
        for m in community.members:
            for e in self.graph.touching.get(m, ()):
                if e.source in inside and e.target in inside:
                    edges[e.id] = e
        children = (
            self.store.community_reports(self.project, self.children.get(community.id, []))
            if self.options.method == "llm"
            else []
        )
        members = self.graph.members
        return Material(
            community=community,
            members=[members[m] for m in community.members if m in members],
            edges=list(edges.values()),
            children=children,
            max_rank=self.max_rank,
        )

    def _work(self, tasks: Sequence[Task]) -> Outcome[Task, TaskDone]:
        results: list[TaskDone] = []
        failures: dict[str, list[Task]] = {}
        written: list[tuple[CommunityReport, str, str, int]] = []
        for task in tasks:
            community = self.by_id.get(task.row_id)
            if community is None:  # replaced by a newer build: nothing to write
                results.append(TaskDone(task, {"skipped": True}))
                continue
            try:
                report = self._report(community)
            except Exception as exc:  # a provider or parsing failure fails this task only
                failures.setdefault(f"{type(exc).__name__}: {exc}", []).append(task)
                continue
            text = report.text()
            written.append((report, text, text_hash(text), REPORT_TEXT_VERSION))
            results.append(TaskDone(task, {"title": report.title}))
        if written:
            self.written += self.store.upsert_community_reports(self.project, written)
        return Outcome(results=results, failures=failures)

    def _report(self, community: CommunityRecord) -> CommunityReport:
        material = self.material(community)
        if self.options.method == "llm" and self.llm is not None:
            made = llm_report(self.llm, material, budget_chars=self.options.budget_chars)
            self.calls += made.calls - made.cached
            return made.report
        return extractive_report(material)
