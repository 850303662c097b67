"""SQLite stores for CLI tests: one made as a user makes one (``kgsearch import`` of
JSONL rows, then ``kgsearch embed generate`` with the default (bundled) model, each in
a subprocess), and an empty one at an older schema."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any


def cli_built_store(root: Path, rows: Sequence[Mapping[str, Any]], name: str) -> Path:
    """The store ``root / name`` holding ``rows``, embedded; fails the test on an error."""
    data = root / f"{Path(name).stem}.jsonl"
    data.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    db = root / name
    for args in (["import", str(data)], ["embed", "generate"]):
        done = subprocess.run(
            [sys.executable, "-m", "kgsearch", "--db", str(db), *args],
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        assert done.returncode == 0, done.stderr
    return db


def older_store(db: Path, drop: int) -> None:
    """An empty store at ``db`` whose schema stops ``drop`` migrations before the
    current one."""
    from kgsearch.store.sqlite.connection import Connection
    from kgsearch.store.sqlite.schema import MIGRATIONS

    connection = Connection(str(db))

    def run(sql: str) -> None:
        connection.execute(sql)

    connection.execute("CREATE TABLE migrations (name TEXT PRIMARY KEY, applied_at TEXT)")
    for migration in MIGRATIONS[: len(MIGRATIONS) - drop]:
        with connection.transaction():
            migration.apply(run)
            connection.execute("INSERT INTO migrations VALUES (?, '')", (migration.name,))
    connection.close()
