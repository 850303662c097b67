"""SQLite BM25 from the held postings: FTS5's scores and order, fresh after any write."""

from __future__ import annotations

import random
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from kgsearch.engine import Engine
from kgsearch.model import Filters, Kind, ObjectIn, ObjectRef, RelationshipIn
from kgsearch.store.sqlite import SQLiteStore, fts5_read, held_lexical, lexical
from kgsearch.store.sqlite.held_lexical import read_postings, stamp
from kgsearch.store.values import query_terms

_WORDS = [
    "alpha", "beta", "gamma", "delta", "zeta", "films", "film", "filming", "directed",
    "running", "runs", "Zürich", "naïve", "東京", "straße", "ǅemal", "o'brien", "x1",
    "42", "3.12", "kismet", "year", "release", "genre", "drama", "actor", "city",
]  # fmt: skip


class _Notes:
    """A tracer that keeps the notes (which path answered)."""

    def __init__(self) -> None:
        self.notes: list[str] = []

    def __call__(self, sql: str, params: Sequence[Any]) -> None:
        pass

    def note(self, text: str) -> None:
        self.notes.append(text)

    @property
    def held(self) -> bool:
        return any("held postings" in n for n in self.notes)

    @property
    def in_memory(self) -> bool:
        return "best rows checked in memory" in self.notes


def _text(rng: random.Random) -> str:
    words = rng.choices(_WORDS, k=rng.randint(1, 9))
    if rng.random() < 0.2:
        words += [rng.choice(_WORDS)] * rng.randint(2, 4)  # tf above 1
    return " ".join(words)


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> SQLiteStore:
    """Two projects of random texts (many ties), relationships with validity bounds;
    postings read again by the search that finds them stale, at once."""
    monkeypatch.setattr(held_lexical, "_REBUILD_SPACING", 0.0)
    rng = random.Random(7)
    engine = Engine(SQLiteStore(str(tmp_path / "kg.db")))
    for project, count in (("A", 300), ("B", 120)):
        engine.add_objects(
            [
                ObjectIn(type=("Film", "Person")[i % 2], key=f"{project}{i}",
                         properties={"name": _text(rng)})
                for i in range(count)
            ],
            project=project,
        )  # fmt: skip
    past = datetime(2000, 1, 1, tzinfo=UTC)
    refs = [ObjectRef(type=("Film", "Person")[i % 2], key=f"A{i}") for i in range(300)]
    engine.add_relationships(
        [
            RelationshipIn(type=rng.choice(["DIRECTED", "RUNS_IN"]), source=refs[i],
                           target=refs[i + 1], valid_to=past if i % 5 == 0 else None,
                           properties={"note": _text(rng)})
            for i in range(0, 200)
        ],
        project="A",
    )  # fmt: skip
    store = engine.store
    assert isinstance(store, SQLiteStore)
    store.lexical.held.background = False
    return store


def _oracle(
    store: SQLiteStore,
    project: str,
    kind: Kind,
    query: str,
    limit: int,
    filters: Filters | None = None,
) -> list[tuple[str, float]]:
    """FTS5's own ranking of the query (today's path, the held postings left out)."""
    held = store.lexical.held
    saved = held.fresh
    held.fresh = lambda *_: None  # type: ignore[method-assign]
    try:
        return store.text_search(project, kind, query, limit=limit, filters=filters)
    finally:
        held.fresh = saved  # type: ignore[method-assign]


def _plain(store: SQLiteStore, project: str, kind: Kind, terms: list[str], limit: int) -> Any:
    """FTS5's bm25() of an OR of the words, joined and ordered as the store does."""
    fts = f"{kind.table}_fts"
    rows = store.db.all(
        f"SELECT t.id, -bm25({fts}) FROM {fts} JOIN {kind.table} t ON t.rowid = {fts}.rowid "
        f"WHERE {fts} MATCH ? AND t.project = ? AND t.deleted_at IS NULL "
        f"ORDER BY bm25({fts}), t.rowid LIMIT ?",
        (" OR ".join(f'"{t}"' for t in terms), project, limit),
    )
    return [(r[0], r[1]) for r in rows]


def _search(
    store: SQLiteStore,
    project: str,
    kind: Kind,
    query: str,
    limit: int,
    filters: Filters | None = None,
) -> tuple[list[tuple[str, float]], bool]:
    notes = _Notes()
    hits = store.text_search(project, kind, query, limit=limit, filters=filters, trace=notes)
    return hits, notes.held


