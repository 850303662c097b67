"""The shape of the source tree: the layer contract, module sizes, no cycle-dodging imports.

The layer contract itself (floors only point down) is import-linter's, configured in
``pyproject.toml`` under ``[tool.importlinter]`` and run here and by ``make lint``.
import-linter cannot see the other two rules: a function-local import is how a cycle
gets hidden (llm's workaround), and a module that grows past 600 lines is how a god
file starts.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src" / "kgsearch"
MAX_LINES = 600

# Function-local imports of kgsearch modules that are allowed, each for a reason other
# than a cycle: the target needs an optional extra, or is loaded only when used so a
# light command does not pay for it.
LAZY_IMPORTS = {
    # the server extra (FastAPI, uvicorn, mcp) is optional; `kgsearch serve` needs it
    ("cli/serve.py", "kgsearch.api.app"),
    ("cli/serve.py", "kgsearch.api.background"),
    ("cli/serve.py", "kgsearch.mcp.server"),
    # `kgsearch search` answered by a running server never loads the engine and model
    ("cli/search.py", "kgsearch.cli.local"),
    ("cli/stats.py", "kgsearch.cli.graph"),
    # `kgsearch objects/relationships get|list` on a current SQLite store read it read-only
    ("cli/rows.py", "kgsearch.cli.graph"),
    # `kgsearch embed status` on a current SQLite store is counted without the engine
    ("cli/embed.py", "kgsearch.cli.embedding"),
    # the backend named by the URL is the only one imported (psycopg is an extra)
    ("store/__init__.py", "kgsearch.store.sqlite"),
    ("store/__init__.py", "kgsearch.store.postgres"),
}


def _modules() -> list[Path]:
    return sorted(SRC.rglob("*.py"))


def _function_local_imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        for inner in ast.walk(node):
            if isinstance(inner, ast.ImportFrom) and inner.level == 0:
                names = [inner.module or ""]
            elif isinstance(inner, ast.Import):
                names = [alias.name for alias in inner.names]
            else:
                continue
            found.update(n for n in names if n == "kgsearch" or n.startswith("kgsearch."))
    return found


def test_no_function_local_imports_of_kgsearch_modules() -> None:
    found = {
        (path.relative_to(SRC).as_posix(), module)
        for path in _modules()
        for module in _function_local_imports(path)
    }
    assert found - LAZY_IMPORTS == set()


def test_the_allowed_lazy_imports_are_all_still_needed() -> None:
    found = {
        (path.relative_to(SRC).as_posix(), module)
        for path in _modules()
        for module in _function_local_imports(path)
    }
    assert LAZY_IMPORTS - found == set()


def test_no_module_is_over_600_lines() -> None:
    sizes = {
        path.relative_to(SRC).as_posix(): len(path.read_text(encoding="utf-8").splitlines())
        for path in _modules()
    }
    assert {name: n for name, n in sizes.items() if n > MAX_LINES} == {}


def test_the_import_layer_contract_is_kept() -> None:
    lint = Path(sys.executable).with_name("lint-imports")
    if not lint.exists():
        pytest.fail(
            f"import-linter is not installed beside {sys.executable}: pip install -e '.[dev]'"
        )
    done = subprocess.run(
        [str(lint), "--no-cache", "--no-logo"],
        cwd=SRC.parents[1],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
