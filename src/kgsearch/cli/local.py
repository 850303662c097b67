"""The in-process side of ``search`` and ``context``: the engine, the model, the store.

Imported only when a search runs here (no server answered, ``--explain``, or
``--in-process``) and by ``kgsearch context``.
"""

from __future__ import annotations

import json
from typing import Any, Literal

import click
from rich.markup import escape

from kgsearch.cli.common import State, emit, engine_from, handle_errors, out, pass_state, table
from kgsearch.cli.query import build_request, relative, render_results, search_options
from kgsearch.engine import Engine
from kgsearch.errors import NotFound
from kgsearch.search.request import Explain

__all__ = ["context", "search_in_process"]


def search_in_process(
    state: State, request: dict[str, Any], *, debug: bool, explain: bool, ids: bool
) -> None:
    """Run and print a search (or its explanation) with an engine of this process."""
    with engine_from(state) as engine:
        if explain:
            value = engine.explain(request.pop("query"), **request)
            names = {} if ids or state.as_json else _names(engine, value)
            emit(state, value, lambda v: _render_explain(v, names))
            return
        response = engine.search(request.pop("query"), include_debug=debug, **request)
    emit(state, response.model_dump(mode="json"), render_results)


@click.command()
@click.argument("query")
@search_options
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
    request = build_request(query, **options)
    style: Literal["lines", "sections"] = "sections" if sections else "lines"
    with engine_from(state) as engine:
        value = engine.context(request.pop("query"), max_tokens=max_tokens, style=style, **request)
    emit(state, value, lambda v: out.print(v.context, markup=False))


def _names(engine: Engine, value: Explain) -> dict[str, str]:
    """A readable name for each row an explanation shows (leg keys and fused ids)."""
    keys = {h.key for hits in value.legs.values() for h in hits[:10]}
    keys |= {f"{r.kind}:{r.id}" for r in value.fused}
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
            r.kind,
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