def test_random_queries_score_and_order_as_fts5(store: SQLiteStore) -> None:
    rng = random.Random(11)
    checked = 0
    for _ in range(150):
        words = rng.sample(_WORDS, rng.randint(1, 6))
        query = " ".join(words)
        project = rng.choice(["A", "B"])
        limit = rng.choice([1, 3, 10, 50, 1000])
        hits, held = _search(store, project, Kind.OBJECT, query, limit)
        assert held
        # bit for bit FTS5's bm25() of the OR, ties by rowid
        assert hits == _plain(store, project, Kind.OBJECT, query_terms(query), limit)
        checked += bool(hits)
    assert checked > 100


def test_one_word_queries_equal_the_fts5_path(store: SQLiteStore) -> None:
    for word in _WORDS:
        for limit in (1, 7, 200):
            hits, held = _search(store, "A", Kind.OBJECT, word, limit)
            assert held or len(query_terms(word)) > 1 or "." in word
            assert hits == _oracle(store, "A", Kind.OBJECT, word, limit)


@pytest.mark.parametrize(
    "query",
    [
        '"alpha" AND beta',
        "NEAR(alpha beta) text:gamma",
        "alpha* OR -beta ^zeta",
        "'; DROP TABLE objects; --",
        "ZÜRICH naive 東京",
        "nothingmatchesthis",
        "x" * 10_000,
        " ".join(["alpha"] * 2000 + ["beta"] * 2000),
        "film films filming",  # one stem three times: three phrases to FTS5
    ],
)
def test_hostile_queries_score_as_fts5(store: SQLiteStore, query: str) -> None:
    hits, held = _search(store, "A", Kind.OBJECT, query, 20)
    assert held
    assert hits == _plain(store, "A", Kind.OBJECT, query_terms(query), 20)


def test_a_query_without_matches_is_empty_from_the_held_postings(store: SQLiteStore) -> None:
    assert _search(store, "A", Kind.OBJECT, "qwertyuiop asdfgh", 10) == ([], True)


def test_ties_beyond_the_first_checked_rows_keep_rowid_order(store: SQLiteStore) -> None:
    """Project B's rows sit among A's with the same scores: the check of the best rows
    goes round several times, the order stays FTS5's."""
    engine = Engine(store)
    engine.add_objects(
        [ObjectIn(type="T", key=f"t{i}", properties={"name": "tiedword"}) for i in range(60)],
        project="A",
    )
    engine.add_objects(
        [ObjectIn(type="T", key=f"u{i}", properties={"name": "tiedword"}) for i in range(7)],
        project="B",
    )
    for limit in (1, 5, 7, 30):
        hits, held = _search(store, "B", Kind.OBJECT, "tiedword", limit)
        assert held and hits == _oracle(store, "B", Kind.OBJECT, "tiedword", limit)
        assert len(hits) == min(limit, 7)


def test_filters_and_validity_apply_as_on_the_fts5_path(store: SQLiteStore) -> None:
    cases: list[tuple[Kind, Filters | None]] = [
        (Kind.OBJECT, Filters(object_types=["Film"])),
        (Kind.OBJECT, Filters(object_types=["Nothing"])),
        (Kind.RELATIONSHIP, None),  # valid now: the expired fifth is left out
        (Kind.RELATIONSHIP, Filters(as_of=datetime(1990, 1, 1, tzinfo=UTC))),
        (Kind.RELATIONSHIP, Filters(relationship_types=["DIRECTED"])),
    ]
    for kind, filters in cases:
        for query in ("alpha zeta", "directed", "runs film city"):
            hits, held = _search(store, "A", kind, query, 25, filters)
            assert held
            assert hits == _oracle(store, "A", kind, query, 25, filters)


def test_a_write_of_this_process_is_seen_at_once(store: SQLiteStore) -> None:
    assert _search(store, "A", Kind.OBJECT, "alpha", 5)[1]
    Engine(store).add_objects(
        [ObjectIn(type="New", key="n", properties={"name": "alpha novelword"})], project="A"
    )
    hits, held = _search(store, "A", Kind.OBJECT, "alpha novelword", 5)
    assert held  # read again (not in the background here)
    (best,) = store.get_objects("A", [hits[0][0]])
    assert best.key == "n"
    assert hits == _plain(store, "A", Kind.OBJECT, ["alpha", "novelword"], 5)


