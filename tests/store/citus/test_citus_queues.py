"""Claims for every project on Citus: the single-server statement (``UPDATE … FROM
(SELECT … FOR UPDATE SKIP LOCKED)`` across shards) is refused there, so the store claims
project by project; every due row of every project is claimed once, within the limit."""

from __future__ import annotations

import time
from typing import Any

from kgsearch.engine import Engine
from kgsearch.model import Kind, ObjectIn
from kgsearch.store.records import TaskIn
from kgsearch.testing import FakeEmbedder

PROJECTS = ("alpha", "beta", "gamma")


def test_embedding_claims_span_projects_and_never_repeat_a_row(store: Any) -> None:
    engine = Engine(store, embedder=FakeEmbedder(16))
    for p in PROJECTS:
        engine.add_objects([ObjectIn(type="T", key=f"{p}{i}") for i in range(4)], project=p)
    now = time.time()
    batches = [store.claim(Kind.OBJECT, project=None, limit=5, now=now) for _ in range(4)]
    assert [len(b) for b in batches] == [5, 5, 2, 0]
    claimed = [(c.project, c.id) for b in batches for c in b]
    assert len(set(claimed)) == 12
    assert sorted({p for p, _ in claimed}) == list(PROJECTS)


def test_task_claims_span_projects_and_keep_to_their_job(store: Any) -> None:
    for p in PROJECTS:
        store.enqueue_tasks(
            p, "extract", [TaskIn(row_id=f"r{i}", input_hash="h") for i in range(3)]
        )
    store.enqueue_tasks("alpha", "report", [TaskIn(row_id="x", input_hash="h")])
    now = time.time()
    first = store.claim_tasks("extract", project=None, limit=7, now=now)
    rest = store.claim_tasks("extract", project=None, limit=7, now=now)
    assert (len(first), len(rest)) == (7, 2)
    claimed = {(t.project, t.row_id) for t in first + rest}
    assert claimed == {(p, f"r{i}") for p in PROJECTS for i in range(3)}
    assert store.claim_tasks("extract", project=None, limit=7, now=now) == []
