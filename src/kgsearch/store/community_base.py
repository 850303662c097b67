"""The ``CommunityStore`` capability (re-exported by :mod:`kgsearch.store.base`, where
``Store`` unites it with the others): kept in a module of its own so ``base.py`` stays
small."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

from kgsearch.community_values import CommunityBuild, CommunityRecord, CommunityReport

__all__ = ["CommunityStore"]


class CommunityStore(Protocol):
    """A project's communities (one build at a time), membership both ways, and the
    community reports, which are embeddable rows of kind ``community`` (the embedding
    queue and search primitives serve them like any other kind)."""

    def graph_digest(self, project: str) -> str:
        """A digest that changes with any write, delete or purge of the project's
        objects or relationships (a build compares it before replacing)."""
        ...

    def replace_communities(
        self,
        project: str,
        build: CommunityBuild,
        communities: Sequence[CommunityRecord],
        *,
        renamed: Mapping[str, str] | None = None,
        expected_digest: str | None = None,
    ) -> int:
        """Replace the project's communities with a whole build in one transaction:
        reports listed in ``renamed`` (old id → new id) move to their new community,
        every other report whose community is gone is deleted. Returns reports deleted.

        Raises:
            Conflict: ``expected_digest`` no longer matches :meth:`graph_digest`;
                nothing is written.
            InvalidRequest: The set is inconsistent (duplicate ids, unknown parents).
        """
        ...

    def community_build(self, project: str) -> CommunityBuild | None:
        """The project's current build, or None before the first."""
        ...

    def communities(
        self, project: str, *, level: int | None = None, ids: Sequence[str] | None = None
    ) -> list[CommunityRecord]:
        """Communities (of one level, or these ids), by level, then rank, then id."""
        ...

    def communities_of(self, project: str, object_ids: Sequence[str]) -> dict[str, list[str]]:
        """Object id → ids of the communities holding it, coarsest level first."""
        ...

    def upsert_community_reports(
        self, project: str, reports: Sequence[tuple[CommunityReport, str, str, int]]
    ) -> int:
        """Write reports with (report, text, text_hash, text_version); a changed text
        makes the row pending for embedding. Reports of communities not in the current
        build are skipped. Returns reports written."""
        ...

    def community_reports(self, project: str, ids: Sequence[str]) -> list[CommunityReport]:
        """Reports by community id, in the order asked (missing ones skipped)."""
        ...

    def delete_communities(self, project: str) -> int:
        """Forget the project's build, communities and reports; return communities removed."""
        ...
