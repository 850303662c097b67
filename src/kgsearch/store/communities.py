"""Community rows, written once for both stores (``CommunityStore``).

A build replaces the project's communities in one transaction (readers see the old set
or the new one, never a mix), after checking that the graph is still the one the build
read; two builds of one project commit one after the other. Reports are embeddable rows
of kind ``community`` in ``community_reports``. Here too are the row decoders, the graph
digest built from per-table aggregates and the checks of a replacement set; the
statements differ between the stores only in what
:class:`~kgsearch.store.dialect.Dialect` words.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from kgsearch.community_values import CommunityBuild, CommunityRecord, CommunityReport, Finding
from kgsearch.errors import Conflict, InvalidRequest
from kgsearch.model import Kind
from kgsearch.store.common import on_conflict
from kgsearch.store.dialect import Slice
from kgsearch.store.values import words

__all__ = [
    "BUILD_COLUMNS",
    "COMMUNITY_COLUMNS",
    "REPORT_COLUMNS",
    "Communities",
    "build_params",
    "check_digest",
    "check_replacement",
    "digest_of",
    "findings_json",
    "to_build",
    "to_community",
    "to_report",
]

COMMUNITY_COLUMNS = "id, level, parent, members, size, rank, build_id"
REPORT_COLUMNS = (
    "id, level, title, summary, findings, rating, rating_explanation, method, "
    "prompt_version, report_model, source_digest, status"
)
BUILD_COLUMNS = "build_id, generation, params, created_at"


def _loads(value: Any) -> Any:
    return json.loads(value) if isinstance(value, str) else value


def to_community(row: Any) -> CommunityRecord:
    """A community from a stored row (members as JSON text or a decoded list)."""
    return CommunityRecord(
        id=row["id"],
        level=int(row["level"]),
        parent=row["parent"],
        members=tuple(_loads(row["members"])),
        size=int(row["size"]),
        rank=float(row["rank"]),
        build_id=row["build_id"],
    )


def to_report(row: Any) -> CommunityReport:
    """A report from a stored row."""
    return CommunityReport(
        id=row["id"],
        level=int(row["level"]),
        title=row["title"],
        summary=row["summary"],
        findings=tuple(Finding.model_validate(f) for f in _loads(row["findings"])),
        rating=float(row["rating"]),
        rating_explanation=row["rating_explanation"] or "",
        method=row["method"],
        prompt_version=row["prompt_version"] or "",
        model=row["report_model"],
        source_digest=row["source_digest"] or "",
        status=row["status"],
    )


def to_build(row: Any) -> CommunityBuild:
    """The build record from its row (parameters and figures kept as JSON)."""
    params = dict(_loads(row["params"]))
    created = row["created_at"]
    params["created_at"] = created if isinstance(created, str) else created.isoformat()
    params["id"] = row["build_id"]
    params["generation"] = int(row["generation"])
    return CommunityBuild.model_validate(params)


def build_params(build: CommunityBuild) -> str:
    """The build's fields as JSON, except those with columns of their own."""
    return json.dumps(
        build.model_dump(mode="json", exclude={"id", "generation", "created_at"}),
        ensure_ascii=False,
    )


def findings_json(report: CommunityReport) -> str:
    """The report's findings as JSON text."""
    return json.dumps(
        [f.model_dump(mode="json") for f in report.findings], ensure_ascii=False, sort_keys=True
    )


def digest_of(rows: Iterable[Sequence[Any]]) -> str:
    """A digest of aggregate rows (counts and latest timestamps of the graph tables):
    any write, delete or purge of an object or relationship changes it."""
    digest = hashlib.blake2b(digest_size=12)
    for row in rows:
        digest.update(repr(tuple(str(v) for v in row)).encode())
    return digest.hexdigest()


def check_digest(project: str, expected: str | None, actual: str) -> None:
    """Refuse to replace communities detected on a graph that changed since.

    Raises:
        Conflict: The graph digest differs from the one the build read.
    """
    if expected is not None and expected != actual:
        raise Conflict(
            f"the graph of project {project!r} changed while communities were being "
            "built; nothing was written: run the build again",
            details={"expected_digest": expected, "digest": actual},
        )