def test_a_delete_leaves_the_results_at_once(store: SQLiteStore) -> None:
    first = _search(store, "A", Kind.OBJECT, "gamma delta", 3)[0][0][0]
    Engine(store).delete("object", [first], project="A")
    hits, held = _search(store, "A", Kind.OBJECT, "gamma delta", 3)
    assert held and first not in [i for i, _ in hits]
    assert hits == _plain(store, "A", Kind.OBJECT, ["gamma", "delta"], 3)


def test_a_write_through_another_connection_is_seen(store: SQLiteStore) -> None:
    assert _search(store, "B", Kind.OBJECT, "kismet", 5)[1]
    other = SQLiteStore(store.path)
    Engine(other).add_objects(
        [ObjectIn(type="New", key="k", properties={"name": "kismet"})], project="B"
    )
    other.close()
    hits, held = _search(store, "B", Kind.OBJECT, "kismet", 50)
    assert held
    assert "k" in {o.key for o in store.get_objects("B", [i for i, _ in hits])}
    assert hits == _plain(store, "B", Kind.OBJECT, ["kismet"], 50)


def test_a_write_of_another_process_is_seen(store: SQLiteStore) -> None:
    assert _search(store, "B", Kind.OBJECT, "straße", 5)[1]
    script = (
        "import sys\n"
        "from kgsearch.engine import Engine\n"
        "from kgsearch.model import ObjectIn\n"
        "from kgsearch.store.sqlite import SQLiteStore\n"
        "s = SQLiteStore(sys.argv[1])\n"
        "Engine(s).add_objects([ObjectIn(type='P', key='p', properties={'name': 'straße'})],"
        " project='B')\n"
        "s.close()\n"
    )
    subprocess.run([sys.executable, "-c", script, store.path], check=True)
    hits, held = _search(store, "B", Kind.OBJECT, "straße", 50)
    assert held
    assert "p" in {o.key for o in store.get_objects("B", [i for i, _ in hits])}
    assert hits == _plain(store, "B", Kind.OBJECT, ["straße"], 50)


