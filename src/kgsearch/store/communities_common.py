"""Logic both backends share for community rows and reports (``CommunityStore``).

Row decoders, the graph digest built from per-table aggregates, and the check that a
build replaces the communities of the graph it read.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from kgsearch.community_values import CommunityBuild, CommunityRecord, CommunityReport, Finding
from kgsearch.errors import Conflict, InvalidRequest

__all__ = [
    "BUILD_COLUMNS",
    "COMMUNITY_COLUMNS",
    "REPORT_COLUMNS",
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
