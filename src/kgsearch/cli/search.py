"""CLI commands of search: ``search`` (with --explain) and ``context`` (RAG)."""

from __future__ import annotations

import json
from typing import Any, Literal

import click
from rich.markup import escape

from kgsearch.cli.common import State, emit, engine_from, handle_errors, out, pass_state, table
from kgsearch.engine import Engine
from kgsearch.errors import InvalidRequest, NotFound
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
@click.option("--ids", is_flag=True, help="With --explain: row ids instead of names.")
@pass_state
@handle_errors
def search(
    state: State, /, query: str, debug: bool, explain: bool, ids: bool, **options: Any
) -> None:
    """Search objects, relationships and text by meaning and keywords, fused by RRF.

    The table shows each hit's id (for `objects get`, `embed preview`…) and its
    relevance relative to the top hit (1.00); --json has the raw fused scores.

    Example: kgsearch search "who directed Jesse James" --type-hint movie
    """
    request = _build(query, **options)
    with engine_from(state) as engine:
        if explain:
            value = engine.explain(request.pop("query"), **request)
            names = {} if ids or state.as_json else _names(engine, value)
            emit(state, value, lambda v: _render_explain(v, names))
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
    if not query.strip():
        raise InvalidRequest('the query is empty: give words to search for, e.g. "Jesse James"')
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
    grid = table("#", "type", "result", "relevance", "id", "found by")
    top = response.results[0].score if response.results else 0.0
    for i, r in enumerate(response.results, 1):
        if r.type == "graph":
            text = f"[bold]{escape(r.name)}[/] ({escape(r.object_type)})"
        elif r.type == "relationship":
            text = escape(r.triplet_text)
        else:
            text = escape(" ".join(r.snippet.split())[:160])
        legs = ", ".join(f"{f.leg}#{f.rank}" for f in r.found_by)
        grid.add_row(str(i), r.type, text, relative(r.score, top), r.id, legs)
    for i, c in enumerate(response.communities, len(response.results) + 1):
        legs = ", ".join(f"{f.leg}#{f.rank}" for f in c.found_by)
        grid.add_row(
            str(i),
            c.type,
            f"[bold]{escape(c.title)}[/] ({c.size} members)",
            relative(c.score, top),
            c.id,
            legs,
        )
    out.print(grid)
    meta = response.metadata
    out.print(
        f"{meta['totalResults']} results in {meta['executionTime']['totalMs']} ms "
        f"(fusion {meta['fusionStrategy']}; relevance relative to the top hit)"
    )
    for warning in meta["warnings"]:
        out.print(f"[yellow]warning:[/] {escape(warning)}")
    if response.debug:
        out.print_json(json.dumps(response.debug["score_distribution"]))


def relative(score: float, top: float) -> str:
    """A score as a share of the top hit's, two decimals (the top hit is 1.00)."""
    return f"{score / top:.2f}" if top > 0 else f"{score:.4f}"


def _names(engine: Engine, value: Explain) -> dict[str, str]:
    """A readable name for each row an explanation shows (leg keys and fused ids)."""
    keys = {h.key for hits in value.legs.values() for h in hits[:10]}
    kinds = {"graph": "object", "relationship": "relationship", "text": "chunk"}
    keys |= {f"{kinds[r.type]}:{r.id}" for r in value.fused}
    names: dict[str, str] = {}
    for key in keys:
        kind, _, id_ = key.partition(":")
        try:
            if kind == "object":
                obj = engine.get_object(id_)
                names[key] = f"{obj.name} ({obj.type})"
            elif kind == "relationship":
                rel = engine.get_relationship(id_)
                names[key] = rel.embedding.embedded_text or rel.embedding.text or rel.type
            elif kind == "chunk":
                names[key] = " ".join(engine.get_chunk(id_).text.split())[:80]
        except NotFound:
            continue
        names[id_] = names[key]
    return names


def _render_explain(value: Explain, names: dict[str, str]) -> None:
    for leg, hits in value.legs.items():
        grid = table("rank", "hit", "score", title=f"leg {leg}")
        for h in hits[:10]:
            grid.add_row(str(h.rank), escape(names.get(h.key, h.key)), f"{h.score:.4f}")
        out.print(grid)
    grid = table(
        "#", "type", "hit" if names else "id", "relevance", "found by", title="fused order"
    )
    top = value.fused[0].score if value.fused else 0.0
    for i, r in enumerate(value.fused, 1):
        grid.add_row(
            str(i),
            r.type,
            escape(names.get(r.id, r.id)),
            relative(r.score, top),
            ", ".join(f"{f.leg}#{f.rank}" for f in r.found_by),
        )
    out.print(grid)
    if names:
        out.print("[dim](names shown; --ids shows row ids)[/]")
    for stage, statements in value.statements.items():
        out.print(f"[bold]{stage}[/]")
        for s in statements:
            sql = " ".join(s.sql.split())  # the store's SQL keeps its line breaks
            params = json.dumps(s.params, ensure_ascii=False, default=str)
            out.print(f"  {escape(sql)}  [dim]{escape(params)}[/]", highlight=False)
        for text in value.notes.get(stage, []):
            out.print(f"  [italic]-- {escape(text)}[/]", highlight=False)
