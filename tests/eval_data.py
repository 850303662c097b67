"""Where the third-party evaluation data (shared/eval-data) is, for the tests that read it.

``KGSEARCH_EVAL_DATA`` if set, else ``shared/eval-data`` beside the checkout (the
project's layout), else this machine's ``/work/shared/eval-data`` (a clone elsewhere,
as CI makes). The data is read-only; keep its attribution (each folder's README).
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["EVAL_DATA"]


def _find() -> Path:
    given = os.environ.get("KGSEARCH_EVAL_DATA")
    candidates = [Path(given)] if given else []
    candidates += [
        Path(__file__).resolve().parents[2] / "shared" / "eval-data",
        Path("/work/shared/eval-data"),
    ]
    for path in candidates:
        if path.is_dir():
            return path
    raise FileNotFoundError(
        "shared/eval-data not found: set KGSEARCH_EVAL_DATA to its folder (tried "
        + ", ".join(str(p) for p in candidates)
        + ")"
    )


EVAL_DATA = _find()
