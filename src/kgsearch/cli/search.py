"""CLI commands of search: ``search`` (with --explain) and ``context`` (RAG)."""

from __future__ import annotations

import json
from typing import Any, Literal

import click
from rich.markup import escape
from rich.table import Table

from kgsearch.cli.common import State, emit, engine_from, handle_errors, out, pass_state
from kgsearch.search.request import RECIPES, Explain, SearchResponse

__all__ = ["context", "search"]


def _options(func: Any) -> Any:
    for option in reversed(
        [
            click.option(
                "--limit",
                "-n",
                default=10,
                show_default=True,
                type=click.IntRange(1, 100),
                help="Results to return.",
            ),
            click.option(
                "--result-types",
                type=click.Choice(["both", "graph", "text"]),
                default="both",
                show_default=True,
                help="graph = objects + relationships; text = chunks.",
            ),
            click.option("--type-hint", help="Boost objects of this type ([Type: #hint] query)."),
            click.option(
                "--recipe", type=click.Choice(sorted(RECIPES)), help="A named search configuration."
            ),
            click.option(
                "--type",
                "object_types",
                multiple=True,
                help="Only objects of this type (filter inside every leg).",
            ),
            click.option(
                "--rel-type",
                "relationship_types",
                multiple=True,
                help="Only relationships of this type.",
            ),
            click.option(
                "--graph",
                type=click.Choice(["none", "bfs", "ppr"]),
                default=None,
                help="Add a graph leg: BFS expansion or personalized PageRank.",
            ),
            click.option(
                "--reranker",
                type=click.Choice(["none", "mmr", "node_distance", "mentions", "cross_encoder"]),
                default=None,
                help="Rerank the fused list.",
            ),
            click.option("--center", help="Centre object id for --reranker node_distance."),
        ]
    ):
        func = option(func)
    return func


@click.command()
@click.argument("query")
@_options
@click.option("--debug", is_flag=True, help="Include score distributions and leg counts.")
@click.option(
    "--explain",
    "explain",
    is_flag=True,
    help="Show each leg's ranked hits and scores, the fused order and the SQL each stage ran.",
)
@pass_state
@handle_errors
def search(state: State, /, query: str, debug: bool, explain: bool, **options: Any) -> None:
    """Search objects, relationships and text by meaning and keywords, fused by RRF.

    Example: kgsearch search "who directed Jesse James" --type-hint movie
    """
    request = _build(query, **options)
    with engine_from(state) as engine:
        if explain:
            emit(state, engine.explain(request.pop("query"), **request), _render_explain)
            return
        response = engine.search(request.pop("query"), include_debug=debug, **request)
    emit(state, response, _render_results)


@click.command()
@click.argument("query")
@_options
@click.option(
    "--max-tokens",
    default=1000,
    show_default=True,
    type=click.IntRange(1, 100_000),
    help="Token budget of the context.",
)
@click.option(
    "--sections",
    is_flag=True,
    help="Entities, Relationships and Sources sections with citations ([E1], [R1], [S1]).",
)
@pass_state
@handle_errors
def context(state: State, /, query: str, max_tokens: int, sections: bool, **options: Any) -> None:
    """Print RAG prompt context for a question: objects, triplets and snippets.

    With a query mode (--recipe local, global, hybrid, mix or naive) and --sections it
    is LightRAG-style context: the entities, relationships and source passages the mode
    found, each cited, within the budget.

    Example: kgsearch context "films by Henry King" --recipe hybrid --sections
    """
    request = _build(query, **options)
    style: Literal["lines", "sections"] = "sections" if sections else "lines"
    with engine_from(state) as engine:
        value = engine.context(request.pop("query"), max_tokens=max_tokens, style=style, **request)
    emit(state, value, lambda v: out.print(v.context, markup=False))


def _build(
    query: str,
    *,
    limit: int,
    result_types: str,
    type_hint: str | None,
    recipe: str | None,
    object_types: tuple[str, ...],
    relationship_types: tuple[str, ...],
    graph: str | None,
    reranker: str | None,
    center: str | None,
) -> dict[str, Any]:
    request: dict[str, Any] = {"query": query, "limit": limit, "result_types": result_types}
    optional = {
        "type_hint": type_hint,
        "recipe": recipe,
        "graph": graph,
        "reranker": reranker,
        "center_id": center,
    }
    request.update({k: v for k, v in optional.items() if v})
    filters: dict[str, Any] = {}
    if object_types:
        filters["object_types"] = list(object_types)
    if relationship_types:
        filters["relationship_types"] = list(relationship_types)
    if filters:
        request["filters"] = filters
    return request


def _render_results(response: SearchResponse) -> None:
    table = Table("#", "type", "result", "score", "found by", title=None)
    for i, r in enumerate(response.results, 1):
        if r.type == "graph":
            text = f"[bold]{r.name}[/] ({r.object_type})"
        elif r.type == "relationship":
            text = r.triplet_text
        else:
            text = r.snippet[:120]
        legs = ", ".join(f"{f.leg}#{f.rank}" for f in r.found_by)
        table.add_row(str(i), r.type, text, f"{r.score:.4f}", legs)
    for i, c in enumerate(response.communities, len(response.results) + 1):
        legs = ", ".join(f"{f.leg}#{f.rank}" for f in c.found_by)
        table.add_row(
            str(i), c.type, f"[bold]{c.title}[/] ({c.size} members)", f"{c.score:.4f}", legs
        )
    out.print(table)
    meta = response.metadata
    out.print(
        f"{meta['totalResults']} results in {meta['executionTime']['totalMs']} ms "
        f"(fusion {meta['fusionStrategy']})"
    )
    for warning in meta["warnings"]:
        out.print(f"[yellow]warning:[/] {warning}")
    if response.debug:
        out.print_json(json.dumps(response.debug["score_distribution"]))


def _render_explain(value: Explain) -> None:
    for leg, hits in value.legs.items():
        table = Table("rank", "hit", "score", title=f"leg {leg}")
        for h in hits[:10]:
            table.add_row(str(h.rank), h.key, f"{h.score:.4f}")
        out.print(table)
    table = Table("#", "type", "id", "fused score", "found by", title="fused order")
    for i, r in enumerate(value.fused, 1):
        table.add_row(
            str(i),
            r.type,
            r.id,
            f"{r.score:.5f}",
            ", ".join(f"{f.leg}#{f.rank}" for f in r.found_by),
        )
    out.print(table)
    for stage, statements in value.statements.items():
        out.print(f"[bold]{stage}[/]")
        for s in statements:
            sql = " ".join(s.sql.split())  # the store's SQL keeps its line breaks
            params = json.dumps(s.params, ensure_ascii=False, default=str)
            out.print(f"  {escape(sql)}  [dim]{escape(params)}[/]", highlight=False)
        for text in value.notes.get(stage, []):
            out.print(f"  [italic]-- {escape(text)}[/]", highlight=False)
