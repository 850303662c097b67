"""The README's shell blocks run, in order, as a newcomer would type them.

Convention: every fenced ```bash block of README.md is run, top to bottom, in one bash
session (so ``export`` and ``source`` carry over) in a temporary directory laid out
like a checkout: ``.venv`` and ``data`` link to this repository's. A block preceded by
the line ``<!-- readme-test: skip (why) -->`` is not run (installing, ``make demo``,
a server, a paid model); the reason in brackets is required. Each block that runs
must exit 0 and print something.

``make demo`` is skipped because it embeds the whole 19k-row MetaQA sample (minutes);
its store ``.demo/kgsearch.db`` is stood in for by the same sample, imported whole, with
only :data:`EMBEDDED_ROWS` rows embedded by the real bundled model (the rest are found
by keyword), which keeps the run to about a minute.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SKIP = re.compile(r"<!-- readme-test: skip \((?P<why>[^)]+)\) -->")
EMBEDDED_ROWS = 400

pytestmark = pytest.mark.slow


def blocks(text: str) -> list[tuple[str, str | None]]:
    """Each ```bash block's body and its skip reason (None: run it)."""
    found: list[tuple[str, str | None]] = []
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.strip() != "```bash":
            continue
        end = lines.index("```", i + 1)
        marker = SKIP.search(lines[i - 1]) if i else None
        found.append(("\n".join(lines[i + 1 : end]), marker["why"] if marker else None))
    return found


def test_every_skip_marker_is_on_a_bash_block_and_says_why() -> None:
    text = (ROOT / "README.md").read_text("utf-8")
    markers = [m for m in re.finditer(r"<!-- readme-test:[^>]*-->", text)]
    skipped = [why for _, why in blocks(text) if why is not None]

    assert len(markers) == len(skipped)
    assert all(why.strip() for why in skipped)


def _checkout(tmp_path: Path) -> dict[str, str]:
    """A temporary checkout: .venv and data linked, .demo/kgsearch.db built small."""
    venv = Path(sys.executable).parent.parent
    (tmp_path / ".venv").symlink_to(venv)
    (tmp_path / "data").symlink_to(ROOT / "data")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KGSEARCH_", "OPENAI_"))}
    env["PATH"] = os.pathsep.join([str(venv / "bin"), env.get("PATH", "")])
    env["HOME"] = str(tmp_path / "home")  # the README's own documents go under ~
    (tmp_path / "home").mkdir()
    db = ".demo/kgsearch.db"
    (tmp_path / ".demo").mkdir()
    for args in (
        ["import", "data/sample/metaqa-movies.jsonl"],
        ["embed", "backfill", "--limit", str(EMBEDDED_ROWS)],
    ):
        subprocess.run(
            [str(venv / "bin" / "kgsearch"), "--db", db, *args],
            cwd=tmp_path,
            env=env,
            check=True,
            capture_output=True,
        )
    return env


def test_the_readme_shell_blocks_run_in_order(tmp_path: Path) -> None:
    runnable = [body for body, why in blocks((ROOT / "README.md").read_text("utf-8")) if not why]
    assert len(runnable) >= 3  # the demo's searches, your documents, ask
    env = _checkout(tmp_path)
    script = ["set -e -o pipefail"]
    for n, body in enumerate(runnable):
        script += [f"echo '@@start {n}'", body, f"echo '@@end {n}'"]

    done = subprocess.run(
        ["bash", "-c", "\n".join(script)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )

    out = done.stdout
    for n, body in enumerate(runnable):
        assert f"@@end {n}" in out, f"block {n} failed:\n{body}\n---\n{out[-3000:]}{done.stderr}"
        printed = out.split(f"@@start {n}\n", 1)[1].split(f"@@end {n}", 1)[0]
        assert printed.strip(), f"block {n} printed nothing:\n{body}"
    assert done.returncode == 0, done.stderr
    assert "Jesse James" in out and "Henry King" in out  # the demo's answer
    assert "Babbage" in out  # the newcomer's own document was ingested and found
    assert "Top facts from the graph" in out
    assert "Traceback" not in out + done.stderr
