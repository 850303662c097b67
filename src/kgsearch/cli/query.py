"""What ``search``, ``context`` and ``ask`` share: their options, the request they
build, and the results table (drawn from the response as JSON, so a search answered
by a server and one run in process print the same).

Light on purpose: click, rich, :mod:`kgsearch.errors` and the declared part names of
:mod:`kgsearch.registry` only.
"""

from __future__ import annotations

import json
import re
from typing import Any

import click
from rich.markup import escape

from kgsearch import registry
from kgsearch.cli.output import out, table
from kgsearch.errors import InvalidRequest

__all__ = [
    "RECIPE_NAMES",
    "RERANKER_NAMES",
    "build_request",
    "relative",
    "render_results",
    "search_options",
]

RECIPE_NAMES = registry.names("recipe")
"""The search recipes' names (declared in :data:`kgsearch.registry.BUILTINS`)."""

RERANKER_NAMES = registry.names("reranker")
"""The rerankers' names (declared in :data:`kgsearch.registry.BUILTINS`)."""


def search_options(func: Any) -> Any:
    """The search options (limit, result types, filters, recipe, graph leg, reranker)."""
    for option in reversed(
        [
            click.option(
                "--limit",
                "-n",
                default=None,
                type=click.IntRange(1, 100),
                help="Results to return [default: 10; `context` and `ask` on a graph "
                "built from documents read 20].",
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
                "--recipe", type=click.Choice(RECIPE_NAMES), help="A named search configuration."
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
                "--as-of",
                "as_of",
                metavar="DATE",
                help="Only relationships valid at this date (2019, 2019-06, 2019-06-30 or "
                "an ISO date-time; a year or month means its first day): who held an "
                "office then. Default: valid now.",
            ),
            click.option(
                "--graph",
                type=click.Choice(["none", "bfs", "ppr"]),
                default=None,
                help="Add a graph leg: BFS expansion or personalized PageRank.",
            ),
            click.option(
                "--reranker",
                type=click.Choice(RERANKER_NAMES),
                default=None,
                help="Rerank the fused list.",
            ),
            click.option("--center", help="Centre object id for --reranker node_distance."),
            click.option(
                "--keywords",
                type=click.Choice(["off", "llm"]),
                default=None,
                help="llm: the configured chat model picks the query's keywords first "
                "(entities for object legs, themes for relationship legs; cached); "
                "on trouble the query as it is. Default off.",
            ),
        ]
    ):
        func = option(func)
    return func


_YEAR_OR_MONTH = re.compile(r"^(\d{4})(?:-(\d{2}))?$")
_ISO_DAY = re.compile(r"^\d{4}-\d{2}-\d{2}([T ].*)?$")


def as_of_date(text: str) -> str:
    """``--as-of`` as an ISO date: a bare year or year-month is its first day (a bare
    number would otherwise be read as seconds since 1970); an ISO date or date-time as
    given, for the request to check further.

    Raises:
        InvalidRequest: Not a date in one of those forms.
    """
    text = text.strip()
    found = _YEAR_OR_MONTH.match(text)
    if found:
        return f"{found.group(1)}-{found.group(2) or '01'}-01"
    if not _ISO_DAY.match(text):
        raise InvalidRequest(
            f"--as-of {text!r} is not a date: give 2019, 2019-06, 2019-06-30 or an ISO "
            "date-time such as 2019-06-30T12:00:00Z"
        )
    return text


def build_request(
    query: str,
    *,
    limit: int | None,
    result_types: str,
    type_hint: str | None,
    recipe: str | None,
    object_types: tuple[str, ...],
    relationship_types: tuple[str, ...],
    graph: str | None,
    reranker: str | None,
    center: str | None,
    keywords: str | None = None,
    as_of: str | None = None,
) -> dict[str, Any]:
    if not query.strip():
        raise InvalidRequest('the query is empty: give words to search for, e.g. "Jesse James"')
    request: dict[str, Any] = {"query": query, "result_types": result_types}
    if limit is not None:  # else the request's default (context and ask choose their own)
        request["limit"] = limit
    optional = {
        "type_hint": type_hint,
        "recipe": recipe,
        "graph": graph,
        "reranker": reranker,
        "center_id": center,
        "keywords": keywords,
    }
    request.update({k: v for k, v in optional.items() if v})
    filters: dict[str, Any] = {}
    if object_types:
        filters["object_types"] = list(object_types)
    if relationship_types:
        filters["relationship_types"] = list(relationship_types)
    if as_of is not None:
        filters["as_of"] = as_of_date(as_of)
    if filters:
        request["filters"] = filters
    return request


KINDS = {"graph": "object", "relationship": "relationship", "text": "chunk"}
"""A result's wire ``type`` → what a table calls it (the light CLI's copy of
``kgsearch.search.request.RESULT_KINDS``, which needs pydantic)."""


def render_results(response: dict[str, Any]) -> None:
    """The search results table (from the response as JSON, in process or from a server)."""
    grid = table("#", "type", "result", "relevance", "id", "found by")
    results = response["results"]
    communities = response.get("communities", [])
    # the best score, not the first row's: on documents passages lead the list
    top = max((r["score"] for r in results), default=0.0)
    for i, r in enumerate(results, 1):
        if r["type"] == "graph":
            text = f"[bold]{escape(r['name'])}[/] ({escape(r['object_type'])})"
        elif r["type"] == "relationship":
            text = escape(r["triplet_text"])
        else:
            text = escape(" ".join(r["snippet"].split())[:160])
            if r.get("section"):
                text = f"[dim]{escape(r['section'])}:[/] {text}"
        kind = KINDS.get(r["type"], r["type"])
        grid.add_row(str(i), kind, text, relative(r["score"], top), r["id"], _legs(r))
    # reports are ranked on a scale of their own: relative to the best report
    best = communities[0]["score"] if communities else 0.0
    for i, c in enumerate(communities, len(results) + 1):
        grid.add_row(
            str(i),
            c["type"],
            f"[bold]{escape(c['title'])}[/] ({c['size']} members)",
            relative(c["score"], best),
            c["id"],
            _legs(c),
        )
    out.print(grid)
    meta = response["metadata"]
    out.print(
        f"{meta['totalResults']} results in {meta['executionTime']['totalMs']} ms "
        f"(fusion {meta['fusionStrategy']}; relevance relative to the top hit)"
    )
    words = meta.get("keywords")
    if words and words["source"] in ("llm", "cache"):
        low, high = ", ".join(words["lowLevel"]) or "-", ", ".join(words["highLevel"]) or "-"
        out.print(
            f"keywords ({words['source']}): entities {escape(low)}; themes {escape(high)}",
            highlight=False,
        )
    for warning in meta["warnings"]:
        out.print(f"[yellow]warning:[/] {escape(warning)}")
    if response.get("debug"):
        out.print_json(json.dumps(response["debug"]["score_distribution"]))


def _legs(hit: dict[str, Any]) -> str:
    return ", ".join(f"{f['leg']}#{f['rank']}" for f in hit.get("found_by", []))


def relative(score: float, top: float) -> str:
    """A score as a share of the top hit's, two decimals (the top hit is 1.00)."""
    return f"{score / top:.2f}" if top > 0 else f"{score:.4f}"
