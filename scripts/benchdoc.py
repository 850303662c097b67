"""Write one benchmark's results into docs/benchmarks.md, between its own markers.

Each benchmark script owns a section ``<!-- bench:NAME -->`` … ``<!-- /bench:NAME -->``;
re-running a script replaces only its section, so every figure in the file sits next
to the command that produced it and the date it was measured.
"""

from __future__ import annotations

import os
import platform
import re
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

DOC = Path(__file__).resolve().parent.parent / "docs" / "benchmarks.md"
HEADER = """# Benchmarks

Every figure below was produced on this project's machine size (2 cores, 24 GiB, no GPU)
by the command printed with it, with the real bundled embedding model
(all-MiniLM-L6-v2 int8 ONNX) unless a section says otherwise. Re-run a command to
refresh its section. The machine is shared and noisy (±20–30 %): compare ratios
within a section rather than absolutes across sections.
"""


def machine() -> str:
    """A one-line description of where the numbers came from."""
    return (
        f"{platform.python_implementation()} {platform.python_version()}, "
        f"{os.cpu_count()} cores, {platform.machine()}"
    )


def write_section(name: str, title: str, command: str, body: str) -> None:
    """Replace (or append) the section ``name`` in docs/benchmarks.md."""
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    section = (
        f"<!-- bench:{name} -->\n## {title}\n\n"
        f"Command: `{command}`  \nMeasured: {stamp} on {machine()}\n\n"
        f"{body.strip()}\n<!-- /bench:{name} -->"
    )
    DOC.parent.mkdir(parents=True, exist_ok=True)
    text = DOC.read_text(encoding="utf-8") if DOC.exists() else HEADER
    pattern = re.compile(
        rf"<!-- bench:{re.escape(name)} -->.*?<!-- /bench:{re.escape(name)} -->", re.DOTALL
    )
    if pattern.search(text):
        text = pattern.sub(lambda _: section, text)
    else:
        text = text.rstrip() + "\n\n" + section + "\n"
    DOC.write_text(text, encoding="utf-8")
    print(f"wrote section {name!r} to {DOC}", file=sys.stderr)


def table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A Markdown table."""
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)
