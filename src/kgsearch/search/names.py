"""The ``objects:name`` leg: objects whose key is the query, or a name its keywords
give, ignoring case; and the search's one name look-up.

A search looks its names up once: the name leg's and, when the anchored relationship
leg runs, the spans its linking tries (:func:`~kgsearch.search.paths.span_names`), in
one :meth:`~kgsearch.store.base.SearchIndex.named_objects` call made before the legs
start (:func:`look_up_names`). Both legs then read them through the search's
:class:`~kgsearch.search.rows.Rows` (:meth:`~kgsearch.search.rows.Rows.named`) without
another store call. A name leg with object filters (types, labels, properties,
embedded only: the hinted legs and filtered searches) looks its names up with them,
as before.
"""

from __future__ import annotations

from collections.abc import Sequence

from kgsearch.model import Filters, Kind
from kgsearch.search.paths import span_names
from kgsearch.search.plan import Plan
from kgsearch.search.rows import Rows
from kgsearch.search.statements import Traces, log_of
from kgsearch.store.base import SearchIndex, Trace

__all__ = ["leg_names", "look_up_names", "looked_up", "nameable", "named", "shared_names"]

# Longest query that is tried as an object name.
_MAX_NAME_CHARS = 200


def look_up_names(plan: Plan, rows: Rows, traces: Traces | None) -> None:
    """Look up, in one store call (traced as the name leg's), every name the search
    will ask :meth:`Rows.named` for: the name leg's, when it shares the look-up
    (:func:`shared_names`), and the anchored leg's span linking's, when it runs. Done
    before the legs start, so the anchored leg (in a leg worker) finds its names
    looked up already rather than racing the name leg to a second call."""
    names = leg_names(plan)
    if not names or not shared_names(plan.request.filters) or Kind.OBJECT not in plan.scopes:
        return
    config = plan.request.scope(Kind.OBJECT)
    if config is None or "bm25" not in config.methods:
        return
    wanted = [*names, *(span_names(plan.request.query) if plan.anchored else [])]
    rows.named(wanted, log_of(traces, "objects:name"))


def leg_names(plan: Plan) -> list[str]:
    """The names the name leg looks up: the query and the entities its keywords name,
    those that can be a key."""
    return [x for x in plan.names if nameable(x)]


def shared_names(filters: Filters) -> bool:
    """Whether the name leg answers from the search's one look-up: its filters leave
    every object whose key a name is (no type, label, property or embedded-only
    condition); a filtered leg looks its names up with its filters, as before."""
    return not (
        filters.object_types or filters.labels or filters.properties or filters.embedded_only
    )


def looked_up(
    rows: Rows, names: Sequence[str], n: int, trace: Trace | None
) -> list[tuple[str, float]]:
    """:func:`named` without filters, from the search's name look-up (the same ids in
    the same order: each name's objects by type then id, the first ``n``; each id once,
    where it first comes)."""
    found = rows.named(names, trace)
    ids = dict.fromkeys(id for name in names for _, id, _ in found[name][:n])
    return [(id, 1.0) for id in list(ids)[:n]]


def named(
    store: SearchIndex,
    project: str,
    names: Sequence[str],
    n: int,
    filters: Filters,
    trace: Trace | None,
) -> list[tuple[str, float]]:
    """Objects named by any of ``names`` (each row once, at its best score), at most n."""
    if len(names) == 1:
        return store.objects_named(project, names[0], limit=n, filters=filters, trace=trace)
    best: dict[str, float] = {}
    for name in names:
        for id, score in store.objects_named(project, name, limit=n, filters=filters, trace=trace):
            best[id] = max(score, best.get(id, score))
    return sorted(best.items(), key=lambda x: -x[1])[:n]


def nameable(name: str) -> bool:
    """Whether a query can be looked up as a key: short, no NUL, valid Unicode."""
    if not 0 < len(name) <= _MAX_NAME_CHARS or "\x00" in name:
        return False
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
