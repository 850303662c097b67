"""SQLite stores for CLI tests: one made as a user makes one (``kgsearch import`` of
JSONL rows, then ``kgsearch embed generate`` with the default (bundled) model, each in
a subprocess), and an empty one at an older schema; and the CLI run in a subprocess
noting the heavy modules it imported, with or without its read-only path."""

from __future__ import annotations

import json
import os
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


# The CLI in a subprocess, then the heavy modules it imported. Light commands on a
# current SQLite store are answered read-only without the engine (kgsearch.cli.readonly);
# "engine" switches that path off, so the engine answers, to compare the two.
_RUN_THEN_MODULES = """
import json, sys
from kgsearch.cli.root import main
if sys.argv[1] == "engine":
    import kgsearch.cli.readonly
    kgsearch.cli.readonly._answer = lambda *args: None
sys.argv = ["kgsearch", *sys.argv[2:]]
code = 0
try:
    main()
except SystemExit as exc:
    code = exc.code or 0
heavy = ("pydantic", "numpy", "onnxruntime", "kgsearch.engine", "kgsearch.config", "rich")
print(json.dumps([code, sorted(m for m in heavy if m in sys.modules)]))
"""


def run_cli(
    path: str, *args: str, cwd: Path | None = None, env: dict[str, str] | None = None
) -> tuple[int, str, list[str], str]:
    """Run the CLI (``path``: "light", or "engine" with the read-only path off) without
    the caller's KGSEARCH_* settings; its exit code, output, the heavy modules it
    imported and its error output."""
    clean = {
        k: v
        for k, v in os.environ.items()
        if not k.upper().startswith("KGSEARCH_") and k != "PYTHONDONTWRITEBYTECODE"
    }
    done = subprocess.run(
        [sys.executable, "-c", _RUN_THEN_MODULES, path, *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=cwd,
        env={**clean, **(env or {})},
    )
    *output, last = done.stdout.splitlines() or [""]
    code, heavy = json.loads(last)
    return code, "\n".join(output), heavy, done.stderr
