"""SQLite object names held in memory: the table's answers, fresh after any write."""

from __future__ import annotations

import random
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from kgsearch.engine import Engine
from kgsearch.model import ObjectIn
from kgsearch.store.sqlite import SQLiteStore, held_names

_KEYS = [
    "Benji", "benji", "BENJI", "Top Hat", "top hat", "Zürich", "zürich", "ZÜRICH",
    "Straße", "STRASSE", "ǅemal", "ǆemal", "東京", "o'brien", "O'Brien", "1984", "x",
    "The Man Who Knew Too Much", "a b", "Ä", "ä",
]  # fmt: skip
_TYPES = ["Film", "Person", "Tag", "Place"]


def _table(store: SQLiteStore, project: str, names: Sequence[str]) -> Any:
    """The look-up as the table answers it (an explained look-up asks the table)."""
    before = store.held_names.answered
    found = store.named_objects(project, names, trace=lambda sql, params: None)
    assert store.held_names.answered == before
    return found


def _held(store: SQLiteStore, project: str, names: Sequence[str]) -> Any:
    """The look-up, asserted to be answered by the held names."""
    before = store.held_names.answered
    found = store.named_objects(project, names)
    assert store.held_names.answered == before + 1
    return found


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> SQLiteStore:
    """Two projects of objects whose keys differ in case, ASCII and not; names read
    again by the look-up that finds them stale, at once."""
    monkeypatch.setattr(held_names, "_REBUILD_SPACING", 0.0)
    engine = Engine(SQLiteStore(str(tmp_path / "kg.db")))
    for project in ("A", "B"):
        engine.add_objects(
            [ObjectIn(type=t, key=k) for k in _KEYS for t in _TYPES[: 1 + len(k) % 4]],
            project=project,
        )
    store = engine.store
    assert isinstance(store, SQLiteStore)
    store.held_names.background = False
    return store


def test_held_names_answer_as_the_table_does(store: SQLiteStore) -> None:
    rng = random.Random(3)
    names = [*_KEYS, "benj", "", "a\x00b", "zÜrich", "straße", "TOP HAT", "東京 ", "nobody"]
    for _ in range(60):
        asked = rng.sample(names, rng.randint(1, 6))
        for project in ("A", "B", "C"):
            assert _held(store, project, asked) == _table(store, project, asked), asked
    assert _held(store, "A", ["benji"])["benji"][0][0] == "Film"


def test_the_name_leg_and_filters_agree_with_the_table(store: SQLiteStore) -> None:
    for name in ("BENJI", "zürich", "Ä"):
        held = store.objects_named("A", name, limit=3)
        assert held == store.objects_named("A", name, limit=3, trace=lambda sql, params: None)
    films = store.objects_named("A", "benji", limit=10, filters=None)
    assert len(films) == len(store.named_objects("A", ["benji"])["benji"])


def test_a_write_of_this_process_is_seen_at_once(store: SQLiteStore) -> None:
    assert "Gone" not in _held(store, "A", ["Gone"])
    (made,) = Engine(store).add_objects([ObjectIn(type="Film", key="Gone")], project="A")
    assert _held(store, "A", ["gONE"]) == {"gONE": [("Film", made.id, "Gone")]}
    store.delete("A", "object", [made.id])
    assert _held(store, "A", ["gone"]) == {}
    assert _held(store, "A", ["Benji"]) == _table(store, "A", ["Benji"])


def test_a_write_through_another_connection_is_seen(store: SQLiteStore) -> None:
    assert _held(store, "B", ["New"]) == {}
    other = SQLiteStore(store.path)
    (made,) = Engine(other).add_objects([ObjectIn(type="Tag", key="new")], project="B")
    other.close()
    assert _held(store, "B", ["New"]) == {"New": [("Tag", made.id, "new")]}


def test_a_write_of_another_process_is_seen(store: SQLiteStore) -> None:
    benji = _held(store, "A", ["benji"])["benji"]
    script = (
        "import sys\n"
        "from kgsearch.engine import Engine\n"
        "from kgsearch.model import ObjectIn\n"
        "from kgsearch.store.sqlite import SQLiteStore\n"
        "s = SQLiteStore(sys.argv[1])\n"
        "Engine(s).add_objects([ObjectIn(type='Zoo', key='benJI')], project='A')\n"
        "s.delete('A', 'object', [sys.argv[2]])\n"
        "s.close()\n"
    )
    subprocess.run([sys.executable, "-c", script, store.path, benji[0][1]], check=True)
    found = _held(store, "A", ["benji"])["benji"]
    assert found == _table(store, "A", ["benji"])["benji"]
    assert benji[0] not in found
    assert [t for t, _, _ in found][-1] == "Zoo"


def test_a_look_up_inside_a_write_transaction_sees_its_own_writes(store: SQLiteStore) -> None:
    assert _held(store, "A", ["Inside"]) == {}
    before = store.held_names.answered
    with store.transaction():
        (made,) = Engine(store).add_objects([ObjectIn(type="Film", key="inside")], project="A")
        assert store.named_objects("A", ["Inside"]) == {"Inside": [("Film", made.id, "inside")]}
        assert store.held_names.answered == before  # the table answered
    assert _held(store, "A", ["Inside"]) == {"Inside": [("Film", made.id, "inside")]}


def test_stale_names_never_answer_while_read_again_in_the_background(
    store: SQLiteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert _held(store, "A", ["Later"]) == {}
    store.held_names.background = True
    release = threading.Event()
    read = held_names.read_names

    def slow(*args: Any) -> held_names.Names:
        release.wait(10)
        return read(*args)

    monkeypatch.setattr(held_names, "read_names", slow)
    (made,) = Engine(store).add_objects([ObjectIn(type="Film", key="later")], project="A")
    before = store.held_names.answered
    assert store.named_objects("A", ["Later"]) == {"Later": [("Film", made.id, "later")]}
    assert store.held_names.answered == before  # the table answers while names are read
    release.set()
    deadline = time.monotonic() + 10
    while store.held_names.answered == before:
        assert store.named_objects("A", ["Later"]) == {"Later": [("Film", made.id, "later")]}
        assert time.monotonic() < deadline
        time.sleep(0.02)


def test_memory_is_reported_and_a_search_uses_the_held_names(store: SQLiteStore) -> None:
    names = store.held_names.warm(store.db.reader())
    assert names is not None
    assert names.rows == 2 * sum(1 + len(k) % 4 for k in _KEYS)
    assert 0 < names.nbytes < 2_000 * names.rows
    before = store.held_names.answered
    hits = Engine(store).search("Top Hat", project="A", relationships=None, chunks=None)
    assert store.held_names.answered == before + 1  # one look-up for the whole search
    assert "objects:name" in {f.leg for f in hits.results[0].found_by}


def test_an_in_memory_store_asks_the_table(tmp_path: Path) -> None:
    store = SQLiteStore(":memory:")
    Engine(store).add_objects([ObjectIn(type="Film", key="Benji")])
    assert list(store.named_objects("default", ["benji"])) == ["benji"]
    assert store.held_names.names is None
