"""The search request and response values (seed 000's unified search contract).

One :class:`SearchRequest` says what to search (scopes x methods), how to fuse
(RRF or weighted), how to rerank and which filters apply inside every leg. Named
recipes fill in common combinations. The response is type-discriminated results
plus ``metadata`` (counts, fusion strategy, per-leg timings) and optional ``debug``.
:class:`Explain` shows a search's work and :class:`RagContext` is its hits as prompt
lines.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    FieldSerializationInfo,
    ValidationError,
    WithJsonSchema,
    field_serializer,
    model_validator,
)
from pydantic_core import PydanticCustomError

from kgsearch import registry
from kgsearch.errors import InvalidRequest
from kgsearch.model import Filters, Kind, LegHit

__all__ = [
    "RECIPES",
    "RECIPE_REGISTRY",
    "WITHOUT_PASSAGE_WALK",
    "CommunityResult",
    "Explain",
    "FusedHit",
    "GraphResult",
    "LegRank",
    "RagContext",
    "RelationshipResult",
    "ScopeConfig",
    "SearchRequest",
    "SearchResponse",
    "SearchResult",
    "Statement",
    "TextResult",
    "apply_recipe",
    "validate_request",
]

MAX_QUERY_CHARS = 10_000
Method = Literal["vector", "bm25"]
_ALL_METHODS: tuple[Method, ...] = ("vector", "bm25")


def _known_reranker(name: str) -> str:
    """A reranker the registry knows (built-in or registered by a plugin)."""
    known = registry.names("reranker")
    if name not in known:
        expected = ", ".join(repr(n) for n in known[:-1]) + f" or {known[-1]!r}"
        raise PydanticCustomError(
            "literal_error", "Input should be {expected}", {"expected": expected}
        )
    return name


RerankerName = Annotated[
    str,
    AfterValidator(_known_reranker),
    WithJsonSchema({"type": "string", "enum": list(registry.names("reranker"))}),
]
"""A reranker's name: the REST and MCP schemas list the registry's rerankers."""


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)


class _Input(_Model):
    model_config = ConfigDict(
        frozen=True, extra="forbid", populate_by_name=True, allow_inf_nan=False
    )


class ScopeConfig(_Input):
    """Which methods run over one scope and how many candidates each returns."""

    methods: list[Method] = Field(default_factory=lambda: list(_ALL_METHODS))
    candidates: int | None = Field(
        default=None, ge=1, le=1000, description="Per-leg candidates (default 3 x limit, ≥ 30)"
    )


class SearchRequest(_Input):
    """One unified search over objects, relationships and chunks.

    ``result_types`` follows seed 000: ``both`` searches everything, ``graph``
    searches objects and relationships, ``text`` searches chunks only.
    """

    query: str = Field(max_length=MAX_QUERY_CHARS)
    limit: int = Field(default=10, ge=1, le=100)
    result_types: Literal["both", "graph", "text"] = Field(default="both", alias="resultTypes")
    objects: ScopeConfig | None = Field(default_factory=ScopeConfig)
    relationships: ScopeConfig | None = Field(default_factory=ScopeConfig)
    chunks: ScopeConfig | None = Field(default_factory=ScopeConfig)
    communities: ScopeConfig | None = Field(
        default=None,
        description=(
            "Community reports (kgsearch communities build): off unless set; their hits "
            "come back in the response's own `communities` list, never fused with rows"
        ),
    )
    graph: Literal["none", "bfs", "ppr", "paths", "local", "global", "hybrid"] = Field(
        default="none",
        description=(
            "Graph leg: BFS expansion, personalized PageRank, relation paths from the "
            "objects the query names (up to graph_depth hops), or a query mode's "
            "expansion: local (object hits → their relationships and chunks), global "
            "(relationship hits → their objects and chunks) or hybrid (both)"
        ),
    )
    bfs_origins: list[str] | None = Field(
        default=None,
        description="Object ids to expand from (default: land and expand from the top hits)",
    )
    graph_depth: int = Field(default=1, ge=1, le=3)
    fusion: Literal["rrf", "weighted"] = "rrf"
    rrf_k: int = Field(default=60, ge=1)
    weights: dict[str, float] | None = None
    reranker: RerankerName = "none"
    mmr_lambda: float = Field(default=0.5, ge=0.0, le=1.0)
    center_id: str | None = Field(default=None, description="Centre object for node_distance")
    min_score: float | None = None
    filters: Filters = Field(default_factory=Filters)
    type_hint: str | None = Field(default=None, alias="typeHint", max_length=200)
    include_debug: bool = Field(default=False, alias="includeDebug")
    recipe: str | None = None
    keywords: Literal["off", "llm"] = Field(
        default="off",
        description=(
            "llm: ask the configured chat model for the query's keywords first (cached): "
            "object legs search its low-level keywords (entities), relationship legs its "
            "high-level ones (themes), chunk legs the query as it is; on any trouble the "
            "search falls back to the query and says so in metadata.keywords. off: the "
            "query as it is everywhere (no model call)"
        ),
    )

    @model_validator(mode="after")
    def _check(self) -> SearchRequest:
        if self.reranker == "node_distance" and not self.center_id:
            raise ValueError("reranker node_distance needs center_id")
        return self

    def scope(self, kind: Kind) -> ScopeConfig | None:
        """The settings of one scope.

        Args:
            kind: Which scope: objects, relationships or chunks.

        Returns:
            Its :class:`ScopeConfig`, or None when the request switched it off.
        """
        if kind is Kind.OBJECT:
            return self.objects
        if kind is Kind.RELATIONSHIP:
            return self.relationships
        return self.chunks


RECIPES: dict[str, dict[str, Any]] = {
    "hybrid_rrf": {},
    "hybrid_mmr": {"reranker": "mmr"},
    "relationships": {"objects": None, "chunks": None},
    "objects_typed": {"relationships": None, "chunks": None},
    "chunks": {"objects": None, "relationships": None},
    "multi_hop": {
        "graph": "paths",
        "graph_depth": 3,
        # passages: the bridges leg ranks them alone (its score holds the chunks' own
        # cosine and BM25 scores; fusing their legs' ranks again lost MuSiQue 2-4
        # points of recall@5, docs/benchmarks.md "passages")
        # the anchored leg is left out (weight 0, so it is not run): it ranks no
        # passages, and its facts about the names a question gives crowd out the
        # relation paths' facts
        "rrf_k": 30,
        "weights": {
            "graph:paths": 4.0,
            "graph:paths:relationships": 4.0,
            "graph:passages": 2.0,
            "chunks:vector": 0.0,
            "chunks:bm25": 0.0,
            "relationships:anchored": 0.0,
        },
    },
    "expand": {"graph": "bfs"},
    # LightRAG's query modes (search/modes.py): an empty methods list keeps a scope out
    # of the first round while the mode's expansion still ranks its rows
    "naive": {"objects": None, "relationships": None},
    "local": {"graph": "local", "relationships": {"methods": []}, "chunks": {"methods": []}},
    "global": {
        "graph": "global",
        "objects": {"methods": []},
        "chunks": {"methods": []},
        # GraphRAG's global search: community reports, when a build wrote them
        "communities": {},
    },
    # broad questions over community reports only (docs/communities.md)
    "communities": {"objects": None, "relationships": None, "chunks": None, "communities": {}},
    "hybrid": {"graph": "hybrid", "chunks": {"methods": []}},
    "mix": {"graph": "hybrid"},
    "node_distance": {"reranker": "node_distance"},
    "mentions": {"reranker": "mentions"},
}


WITHOUT_PASSAGE_WALK: dict[str, dict[str, float]] = {
    "multi_hop": {"chunks:vector": 2.0, "chunks:bm25": 1.0},
}
"""The weights a recipe gives the chunks' own legs where the passage walk
(``graph:passages``) does not run: text-only results, no graph walk, a graph without
chunks. Where it runs it ranks the passages alone (the recipe weighs those legs 0);
without it they would be left unranked. A caller's own ``weights`` always win."""

