"""Communities and community reports of the PostgreSQL store (migration
``m005_create_communities``).

:class:`PostgresCommunities` is the ``CommunityStore`` slice of
:class:`~kgsearch.store.postgres.store.PostgresStore`. A build replaces the project's
communities in one transaction (readers see the old set or the new one, never a mix),
after checking that the graph is still the one the build read; the project's row in
``community_builds`` is locked first, so two builds of one project commit one after
the other. Reports are embeddable rows of kind ``community`` in ``community_reports``
with the same ``words``/``tsv`` lexical columns as the other kinds.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from kgsearch.community_values import CommunityBuild, CommunityRecord, CommunityReport
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
from kgsearch.store.postgres.connection import Connection
from kgsearch.store.postgres.lexical import LexicalStats
from kgsearch.store.postgres.sql import clean, json_text
from kgsearch.store.values import words

__all__ = ["PostgresCommunities"]

_REPORT_INSERT = (
    "INSERT INTO community_reports (id, project, level, title, summary, findings, rating, "
    "rating_explanation, method, prompt_version, report_model, source_digest, created_at, "
    "updated_at, text, text_hash, text_version, words) "
    "SELECT %s,%s,%s,%s,%s,%s::json,%s,%s,%s,%s,%s,%s,now(),now(),%s,%s,%s,%s "
    "WHERE EXISTS (SELECT 1 FROM communities WHERE project = %s AND id = %s) "
    "ON CONFLICT (project, id) DO UPDATE SET "
    + on_conflict(
        "community_reports",
        ", level = excluded.level, title = excluded.title, summary = excluded.summary, "
        "findings = excluded.findings, rating = excluded.rating, "
        "rating_explanation = excluded.rating_explanation, method = excluded.method, "
        "prompt_version = excluded.prompt_version, report_model = excluded.report_model, "
        "source_digest = excluded.source_digest, updated_at = excluded.updated_at, "
        "words = excluded.words",
    )
)


class PostgresCommunities:
    """The ``CommunityStore`` capability over PostgreSQL."""

    db: Connection
    lexical: LexicalStats

    def graph_digest(self, project: str) -> str:
        """Counts and latest write and delete times of the project's objects and
        relationships (deleted rows included, so a delete or a purge changes it)."""
        rows = []
        for table in ("objects", "relationships"):
            row = self.db.one(
                f"SELECT count(*) AS n, max(updated_at) AS u, max(deleted_at) AS d FROM {table} "
                "WHERE project = %s",
                (project,),
            )
            rows.append(tuple(row.values()) if row else ())
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
        moves = {old: new for old, new in (renamed or {}).items() if old != new}
        check_replacement(communities, build, moves)
        with self.db.transaction():
            self.db.execute(
                "SELECT pg_advisory_xact_lock(hashtext('kgsearch-communities:' || %s))",
                (project,),
            )
            check_digest(project, expected_digest, self.graph_digest(project))
            for table in ("communities", "community_members"):
                self.db.execute(f"DELETE FROM {table} WHERE project = %s", (project,))
            self.db.executemany(
                f"INSERT INTO communities (project, {COMMUNITY_COLUMNS}) "
                "VALUES (%s,%s,%s,%s,%s,%s,%s,%s)",
                [
                    (
                        project,
                        c.id,
                        c.level,
                        c.parent,
                        json_text(list(c.members)),
                        c.size,
                        c.rank,
                        c.build_id,
                    )
                    for c in communities
                ],
            )
            self.db.executemany(
                "INSERT INTO community_members (project, object_id, level, community_id) "
                "VALUES (%s,%s,%s,%s)",
                [(project, m, c.level, c.id) for c in communities for m in c.members],
            )
            # via a temporary id, so that no rename collides with another's old id
            for old, new in moves.items():
                self.db.execute(
                    "UPDATE community_reports SET id = %s WHERE project = %s AND id = %s",
                    ("~" + new, project, old),
                )
            if moves:
                self.db.execute(
                    "DELETE FROM community_reports WHERE project = %s AND id = ANY(%s)",
                    (project, list(moves.values())),
                )
                self.db.execute(
                    "UPDATE community_reports SET id = substr(id, 2) "
                    "WHERE project = %s AND id LIKE '~%%'",
                    (project,),
                )
            removed = self.db.execute(
                "DELETE FROM community_reports WHERE project = %s AND id NOT IN "
                "(SELECT id FROM communities WHERE project = %s)",
                (project, project),
            )
            self.db.execute(
                f"INSERT INTO community_builds (project, {BUILD_COLUMNS}) "
                "VALUES (%s, %s, 1, %s, now()) "
                "ON CONFLICT (project) DO UPDATE SET build_id = excluded.build_id, "
                "generation = community_builds.generation + 1, params = excluded.params, "
                "created_at = excluded.created_at",
                (project, build.id, build_params(build)),
            )
            self.lexical.clear()
        return removed

    def community_build(self, project: str) -> CommunityBuild | None:
        """The project's current build, or None."""
        row = self.db.one(
            f"SELECT {BUILD_COLUMNS} FROM community_builds WHERE project = %s", (project,)
        )
        return None if row is None else to_build(row)

    def communities(
        self, project: str, *, level: int | None = None, ids: Sequence[str] | None = None
    ) -> list[CommunityRecord]:
        """Communities by level, then rank (highest first), then id."""
        where, params = "", list[object]()
        if level is not None:
            where, params = " AND level = %s", [level]
        if ids is not None:
            where += " AND id = ANY(%s)"
            params.append(list(ids))
        return [
            to_community(r)
            for r in self.db.all(
                f"SELECT {COMMUNITY_COLUMNS} FROM communities WHERE project = %s{where} "
                "ORDER BY level, rank DESC, id",
                (project, *params),
            )
        ]

    def communities_of(self, project: str, object_ids: Sequence[str]) -> dict[str, list[str]]:
        """Object id → its communities, coarsest level first."""
        out: dict[str, list[str]] = {}
        for r in self.db.all(
            "SELECT object_id, community_id FROM community_members WHERE project = %s "
            "AND object_id = ANY(%s) ORDER BY object_id, level",
            (project, list(object_ids)),
        ):
            out.setdefault(r["object_id"], []).append(r["community_id"])
        return out

    def upsert_community_reports(
        self, project: str, reports: Sequence[tuple[CommunityReport, str, str, int]]
    ) -> int:
        """Write reports of current communities; others are skipped."""
        written = 0
        with self.db.transaction():
            for report, text, digest, version in reports:
                written += self.db.execute(
                    _REPORT_INSERT,
                    (
                        report.id,
                        project,
                        report.level,
                        clean(report.title),
                        clean(report.summary),
                        findings_json(report),
                        report.rating,
                        clean(report.rating_explanation),
                        report.method,
                        report.prompt_version,
                        report.model,
                        report.source_digest,
                        clean(text),
                        digest,
                        version,
                        words(text),
                        project,
                        report.id,
                    ),
                )
            if written:
                self.lexical.clear()
        return written

    def community_reports(self, project: str, ids: Sequence[str]) -> list[CommunityReport]:
        """Reports by community id, in the order asked."""
        found = {
            r["id"]: to_report(r)
            for r in self.db.all(
                f"SELECT {REPORT_COLUMNS} FROM community_reports WHERE project = %s "
                "AND deleted_at IS NULL AND id = ANY(%s)",
                (project, list(ids)),
            )
        }
        return [found[i] for i in ids if i in found]

    def delete_communities(self, project: str) -> int:
        """Forget the project's build, communities and reports."""
        with self.db.transaction():
            removed = self.db.execute("DELETE FROM communities WHERE project = %s", (project,))
            for table in ("community_members", "community_reports", "community_builds"):
                self.db.execute(f"DELETE FROM {table} WHERE project = %s", (project,))
            self.lexical.clear()
        return removed
