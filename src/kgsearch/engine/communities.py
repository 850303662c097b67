"""The engine's communities section: build (detect, store whole, report), status,
listing, one community, and an object's communities."""

from __future__ import annotations

from collections.abc import Callable

from kgsearch.community_values import (
    CommunityBuildReport,
    CommunityDetail,
    CommunityMembership,
    CommunityPage,
    CommunityStatus,
    ReportMethod,
)
from kgsearch.engine import providers
from kgsearch.engine.core import EngineCore, llm_scoped
from kgsearch.errors import InvalidRequest, MissingCredentials
from kgsearch.lifecycle import communities as building
from kgsearch.llm.base import LLM
from kgsearch.search import communities as lookups

__all__ = ["CommunityMethods"]


class CommunityMethods(EngineCore):
    """Communities of a project's graph (docs/communities.md), one call each."""

    @llm_scoped
    def build_communities(
        self,
        *,
        project: str | None = None,
        method: ReportMethod = "extractive",
        max_cluster_size: int = 10,
        seed: int = 0xDEADBEEF,
        resolution: float = 1.0,
        min_jaccard: float = 0.9,
        force: bool = False,
        progress: Callable[[str, int, int], None] | None = None,
    ) -> CommunityBuildReport:
        """Detect communities (hierarchical Leiden), replace the stored set whole, and
        write the reports that are due: new communities, those whose membership changed
        past ``min_jaccard``, those without one or of another method or version (all
        with ``force``). Reports are extractive (no model) or written by the configured
        chat model (``method="llm"``, bottom-up, every call cached); they are embedded
        by the next embedding run.

        Raises:
            InvalidRequest: Bad parameters, or ``llm`` without a configured model.
            Conflict: The graph changed while the build ran; nothing was written.
        """
        llm = self._report_llm() if method == "llm" else None
        options = building.BuildOptions(
            method=method,
            max_cluster_size=max_cluster_size,
            seed=seed,
            resolution=resolution,
            min_jaccard=min_jaccard,
            force=force,
        )
        return building.build_communities(
            self.store, self._p(project), options, llm=llm, progress=progress
        )

    def _report_llm(self) -> LLM:
        """The configured chat model; a missing key is the request's problem (400)."""
        try:
            return providers.make_llm(self.llm_settings, self.store, self.llm_guard)
        except MissingCredentials as exc:
            raise InvalidRequest(
                f"method 'llm' needs a configured chat model ([llm] settings): {exc}",
                details=exc.details,
            ) from None

    def community_status(self, *, project: str | None = None) -> CommunityStatus:
        """The current build, communities per level, reports by embedding status, and
        whether the graph changed since the build."""
        return lookups.community_status(self.store, self._p(project))

    def list_communities(
        self,
        *,
        project: str | None = None,
        level: int | None = None,
        limit: int = 50,
        offset: int = 0,
    ) -> CommunityPage:
        """Communities (of one level) by level, then rank, with their report titles."""
        return lookups.community_page(
            self.store, self._p(project), level=level, limit=limit, offset=offset
        )

    def community(
        self, community_id: str, *, project: str | None = None, members: int = 100
    ) -> CommunityDetail:
        """One community with its report, children and members.

        Raises:
            NotFound: No such community in the current build.
        """
        return lookups.community_detail(self.store, self._p(project), community_id, members=members)

    def object_communities(
        self, object_id: str, *, project: str | None = None
    ) -> CommunityMembership:
        """The communities an object belongs to, one per level, coarsest first.

        Raises:
            NotFound: No such live object.
        """
        return lookups.object_communities(self.store, self._p(project), object_id)