RECIPE_REGISTRY: registry.Registry[dict[str, Any]] = registry.Registry("recipe")
"""The recipes by name, as every seam registers its parts."""
for _name, _recipe in RECIPES.items():
    RECIPE_REGISTRY.register(_name, _recipe)


def apply_recipe(request: SearchRequest, *, documents: bool = False) -> SearchRequest:
    """Fill fields the caller did not set from the named recipe (a fresh copy each time).

    On a graph built from documents (``documents``), a recipe that keeps the chunks'
    own legs out of the first round (``local``, ``global``, ``hybrid``: chunks with
    an empty methods list) keeps them in: the passages are the evidence there, ranked
    by their own legs beside the mode's expansion. A caller's own ``chunks`` setting
    always wins.

    Raises:
        InvalidRequest: The recipe is unknown.
    """
    if request.recipe is None:
        return request
    recipe = RECIPE_REGISTRY.get(request.recipe)
    if documents and recipe.get("chunks") == {"methods": []}:
        recipe = {k: v for k, v in recipe.items() if k != "chunks"}
    updates = {k: v for k, v in recipe.items() if k not in request.model_fields_set}
    return validate_request({**request.model_dump(exclude_unset=True), **updates})


def validate_request(fields: dict[str, Any]) -> SearchRequest:
    """Build a SearchRequest, turning validation errors into :class:`InvalidRequest`."""
    try:
        return SearchRequest.model_validate(fields)
    except ValidationError as exc:
        summary = "; ".join(
            f"{'.'.join(str(x) for x in e['loc']) or 'request'}: {e['msg']}"
            for e in exc.errors()[:5]
        )
        raise InvalidRequest(
            f"invalid search request: {summary}",
            details={
                "errors": exc.errors(include_url=False, include_context=False, include_input=False)
            },
        ) from None


class _Result(_Model):
    id: str
    score: float
    found_by: list[LegHit] = Field(default_factory=list)


