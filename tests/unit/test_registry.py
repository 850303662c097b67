"""One registry for every seam: declared built-ins, registration, lookups, light names."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from kgsearch import registry
from kgsearch.cli.query import RECIPE_NAMES, RERANKER_NAMES
from kgsearch.embed import EMBEDDERS
from kgsearch.engine import Engine
from kgsearch.engine.providers import EXTRACTORS
from kgsearch.errors import ConfigError, InvalidRequest
from kgsearch.llm import LLMS
from kgsearch.model import Kind, ObjectIn
from kgsearch.registry import Registry
from kgsearch.search.parts import LEGS, Leg, LegInput, default_weights
from kgsearch.search.request import RECIPE_REGISTRY, RECIPES, SearchRequest, validate_request
from kgsearch.search.rerankers import RERANKERS

SEAMS: dict[str, Registry[object]] = {
    "embedder": EMBEDDERS,  # type: ignore[dict-item]
    "llm": LLMS,  # type: ignore[dict-item]
    "extractor": EXTRACTORS,  # type: ignore[dict-item]
    "reranker": RERANKERS,  # type: ignore[dict-item]
    "leg": LEGS,  # type: ignore[dict-item]
    "recipe": RECIPE_REGISTRY,  # type: ignore[dict-item]
}


@pytest.mark.parametrize("seam", list(registry.BUILTINS))
def test_every_declared_builtin_is_registered_and_every_builtin_declared(seam: str) -> None:
    assert SEAMS[seam].names() == registry.names(seam) == tuple(registry.BUILTINS[seam])


def test_the_recipes_registered_are_the_request_recipes() -> None:
    assert sorted(RECIPE_REGISTRY.names()) == sorted(RECIPES)


def test_the_declared_names_import_nothing_heavy() -> None:
    code = (
        "import sys\n"
        "from kgsearch import registry\n"
        "names = [registry.names(s) for s in registry.BUILTINS]\n"
        "heavy = ('pydantic', 'numpy', 'onnxruntime', 'kgsearch.engine', 'kgsearch.search')\n"
        "print(sorted(m for m in heavy if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_an_unknown_request_name_is_an_invalid_request() -> None:
    with pytest.raises(InvalidRequest, match="unknown reranker 'nope'; known: none, mmr"):
        RERANKERS.get("nope")


def test_an_unknown_provider_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="unknown LLM provider 'nope'"):
        LLMS.get("nope")


def test_a_seam_must_be_declared() -> None:
    with pytest.raises(ValueError, match="undeclared seam"):
        Registry("widgets")


def test_a_plugin_part_is_listed_after_the_builtins(monkeypatch: pytest.MonkeyPatch) -> None:
    RERANKERS.load()
    monkeypatch.setitem(RERANKERS._parts, "plugin", RERANKERS.get("mentions"))
    assert registry.names("reranker")[-1] == "plugin"
    assert RERANKERS.names()[-1] == "plugin"


def test_the_anchored_leg_declares_its_default_weight() -> None:
    assert default_weights() == {"relationships:anchored": 4.0}


def test_the_legs_run_in_declared_stage_order() -> None:
    stages = [(name, leg.stage) for name, leg in LEGS.items()]
    assert stages == [
        ("scope", "retrieve"),
        ("relationships:anchored", "beside"),
        ("graph", "expand"),
        ("graph:modes", "expand"),
        ("graph:passages", "expand"),
        ("graph:mentioned", "expand"),
        ("graph:evidence", "expand"),
    ]


def _echo(given: LegInput) -> None:
    """A leg that ranks the first round's objects again, in reverse."""
    objects = [k for k, _ in given.first_round if k.startswith("object:")]
    given.legs.add("test:echo", [(k, 1.0) for k in reversed(objects)], 0.0)


def test_a_registered_leg_runs_when_selected_and_is_fused(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    leg = Leg(
        "test:echo",
        "expand",
        (Kind.OBJECT,),
        selected=lambda plan: plan.request.graph == "bfs",
        run=_echo,
        weights={"test:echo": 0.5},
    )
    LEGS.load()
    monkeypatch.setitem(LEGS._parts, "test:echo", leg)
    (ada,) = engine.add_objects([ObjectIn(type="Person", key="ada")])
    engine.embed_pending()

    plain = engine.search("ada", result_types="graph")
    expanded = engine.search("ada", result_types="graph", graph="bfs")

    assert "test:echo" not in {h.leg for r in plain.results for h in r.found_by}
    assert [r.id for r in expanded.results] == [ada.id]
    assert "test:echo" in {h.leg for h in expanded.results[0].found_by}
    assert default_weights()["test:echo"] == 0.5


@pytest.mark.parametrize("declared", [True, False])
def test_a_leg_scales_its_own_weight_per_query_only_when_it_declares_it(
    engine: Engine, monkeypatch: pytest.MonkeyPatch, declared: bool
) -> None:
    ada, bob = engine.add_objects([ObjectIn(type="Person", key=k) for k in ("ada", "bob")])
    engine.embed_pending()

    def sure(given: LegInput) -> None:  # bob, which no other leg finds for "ada"
        given.legs.add("test:sure", [(f"object:{bob.id}", 1.0)], 0.0, multiplier=100.0)

    leg = Leg(
        "test:sure",
        "expand",
        (Kind.OBJECT,),
        selected=lambda plan: True,
        run=sure,
        scales=frozenset({"test:sure"} if declared else ()),
    )
    LEGS.load()
    monkeypatch.setitem(LEGS._parts, "test:sure", leg)
    results = engine.search("ada", result_types="graph").results
    assert [r.id for r in results][:2] == ([bob.id, ada.id] if declared else [ada.id, bob.id])


def test_the_cli_and_the_request_schema_list_the_registered_rerankers() -> None:
    schema = SearchRequest.model_json_schema()["properties"]["reranker"]
    assert RERANKERS.names() == RERANKER_NAMES
    assert RECIPE_REGISTRY.names() == RECIPE_NAMES
    assert schema == {
        "type": "string",
        "enum": list(RERANKERS.names()),
        "default": "none",
        "title": "Reranker",
    }


def test_a_request_naming_an_unknown_reranker_is_invalid() -> None:
    with pytest.raises(InvalidRequest, match="Input should be 'none', 'mmr'"):
        validate_request({"query": "q", "reranker": "nope"})


@pytest.mark.parametrize("seam", ["reranker", "recipe"])
def test_docs_search_names_every_registered_part(seam: str) -> None:
    text = (Path(__file__).resolve().parents[2] / "docs" / "search.md").read_text("utf-8")
    assert [n for n in registry.names(seam) if f"`{n}`" not in text] == []


OWNERS = {
    "embedder": "kgsearch.embed",
    "llm": "kgsearch.llm",
    "extractor": "kgsearch.engine",
    "reranker": "kgsearch.search",
    "leg": "kgsearch.search",
    "recipe": "kgsearch.search",
}


@pytest.mark.parametrize("seam", list(registry.BUILTINS))
def test_a_seam_loads_parts_from_its_own_package_only(seam: str) -> None:
    # the first lookup imports the declared modules, which import-linter cannot see:
    # kept inside the owner's package, that import never points up a floor
    modules = {b.module for b in registry.BUILTINS[seam].values()}
    owner = OWNERS[seam]
    assert {m for m in modules if m != owner and not m.startswith(owner + ".")} == set()