def check_replacement(
    communities: Sequence[CommunityRecord], build: CommunityBuild, renamed: Mapping[str, str]
) -> None:
    """Check a replacement set before any write: unique ids, the build's id on every
    row, parents inside the set, renames onto ids of the set.

    Raises:
        InvalidRequest: The set is inconsistent.
    """
    ids = {c.id for c in communities}
    if len(ids) != len(communities):
        raise InvalidRequest("community ids must be unique within a build")
    for c in communities:
        if c.build_id != build.id:
            raise InvalidRequest(f"community {c.id} belongs to build {c.build_id}, not {build.id}")
        if c.parent is not None and c.parent not in ids:
            raise InvalidRequest(f"community {c.id}: parent {c.parent} is not in the build")
        if c.size != len(c.members):
            raise InvalidRequest(f"community {c.id}: size {c.size} != {len(c.members)} members")
    for old, new in renamed.items():
        if new not in ids:
            raise InvalidRequest(f"report {old} renamed to {new}, which is not in the build")


_REPORT_FIELDS = (
    "id, project, level, title, summary, findings, rating, rating_explanation, method, "
    "prompt_version, report_model, source_digest, created_at, updated_at, text, text_hash, "
    "text_version"
)
_REPORT_UPDATE = (
    ", level = excluded.level, title = excluded.title, summary = excluded.summary, "
    "findings = excluded.findings, rating = excluded.rating, "
    "rating_explanation = excluded.rating_explanation, method = excluded.method, "
    "prompt_version = excluded.prompt_version, report_model = excluded.report_model, "
    "source_digest = excluded.source_digest, updated_at = excluded.updated_at"
)


