"""Public values of communities: stored community rows, their reports and what a build did.

They sit beside :mod:`kgsearch.model` (the graph's own values) and
:mod:`kgsearch.reports` (what an ingest or extraction did), below every package, so the
store, the report writers, the engine and the adapters exchange the same types.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "CommunityBuild",
    "CommunityBuildReport",
    "CommunityDetail",
    "CommunityMembership",
    "CommunityPage",
    "CommunityRecord",
    "CommunityReport",
    "CommunityStatus",
    "Finding",
    "ReportMethod",
]

ReportMethod = Literal["extractive", "llm"]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class CommunityRecord(_Frozen):
    """One stored community of one build.

    Attributes:
        id: Stable id from its level and members (``c<level>-<hash>``).
        level: 0 for the coarsest partition; a child is one level below its parent.
        parent: The id of the community it was split from (None at level 0).
        members: Member object ids, sorted.
        size: ``len(members)``.
        rank: Summed weight of the relationships inside it.
        build_id: The build that wrote it.
    """

    id: str
    level: int
    parent: str | None
    members: tuple[str, ...]
    size: int
    rank: float
    build_id: str


class Finding(_Frozen):
    """One key finding of a report, citing what it rests on.

    Attributes:
        summary: One line.
        explanation: A few sentences (may be empty).
        objects: Member object ids the finding cites.
        relationships: Relationship ids the finding cites.
    """

    summary: str
    explanation: str = ""
    objects: tuple[str, ...] = ()
    relationships: tuple[str, ...] = ()


class CommunityReport(_Frozen):
    """What a community is about (GraphRAG's community report).

    Attributes:
        id: The community's id.
        level: The community's level.
        title: A short name.
        summary: A paragraph.
        findings: Key findings, each citing members and relationships.
        rating: Importance from 0 to 10.
        rating_explanation: One line on why.
        method: ``extractive`` (no model) or ``llm``.
        prompt_version: The prompt's version (or the extractive writer's).
        model: The chat model that wrote it (None for extractive reports).
        source_digest: Digest of the material it was written from.
        status: Its embedding status (pending → embedded | failed → dead).
    """

    id: str
    level: int
    title: str
    summary: str
    findings: tuple[Finding, ...] = ()
    rating: float = 0.0
    rating_explanation: str = ""
    method: ReportMethod = "extractive"
    prompt_version: str = ""
    model: str | None = None
    source_digest: str = ""
    status: str = "pending"

    def text(self) -> str:
        """The text that is embedded and searched: title, summary and findings."""
        lines = [self.title, self.summary]
        lines.extend(
            f"{f.summary}: {f.explanation}" if f.explanation else f.summary for f in self.findings
        )
        return "\n".join(line for line in lines if line)


class CommunityBuild(_Frozen):
    """A project's current build: parameters and what detection found.

    Attributes:
        id: The build's id.
        generation: 1 for the first build of the project, then one more per build.
        seed: Leiden's seed.
        max_cluster_size: Communities above this size were split one level further.
        resolution: Modularity resolution.
        modularity: Weighted modularity of the level-0 partition.
        levels: How many levels there are.
        communities: How many communities there are.
        nodes: Objects in a community.
        isolated: Objects with no kept relationship (in no community).
        graph_digest: The graph fingerprint the build read.
        created_at: When it was written (ISO 8601).
        warnings: Dropped edges and the like.
    """

    id: str
    generation: int
    seed: int
    max_cluster_size: int
    resolution: float
    modularity: float
    levels: int
    communities: int
    nodes: int
    isolated: int
    graph_digest: str
    created_at: str = ""
    warnings: tuple[str, ...] = ()


class CommunityBuildReport(_Frozen):
    """What one ``communities build`` did.

    Attributes:
        build: The build now stored (None when the graph has no community).
        reason: Why there is no community, when there is none.
        kept: Communities whose previous report still fits (membership barely changed).
        changed: Communities that got a new report in this run.
        removed: Previous communities that are gone, with their reports.
        reports: Reports written.
        failed: Reports that failed (retried by the next build).
        calls: Model calls made (LLM reports; cached replies are not calls).
        seconds: Wall-clock duration.
        errors: The first distinct error messages.
    """

    build: CommunityBuild | None
    reason: str | None = None
    kept: int = 0
    changed: int = 0
    removed: int = 0
    reports: int = 0
    failed: int = 0
    calls: int = 0
    seconds: float = 0.0
    errors: tuple[str, ...] = ()


class CommunityStatus(_Frozen):
    """The communities of a project at a glance.

    Attributes:
        build: The current build (None before the first one).
        by_level: Communities per level.
        reports: Reports stored.
        reports_by_status: Reports per embedding status.
        missing_reports: Communities without a report.
        stale: Whether the graph changed since the build (a rebuild would differ).
    """

    build: CommunityBuild | None
    by_level: dict[int, int] = Field(default_factory=dict)
    reports: int = 0
    reports_by_status: dict[str, int] = Field(default_factory=dict)
    missing_reports: int = 0
    stale: bool = False


class CommunityDetail(_Frozen):
    """One community with its report, children and members (names and types).

    Attributes:
        community: The stored community.
        report: Its report (None when none is written yet).
        children: Ids of the communities split from it.
        members: ``{"id", "type", "key", "name"}`` of each live member, up to the limit.
    """

    community: CommunityRecord
    report: CommunityReport | None = None
    children: tuple[str, ...] = ()
    members: tuple[dict[str, Any], ...] = ()


class CommunityPage(_Frozen):
    """A page of communities with their report titles.

    Attributes:
        items: Communities with ``title`` and ``rating`` of their report when there is one.
        total: Communities matching the listing.
    """

    items: tuple[dict[str, Any], ...]
    total: int


class CommunityMembership(_Frozen):
    """The communities an object belongs to, one per level (coarsest first).

    Attributes:
        object_id: The object.
        communities: Its community at each level, with the report's title.
    """

    object_id: str
    communities: tuple[dict[str, Any], ...]
