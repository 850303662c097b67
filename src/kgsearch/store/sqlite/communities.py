"""Communities and community reports of the SQLite store (migration
``m007_create_communities``).

:class:`SQLiteCommunities` is the ``CommunityStore`` slice of
:class:`~kgsearch.store.sqlite.store.SQLiteStore`. A build replaces the project's
communities in one write transaction (readers see the old set or the new one, never
a mix), after checking that the graph is still the one the build read. Reports are
embeddable rows of kind ``community`` in ``community_reports``, kept in the lexical
index by the same triggers as the other kinds.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from kgsearch.community_values import CommunityBuild, CommunityRecord, CommunityReport
from kgsearch.model import Kind
from kgsearch.store.common import on_conflict
from kgsearch.store.communities_common import (
    BUILD_COLUMNS,
    COMMUNITY_COLUMNS,
    REPORT_COLUMNS,
    build_params,
    check_digest,
    check_replacement,
    digest_of,
    findings_json,
    to_build,
    to_community,
    to_report,
)
from kgsearch.store.sqlite.connection import Connection
from kgsearch.store.sqlite.search import VectorCache
from kgsearch.store.sqlite.sql import chunked, dumps, now_iso, placeholders

__all__ = ["SQLiteCommunities"]

_REPORT_INSERT = (
    "INSERT INTO community_reports (id, project, level, title, summary, findings, rating, "
    "rating_explanation, method, prompt_version, report_model, source_digest, created_at, "
    "updated_at, text, text_hash, text_version) "
    "SELECT ?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,? "
    "WHERE EXISTS (SELECT 1 FROM communities WHERE project = ? AND id = ?) "
    "ON CONFLICT(project, id) DO UPDATE SET "
    + on_conflict(
        "community_reports",
        ", level = excluded.level, title = excluded.title, summary = excluded.summary, "
        "findings = excluded.findings, rating = excluded.rating, "
        "rating_explanation = excluded.rating_explanation, method = excluded.method, "
        "prompt_version = excluded.prompt_version, report_model = excluded.report_model, "
        "source_digest = excluded.source_digest, updated_at = excluded.updated_at",
    )
)


class SQLiteCommunities:
    """The ``CommunityStore`` capability over SQLite."""

    db: Connection
    vectors_cache: VectorCache

    def graph_digest(self, project: str) -> str:
        """Counts and latest write and delete times of the project's objects and
        relationships (deleted rows included, so a delete or a purge changes it)."""
        rows = [
            tuple(
                self.db.one(
                    f"SELECT count(*), max(updated_at), max(deleted_at) FROM {table} "
                    "WHERE project = ?",
                    (project,),
                )
                or ()
            )
            for table in ("objects", "relationships")
        ]
        return digest_of(rows)

    def replace_communities(
        self,
        project: str,
        build: CommunityBuild,
        communities: Sequence[CommunityRecord],
        *,
        renamed: Mapping[str, str] | None = None,
        expected_digest: str | None = None,
    ) -> int:
        """Replace the project's communities with a whole build, atomically."""
        moves = dict(renamed or {})
        check_replacement(communities, build, moves)
        with self.db.transaction():
            check_digest(project, expected_digest, self.graph_digest(project))
            for table in ("communities", "community_members"):
                self.db.execute(f"DELETE FROM {table} WHERE project = ?", (project,))
            self.db.executemany(
                f"INSERT INTO communities (project, {COMMUNITY_COLUMNS}) VALUES (?,?,?,?,?,?,?,?)",
                [
                    (
                        project,
                        c.id,
                        c.level,
                        c.parent,
                        dumps(list(c.members)),
                        c.size,
                        c.rank,
                        c.build_id,
                    )
                    for c in communities
                ],
            )
            self.db.executemany(
                "INSERT INTO community_members (project, object_id, level, community_id) "
                "VALUES (?,?,?,?)",
                [(project, m, c.level, c.id) for c in communities for m in c.members],
            )
            # via a temporary id, so that no rename collides with another's old id
            targets = [new for old, new in moves.items() if old != new]
            for old, new in moves.items():
                if old != new:
                    self.db.execute(
                        "UPDATE community_reports SET id = ? WHERE project = ? AND id = ?",
                        ("~" + new, project, old),
                    )
            for part in chunked(targets):
                self.db.execute(
                    "DELETE FROM community_reports WHERE project = ? "
                    f"AND id IN ({placeholders(len(part))})",
                    (project, *part),
                )
            self.db.execute(
                "UPDATE community_reports SET id = substr(id, 2) "
                "WHERE project = ? AND id LIKE '~%'",
                (project,),
            )
            removed = self.db.execute(
                "DELETE FROM community_reports WHERE project = ? AND id NOT IN "
                "(SELECT id FROM communities WHERE project = ?)",
                (project, project),
            ).rowcount
            generation = self.db.one(
                "SELECT generation FROM community_builds WHERE project = ?", (project,)
            )
            self.db.execute(
                f"INSERT INTO community_builds (project, {BUILD_COLUMNS}) VALUES (?,?,?,?,?) "
                "ON CONFLICT(project) DO UPDATE SET build_id = excluded.build_id, "
                "generation = excluded.generation, params = excluded.params, "
                "created_at = excluded.created_at",
                (
                    project,
                    build.id,
                    (int(generation[0]) if generation else 0) + 1,
                    build_params(build),
                    now_iso(),
                ),
            )
            self.vectors_cache.touch(self.db, Kind.COMMUNITY)
        return removed

    def community_build(self, project: str) -> CommunityBuild | None:
        """The project's current build, or None."""
        row = self.db.one(
            f"SELECT {BUILD_COLUMNS} FROM community_builds WHERE project = ?", (project,)
        )
        return None if row is None else to_build(row)

    def communities(
        self, project: str, *, level: int | None = None, ids: Sequence[str] | None = None
    ) -> list[CommunityRecord]:
        """Communities by level, then rank (highest first), then id."""
        where, params = "", list[int]()
        if level is not None:
            where, params = " AND level = ?", [level]
        order = " ORDER BY level, rank DESC, id"
        if ids is None:
            return [
                to_community(r)
                for r in self.db.all(
                    f"SELECT {COMMUNITY_COLUMNS} FROM communities WHERE project = ?{where}{order}",
                    (project, *params),
                )
            ]
        found: list[CommunityRecord] = []
        for part in chunked(list(ids)):
            found.extend(
                to_community(r)
                for r in self.db.all(
                    f"SELECT {COMMUNITY_COLUMNS} FROM communities WHERE project = ? "
                    f"AND id IN ({placeholders(len(part))}){where}",
                    (project, *part, *params),
                )
            )
        return sorted(found, key=lambda c: (c.level, -c.rank, c.id))

    def communities_of(self, project: str, object_ids: Sequence[str]) -> dict[str, list[str]]:
        """Object id → its communities, coarsest level first."""
        out: dict[str, list[str]] = {}
        for part in chunked(list(object_ids)):
            for r in self.db.all(
                "SELECT object_id, community_id FROM community_members WHERE project = ? "
                f"AND object_id IN ({placeholders(len(part))}) ORDER BY object_id, level",
                (project, *part),
            ):
                out.setdefault(r["object_id"], []).append(r["community_id"])
        return out

    def upsert_community_reports(
        self, project: str, reports: Sequence[tuple[CommunityReport, str, str, int]]
    ) -> int:
        """Write reports of current communities; others are skipped."""
        now = now_iso()
        written = 0
        with self.db.transaction():
            for report, text, digest, version in reports:
                written += self.db.execute(
                    _REPORT_INSERT,
                    (
                        report.id,
                        project,
                        report.level,
                        report.title,
                        report.summary,
                        findings_json(report),
                        report.rating,
                        report.rating_explanation,
                        report.method,
                        report.prompt_version,
                        report.model,
                        report.source_digest,
                        now,
                        now,
                        text,
                        digest,
                        version,
                        project,
                        report.id,
                    ),
                ).rowcount
            if written:
                self.vectors_cache.touch(self.db, Kind.COMMUNITY)
        return written

    def community_reports(self, project: str, ids: Sequence[str]) -> list[CommunityReport]:
        """Reports by community id, in the order asked."""
        found = {}
        for part in chunked(list(ids)):
            for r in self.db.all(
                f"SELECT {REPORT_COLUMNS} FROM community_reports WHERE project = ? "
                f"AND deleted_at IS NULL AND id IN ({placeholders(len(part))})",
                (project, *part),
            ):
                found[r["id"]] = to_report(r)
        return [found[i] for i in ids if i in found]

    def delete_communities(self, project: str) -> int:
        """Forget the project's build, communities and reports."""
        with self.db.transaction():
            removed = self.db.execute(
                "DELETE FROM communities WHERE project = ?", (project,)
            ).rowcount
            for table in ("community_members", "community_reports", "community_builds"):
                self.db.execute(f"DELETE FROM {table} WHERE project = ?", (project,))
            self.vectors_cache.touch(self.db, Kind.COMMUNITY)
        return removed