class Communities(Slice):
    """``CommunityStore`` over a store's connection and dialect."""

    def graph_digest(self, project: str) -> str:
        # deleted rows count too, so that a delete or a purge changes it
        rows = []
        for table in ("objects", "relationships"):
            row = self.db.one(
                self.dialect.sql(
                    f"SELECT count(*) AS n, max(updated_at) AS u, max(deleted_at) AS d "
                    f"FROM {table} WHERE project = ?"
                ),
                (project,),
            )
            rows.append((row["n"], row["u"], row["d"]) if row else ())
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
        check_replacement(communities, build, renamed or {})
        moves = {old: new for old, new in (renamed or {}).items() if old != new}
        d, db = self.dialect, self.db
        with db.transaction():
            if d.serialise:
                db.one(d.sql(d.serialise), ("kgsearch-communities:" + project,))
            check_digest(project, expected_digest, self.graph_digest(project))
            for table in ("communities", "community_members"):
                db.write(d.sql(f"DELETE FROM {table} WHERE project = ?"), (project,))
            db.executemany(
                d.sql(
                    f"INSERT INTO communities (project, {COMMUNITY_COLUMNS}) "
                    "VALUES (?,?,?,?,?,?,?,?)"
                ),
                [
                    (
                        project,
                        c.id,
                        c.level,
                        c.parent,
                        d.json(list(c.members)),
                        c.size,
                        c.rank,
                        c.build_id,
                    )
                    for c in communities
                ],
            )
            db.executemany(
                d.sql(
                    "INSERT INTO community_members (project, object_id, level, community_id) "
                    "VALUES (?,?,?,?)"
                ),
                [(project, m, c.level, c.id) for c in communities for m in c.members],
            )
            self._move_reports(project, moves)
            removed = db.write(
                d.sql(
                    "DELETE FROM community_reports WHERE project = ? AND id NOT IN "
                    "(SELECT id FROM communities WHERE project = ?)"
                ),
                (project, project),
            )
            db.write(
                d.sql(
                    f"INSERT INTO community_builds (project, {BUILD_COLUMNS}) "
                    "VALUES (?, ?, 1, ?, ?) ON CONFLICT (project) DO UPDATE SET "
                    "build_id = excluded.build_id, "
                    "generation = community_builds.generation + 1, "
                    "params = excluded.params, created_at = excluded.created_at"
                ),
                (project, build.id, build_params(build), d.stamp()),
            )
            self._changed(Kind.COMMUNITY, texts=True)
        return removed

    def _move_reports(self, project: str, moves: Mapping[str, str]) -> None:
        """Give reports their communities' new ids (via a temporary id, so that no
        rename collides with another's old id), replacing reports already there."""
        if not moves:
            return
        d = self.dialect
        for old, new in moves.items():
            self.db.write(
                d.sql("UPDATE community_reports SET id = ? WHERE project = ? AND id = ?"),
                ("~" + new, project, old),
            )
        listed, params = d.listed("id", list(moves.values()))
        self.db.write(
            d.sql(f"DELETE FROM community_reports WHERE project = ? AND {listed}"),
            (project, *params),
        )
        self.db.write(
            d.sql(
                "UPDATE community_reports SET id = substr(id, 2) WHERE project = ? AND id LIKE '~%'"
            ),
            (project,),
        )

    def community_build(self, project: str) -> CommunityBuild | None:
        row = self.db.one(
            self.dialect.sql(f"SELECT {BUILD_COLUMNS} FROM community_builds WHERE project = ?"),
            (project,),
        )
        return None if row is None else to_build(row)

    def communities(
        self, project: str, *, level: int | None = None, ids: Sequence[str] | None = None
    ) -> list[CommunityRecord]:
        where, params = "", list[Any]()
        if level is not None:
            where, params = " AND level = ?", [level]
        if ids is not None:
            listed, listed_params = self.dialect.listed("id", list(ids))
            where += f" AND {listed}"
            params.extend(listed_params)
        rows = self.db.all(
            self.dialect.sql(
                f"SELECT {COMMUNITY_COLUMNS} FROM communities WHERE project = ?{where} "
                "ORDER BY level, rank DESC, id"
            ),
            (project, *params),
        )
        return [to_community(r) for r in rows]

    def communities_of(self, project: str, object_ids: Sequence[str]) -> dict[str, list[str]]:
        listed, params = self.dialect.listed("object_id", list(object_ids))
        out: dict[str, list[str]] = {}
        for r in self.db.all(
            self.dialect.sql(
                "SELECT object_id, community_id FROM community_members WHERE project = ? "
                f"AND {listed} ORDER BY object_id, level"
            ),
            (project, *params),
        ):
            out.setdefault(r["object_id"], []).append(r["community_id"])
        return out

    def upsert_community_reports(
        self, project: str, reports: Sequence[tuple[CommunityReport, str, str, int]]
    ) -> int:
        d = self.dialect
        fields, update, marks = _REPORT_FIELDS, _REPORT_UPDATE, ["?"] * 17
        marks[5] = d.json_mark
        if d.words:
            fields, update = fields + ", words", update + ", words = excluded.words"
            marks.append("?")
        insert = d.sql(
            f"INSERT INTO community_reports ({fields}) SELECT {','.join(marks)} "
            "WHERE EXISTS (SELECT 1 FROM communities WHERE project = ? AND id = ?) "
            "ON CONFLICT (project, id) DO UPDATE SET " + on_conflict("community_reports", update)
        )
        stamp, text = d.stamp(), d.text
        written = 0
        with self.db.transaction():
            for report, body, digest, version in reports:
                values = [
                    report.id,
                    project,
                    report.level,
                    text(report.title),
                    text(report.summary),
                    findings_json(report),
                    report.rating,
                    text(report.rating_explanation),
                    report.method,
                    report.prompt_version,
                    report.model,
                    report.source_digest,
                    stamp,
                    stamp,
                    text(body),
                    digest,
                    version,
                ]
                if d.words:
                    values.append(words(body))
                written += self.db.write(insert, (*values, project, report.id))
            if written:
                self._changed(Kind.COMMUNITY, texts=True)
        return written

    def community_reports(self, project: str, ids: Sequence[str]) -> list[CommunityReport]:
        listed, params = self.dialect.listed("id", list(ids))
        found = {
            r["id"]: to_report(r)
            for r in self.db.all(
                self.dialect.sql(
                    f"SELECT {REPORT_COLUMNS} FROM community_reports WHERE project = ? "
                    f"AND deleted_at IS NULL AND {listed}"
                ),
                (project, *params),
            )
        }
        return [found[i] for i in ids if i in found]

    def delete_communities(self, project: str) -> int:
        sql = self.dialect.sql
        with self.db.transaction():
            removed = self.db.write(sql("DELETE FROM communities WHERE project = ?"), (project,))
            for table in ("community_members", "community_reports", "community_builds"):
                self.db.write(sql(f"DELETE FROM {table} WHERE project = ?"), (project,))
            self._changed(Kind.COMMUNITY, texts=True)
        return removed