def test_stale_postings_never_answer_while_read_again_in_the_background(
    store: SQLiteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert _search(store, "A", Kind.OBJECT, "beta", 5)[1]
    store.lexical.held.background = True
    release = threading.Event()
    read = held_lexical.read_postings

    def slow(*args: Any) -> held_lexical.Postings:
        release.wait(10)
        return read(*args)

    monkeypatch.setattr(held_lexical, "read_postings", slow)
    Engine(store).add_objects(
        [ObjectIn(type="New", key="b", properties={"name": "beta beta beta beta"})], project="A"
    )
    hits, held = _search(store, "A", Kind.OBJECT, "beta", 5)
    assert not held  # FTS5 answers while the postings are read again
    (best,) = store.get_objects("A", [hits[0][0]])
    assert best.key == "b"
    release.set()
    deadline = time.monotonic() + 10
    while not _search(store, "A", Kind.OBJECT, "beta", 5)[1]:
        assert time.monotonic() < deadline
        time.sleep(0.02)
    assert _search(store, "A", Kind.OBJECT, "beta", 5)[0] == hits


def test_a_search_inside_a_write_transaction_sees_its_own_writes(store: SQLiteStore) -> None:
    assert _search(store, "A", Kind.OBJECT, "delta", 5)[1]
    with store.transaction():
        Engine(store).add_objects(
            [ObjectIn(type="New", key="d", properties={"name": "delta delta delta"})],
            project="A",
        )
        hits, held = _search(store, "A", Kind.OBJECT, "delta", 5)
        assert not held
        (best,) = store.get_objects("A", [hits[0][0]])
        assert best.key == "d"


def test_prefixes_and_split_words_are_left_to_fts5(store: SQLiteStore) -> None:
    notes = _Notes()
    store.text_search("A", Kind.OBJECT, "alpha bet", limit=5, prefix=True, trace=notes)
    assert not notes.held
    hits, held = _search(store, "A", Kind.OBJECT, "alpha running_x", 5)
    assert not held  # "running_x" is two index tokens: a phrase to FTS5
    assert hits == _oracle(store, "A", Kind.OBJECT, "alpha running_x", 5)


def test_only_frequent_words_need_all_of_them_as_on_the_fts5_path(
    store: SQLiteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(lexical, "_FREQUENT_FLOOR", 5)
    monkeypatch.setattr(lexical, "_FREQUENT_SHARE", 0.01)
    for query in ("alpha beta", "film zeta gamma"):
        hits, held = _search(store, "A", Kind.OBJECT, query, 40)
        assert held
        assert hits == _oracle(store, "A", Kind.OBJECT, query, 40)
    # a frequent word beside one no row holds: the rows holding the frequent word (the
    # FTS5 path matched the missing word alone and found nothing)
    hits, held = _search(store, "A", Kind.OBJECT, "alpha qqqq", 40)
    assert held and len(hits) == 40
    assert hits == _plain(store, "A", Kind.OBJECT, ["alpha", "qqqq"], 40)
    assert _search(store, "A", Kind.OBJECT, "alpha beta", 1000)[0] == _plain_and(
        store, ["alpha", "beta"]
    )


def _plain_and(store: SQLiteStore, terms: list[str]) -> Any:
    rows = store.db.all(
        "SELECT t.id, -bm25(objects_fts) FROM objects_fts JOIN objects t "
        "ON t.rowid = objects_fts.rowid WHERE objects_fts MATCH ? AND t.project = 'A' "
        "AND t.deleted_at IS NULL ORDER BY bm25(objects_fts), t.rowid",
        (" AND ".join(f'"{t}"' for t in terms),),
    )
    return [(r[0], r[1]) for r in rows]


def test_postings_hold_fts5s_frequencies_and_lengths(store: SQLiteStore) -> None:
    db = store.db.reader()
    postings = read_postings(db, Kind.OBJECT)
    db.execute("CREATE VIRTUAL TABLE temp.v USING fts5vocab(main, objects_fts, row)")
    vocab = {r[0]: r[1] for r in db.all("SELECT term, doc FROM temp.v")}
    assert {t: postings.df(t) for t in postings.terms} == vocab
    assert postings.stamp == stamp(db, Kind.OBJECT)
    assert postings.n_rows == len(postings.rowids) == 420
    assert postings.nbytes > 0


def test_waiting_for_the_indexes_reads_the_postings(store: SQLiteStore) -> None:
    store.lexical.held.background = True
    store.wait_for_index("A", Kind.OBJECT)
    assert _search(store, "A", Kind.OBJECT, "gamma", 5)[1]  # no background read awaited


def test_a_validity_change_alone_is_seen_at_once(store: SQLiteStore) -> None:
    """valid_to set on a relationship leaves its text (and the index) as it was: the
    rows are checked on the table until the postings are read again."""
    engine = Engine(store)
    notes = _Notes()
    hits = store.text_search("A", Kind.RELATIONSHIP, "runs", limit=10, trace=notes)
    assert notes.in_memory and hits
    (first,) = store.get_relationships("A", [hits[0][0]])
    engine.add_relationships(
        [RelationshipIn(type=first.type, source=first.source_id, target=first.target_id,
                        valid_to=datetime(2001, 1, 1, tzinfo=UTC),
                        properties=first.properties)],
        project="A",
    )  # fmt: skip
    assert store.get_relationships("A", [first.id])[0].valid_to is not None
    after, held = _search(store, "A", Kind.RELATIONSHIP, "runs", 10)
    assert held and first.id not in [i for i, _ in after]
    assert after == _oracle(store, "A", Kind.RELATIONSHIP, "runs", 10)


def test_a_row_deleted_in_a_write_run_is_not_returned(store: SQLiteStore) -> None:
    """Inside a write run the index keeps a deleted object's entry (fts_stale): the
    table decides."""
    first = _search(store, "A", Kind.OBJECT, "kismet", 3)[0][0][0]
    with store.write_run():
        Engine(store).delete("object", [first], project="A")
        notes = _Notes()
        hits = store.text_search("A", Kind.OBJECT, "kismet", limit=3, trace=notes)
        assert notes.held and not notes.in_memory
        assert first not in [i for i, _ in hits]
        assert hits == _oracle(store, "A", Kind.OBJECT, "kismet", 3)
    assert first not in [i for i, _ in _search(store, "A", Kind.OBJECT, "kismet", 3)[0]]


def test_unfiltered_rows_are_checked_in_memory_filtered_ones_on_the_table(
    store: SQLiteStore,
) -> None:
    for filters, in_memory in ((None, True), (Filters(object_types=["Film"]), False)):
        notes = _Notes()
        store.text_search("A", Kind.OBJECT, "alpha", limit=5, filters=filters, trace=notes)
        assert notes.held and notes.in_memory is in_memory
    assert _search(store, "nobody", Kind.OBJECT, "alpha", 5) == ([], True)


def test_the_best_rows_are_a_prefix_of_the_whole_order(store: SQLiteStore) -> None:
    """Every cut (ties at it included) is the start of all matching rows sorted by
    score, then position: what lets the table check them round after round."""
    db = store.db.reader()
    rng = random.Random(5)
    for _ in range(60):
        terms = query_terms(" ".join(rng.sample(_WORDS, rng.randint(1, 4))))
        matches = store.lexical.held_scores(db, Kind.OBJECT, terms, store.db.reader)
        assert matches is not None
        positions, scores = matches.best(10_000)
        whole = sorted(
            zip(positions.tolist(), scores.tolist(), strict=True), key=lambda x: (-x[1], x[0])
        )
        assert list(zip(positions.tolist(), scores.tolist(), strict=True)) == whole
        for stop in (1, 2, 5, 17, 64):
            cut, values = matches.best(stop)
            assert list(zip(cut.tolist(), values.tolist(), strict=True)) == whole[:stop]


def _held_arrays(postings: held_lexical.Postings) -> dict[str, Any]:
    owners = postings.owners
    assert owners is not None
    return {
        "stamp": postings.stamp,
        "terms": postings.terms,
        "n_rows": postings.n_rows,
        "avgdl": postings.avgdl,
        **{f: getattr(postings, f).tolist() for f in ("starts", "rows", "parts", "order")},
        "rowids": postings.rowids.tolist(),
        "owner_rowids": owners.rowids.tolist(),
        "codes": owners.codes.tolist(),
        "ids": owners.ids,
        "offsets": owners.offsets.tolist(),
        "projects": owners.projects,
        "bounds": owners.bounds,
    }


@pytest.mark.parametrize("kind", [Kind.OBJECT, Kind.RELATIONSHIP])
def test_a_read_in_small_chunks_equals_a_read_in_one(
    store: SQLiteStore, kind: Kind, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Chunks end inside a project, at a project's end and inside a token's run; a
    long text's size takes two varint bytes."""
    Engine(store).add_objects(
        [ObjectIn(type="Film", key="long", properties={"name": "alpha " * 150 + "beta"})],
        project="B",
    )
    db = store.db.reader()
    whole = _held_arrays(read_postings(db, kind))
    for size in (1, 7, 119, 120, 121):
        monkeypatch.setattr(fts5_read, "_CHUNK", size)
        assert _held_arrays(read_postings(db, kind)) == whole
    if kind is Kind.OBJECT:  # the long row's size is two varint bytes; scored as FTS5 does
        hits, held = _search(store, "B", kind, "alpha beta", 20)
        assert held and len(hits) == 20
        assert hits == _plain(store, "B", kind, ["alpha", "beta"], 20)


def test_sizes_decode_as_fts5_writes_them() -> None:
    """Each record's first varint, one to four bytes, empty records 0; what is not
    whole varints is refused."""
    import numpy as np

    from kgsearch.errors import StoreError

    def encode(value: int) -> bytes:
        out = [value & 0x7F]
        value >>= 7
        while value:
            out.append(0x80 | (value & 0x7F))
            value >>= 7
        return bytes(reversed(out))

    values = [0, 1, 127, 128, 300, 16_383, 16_384, 2**21 + 5, 2**27 + 1]
    records = [encode(v) for v in values] + [b"", encode(9) + encode(400), encode(129)]
    lengths = np.asarray([len(r) for r in records], dtype=np.int64)
    decoded = fts5_read._first_varints(b"".join(records), lengths)
    assert decoded.tolist() == [*values, 0, 9, 129]
    assert decoded.tolist() == [(held_lexical.varints(r) or [0])[0] for r in records]
    with pytest.raises(StoreError, match="not whole varints"):
        fts5_read._first_varints(b"\x81", np.asarray([1], dtype=np.int64))
    with pytest.raises(StoreError, match="not whole varints"):
        fts5_read._first_varints(b"\x01\x02", np.asarray([1], dtype=np.int64))
    with pytest.raises(StoreError, match="does not begin a varint"):
        fts5_read._first_varints(b"\x81\x01\x05", np.asarray([1, 2], dtype=np.int64))


def test_an_empty_index_answers_at_once_without_stemming_the_query(tmp_path: Path) -> None:
    store = SQLiteStore(str(tmp_path / "kg.db"))
    Engine(store).add_objects([ObjectIn(type="Thing", key="alpha")])
    assert store.lexical.held.warm(store.db.reader(), Kind.CHUNK) is not None
    assert store.text_search("default", Kind.CHUNK, "alpha beta", limit=5) == []
    assert store.lexical._stem_cache == {}
    store.close()