RESULT_KINDS = {"graph": "object", "relationship": "relationship", "text": "chunk"}
"""A result's wire ``type`` (the seed's names) → what it is in the data model."""


class GraphResult(_Result):
    """An object hit."""

    type: Literal["graph"] = "graph"
    object_type: str
    key: str
    name: str
    fields: dict[str, Any] = Field(default_factory=dict)
    labels: list[str] = Field(default_factory=list)
    text: str | None = None

    @property
    def kind(self) -> str:
        """What the hit is, in the data model's words (``type`` is the wire name,
        ``graph``, kept for the seed's clients)."""
        return "object"


class RelationshipResult(_Result):
    """A relationship hit; ``triplet_text`` is exactly the text that was embedded."""

    type: Literal["relationship"] = "relationship"
    relationship_type: str
    triplet_text: str
    source_id: str
    target_id: str
    label: str | None = None
    properties: dict[str, Any] = Field(default_factory=dict)

    @property
    def kind(self) -> str:
        """What the hit is: ``relationship``."""
        return "relationship"


class TextResult(_Result):
    """A chunk hit."""

    type: Literal["text"] = "text"
    snippet: str
    source_id: str | None = None
    section: str | None = None
    """The chunk's section path in its document (``Guide > Install > Linux``), if any."""

    @property
    def kind(self) -> str:
        """What the hit is: ``chunk`` (``type`` is the wire name, ``text``)."""
        return "chunk"


SearchResult = Annotated[GraphResult | RelationshipResult | TextResult, Field(discriminator="type")]


class CommunityResult(_Result):
    """A community report hit (the ``communities`` scope)."""

    type: Literal["community"] = "community"
    level: int
    title: str
    summary: str
    rating: float
    size: int
    rank: float = 0.0
    findings: list[str] = Field(default_factory=list)


class SearchResponse(_Model):
    """Results best first, with metadata and optional debug information; community
    report hits, when the ``communities`` scope ran, in a list of their own."""

    results: list[SearchResult]
    communities: list[CommunityResult] = Field(
        default_factory=list, exclude_if=lambda found: not found
    )
    metadata: dict[str, Any]
    debug: dict[str, Any] | None = None


class Statement(_Model):
    """One SQL statement a search ran, with its parameters in JSON form (a vector as
    ``"<vector 384 float32>"``, a blob as ``"<1536 bytes>"``; a statement run once per
    parameter row has the list of rows)."""

    sql: str
    params: list[Any] = Field(default_factory=list)


class LegRank(_Model):
    """Where one leg ranked a hit: its fusion key (``kind:id``), rank and raw score."""

    key: str
    rank: int
    score: float


class FusedHit(_Model):
    """One result in fused order, with the legs that found it."""

    type: Literal["graph", "relationship", "text"]
    id: str
    score: float
    found_by: list[LegHit] = Field(default_factory=list)

    @property
    def kind(self) -> str:
        """What the hit is: ``object``, ``relationship`` or ``chunk``."""
        return RESULT_KINDS[self.type]


class Explain(_Model):
    """A search's work (:meth:`kgsearch.Engine.explain`).

    Attributes:
        request: The request as run (in JSON under the REST API's names).
        legs: Each leg's top 20 hits.
        leg_ms: Each leg's own time in milliseconds (legs that run side by side, such
            as BM25 beside the vector legs, overlap: these do not add up to the total).
        fused: The results in fused order, with the legs that found them.
        metadata: The search's metadata (counts, timings, warnings).
        statements: The SQL each stage ran, with its parameters, by stage: the type-hint
            lookup (``type_hint``), each leg, the graph stage (``graph:bfs`` or
            ``graph:ppr``, which yields both graph legs) and ``hydrate``.
        notes: Work done outside SQL (an in-memory vector scan), by stage.
    """

    request: SearchRequest
    legs: dict[str, list[LegRank]]
    leg_ms: dict[str, float] = Field(default_factory=dict)
    fused: list[FusedHit]
    metadata: dict[str, Any]
    statements: dict[str, list[Statement]] = Field(default_factory=dict)
    notes: dict[str, list[str]] = Field(default_factory=dict)

    @field_serializer("request")
    def _request_by_alias(self, request: SearchRequest, info: FieldSerializationInfo) -> Any:
        # the REST API's field names on every surface, whatever the caller's by_alias
        return request.model_dump(mode=info.mode, by_alias=True)


class RagContext(_Model):
    """A search's hits as prompt lines within a token budget (:meth:`kgsearch.Engine.context`).

    Attributes:
        context: The lines, best first ('' when nothing fits).
        tokens: Their length in the embedder's tokens.
        results: How many results the search returned.
        metadata: The search's metadata.
        citations: With the ``sections`` style, each citation (``E1``, ``R2``,
            ``S3``) and the id of the row it cites.
    """

    context: str
    tokens: int
    results: int
    metadata: dict[str, Any]
    citations: dict[str, str] = Field(default_factory=dict)
