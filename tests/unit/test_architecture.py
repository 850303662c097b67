"""The shape of the source tree: the layer contract, module sizes, no import cycles.

The layer contract itself (floors only point down, siblings in a floor in a stated
order) is import-linter's, configured in ``pyproject.toml`` under
``[tool.importlinter]`` and run here and by ``make lint``. import-linter cannot see the
other rules: a function-local import is how a cycle gets hidden (llm's workaround), so
the cycle check here counts those too; and a module that grows past 600 lines is how a
god file starts, so each one above it is listed with its reason, for review.
"""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import networkx as nx
import pytest

SRC = Path(__file__).resolve().parents[2] / "src" / "kgsearch"
MAX_LINES = 600

# Modules allowed above MAX_LINES, each with the reason it is one module. The limit is
# a review trigger, not a wall: a module that crosses it is split, or listed here.
LONG_MODULES: dict[str, str] = {}

# Function-local imports of kgsearch modules that are allowed, each for a reason other
# than a cycle: the target needs an optional extra, or is loaded only when used so a
# light command does not pay for it.
LAZY_IMPORTS = {
    # the server extra (FastAPI, uvicorn, mcp) is optional; `kgsearch serve` needs it
    ("cli/serve.py", "kgsearch.api.app"),
    ("cli/serve.py", "kgsearch.api.background"),
    ("cli/serve.py", "kgsearch.mcp.server"),
    # each `serve --workers` process builds its app there (the CLI imports the module)
    ("cli/serve_workers.py", "kgsearch.api.app"),
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


def _sizes() -> dict[str, int]:
    return {
        path.relative_to(SRC).as_posix(): len(path.read_text(encoding="utf-8").splitlines())
        for path in _modules()
    }


def test_no_module_is_over_600_lines_unless_listed_with_a_reason() -> None:
    over = {name: n for name, n in _sizes().items() if n > MAX_LINES}
    assert {name: n for name, n in over.items() if name not in LONG_MODULES} == {}
    assert all(reason.strip() for reason in LONG_MODULES.values())


def test_every_listed_long_module_is_still_long() -> None:
    sizes = _sizes()
    assert {name for name in LONG_MODULES if sizes.get(name, 0) <= MAX_LINES} == set()


def _module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    """Ids of the nodes under ``if TYPE_CHECKING:``: type-only imports make no cycle."""
    return {
        id(inner)
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
        for inner in ast.walk(node)
    }


def import_graph(root: Path) -> nx.DiGraph:
    """Module → kgsearch module it imports, at any depth (function-local ones too)."""
    modules = {_module_name(path, root): path for path in sorted(root.rglob("*.py"))}
    graph = nx.DiGraph()
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        skip = _type_checking_nodes(tree)
        for node in ast.walk(tree):
            if id(node) in skip:
                continue
            if isinstance(node, ast.Import):
                for alias in node.names:
                    target = alias.name
                    while target and target not in modules:
                        target = target.rpartition(".")[0]
                    if target:
                        graph.add_edge(name, target)
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                base = node.module or ""
                if base in modules:
                    for alias in node.names:
                        sub = f"{base}.{alias.name}"
                        graph.add_edge(name, sub if sub in modules else base)
    return graph


def test_no_import_cycles_not_even_through_function_local_imports() -> None:
    assert sorted(sorted(cycle) for cycle in nx.simple_cycles(import_graph(SRC))) == []


def test_the_cycle_check_sees_a_cycle_hidden_in_a_function(tmp_path: Path) -> None:
    package = tmp_path / "kgsearch"
    (package / "cli").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "cli" / "__init__.py").write_text("")
    (package / "cli" / "a.py").write_text("from kgsearch.cli.b import render\n")
    (package / "cli" / "b.py").write_text(
        "def render():\n    from kgsearch.cli import a\n    return a\n"
    )
    cycles = [sorted(c) for c in nx.simple_cycles(import_graph(package))]
    assert cycles == [["kgsearch.cli.a", "kgsearch.cli.b"]]


def _lint_imports(root: Path) -> subprocess.CompletedProcess[str]:
    lint = Path(sys.executable).with_name("lint-imports")
    if not lint.exists():
        pytest.fail(
            f"import-linter is not installed beside {sys.executable}: pip install -e '.[dev]'"
        )
    return subprocess.run(
        [str(lint), "--no-cache", "--no-logo"],
        cwd=root,
        env={"PATH": str(lint.parent), "PYTHONPATH": str(root / "src")},
        capture_output=True,
        text=True,
        check=False,
    )


def test_the_import_layer_contract_is_kept() -> None:
    done = _lint_imports(SRC.parents[1])
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize(
    ("module", "imports"),
    [
        ("writes", "kgsearch.io.readers"),  # the graph writer reading files: an arrow up
        ("resolve", "kgsearch.search"),
        ("search", "kgsearch.lifecycle"),
    ],
)
def test_the_contract_fails_an_import_up_between_siblings(
    tmp_path: Path, module: str, imports: str
) -> None:
    root = tmp_path / "tree"
    shutil.copytree(SRC, root / "src" / "kgsearch", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(SRC.parents[1] / "pyproject.toml", root / "pyproject.toml")
    (root / "src" / "kgsearch" / module / "_probe.py").write_text(f"import {imports}\n")
    done = _lint_imports(root)
    assert done.returncode != 0
    assert f"kgsearch.{module}._probe -> {imports}" in done.stdout, done.stdout
