"""The MCP server's community tools: build, list, show one, and an object's communities.

Registered by :func:`kgsearch.mcp.server.create_server` through :func:`add_community_tools`,
with the server's own ``call`` (scope check, errors as tool errors, work in a thread).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, Literal, Protocol

from pydantic import Field

from kgsearch.engine import Engine
from kgsearch.errors import MissingDependency
from kgsearch.keys import Scope

try:
    from mcp.server.mcpserver import MCPServer
    from mcp.types import CallToolResult
except ImportError as exc:  # pragma: no cover - exercised without the extra
    raise MissingDependency(
        "the MCP server needs the server extra: pip install 'kgsearch[server]'"
    ) from exc

__all__ = ["add_community_tools"]

Id = Annotated[str, Field(min_length=1, max_length=200)]


class Call(Protocol):
    """The server's ``call``: scope check (and, when ``spends``, the ``llm`` scope and
    the budget), errors as tool errors, work in a thread."""

    async def __call__(
        self, scope: Scope, fn: Callable[[], Any], *, spends: bool = False
    ) -> CallToolResult:
        """Run ``fn`` as a tool call."""
        ...


def add_community_tools(server: MCPServer[Any], call: Call, engine: Engine, project: str) -> None:
    """Add ``build_communities``, ``communities``, ``community`` and
    ``object_communities`` to ``server``."""

    @server.tool(structured_output=False)
    async def build_communities(
        method: Literal["extractive", "llm"] = "extractive",
        max_cluster_size: Annotated[int, Field(ge=1, le=100_000)] = 10,
    ) -> CallToolResult:
        """Detect the graph's communities (hierarchical Leiden), store them, and write a
        report (title, summary, cited findings, rating) for each new or changed one;
        ``llm`` has the configured chat model write them. Reports become searchable
        after the next embedding run (``search`` with recipe ``communities``)."""
        return await call(
            "write",
            lambda: engine.build_communities(
                project=project, method=method, max_cluster_size=max_cluster_size
            ),
            spends=method == "llm",
        )

    @server.tool(structured_output=False)
    async def communities(
        level: Annotated[int | None, Field(ge=0)] = None,
        limit: Annotated[int, Field(ge=1, le=1000)] = 50,
        offset: Annotated[int, Field(ge=0)] = 0,
    ) -> CallToolResult:
        """List the graph's communities (themes) by level and size, with report titles;
        level 0 is the coarsest. For broad questions ("what are the main themes?")."""
        return await call(
            "read",
            lambda: engine.list_communities(
                project=project, level=level, limit=limit, offset=offset
            ),
        )

    @server.tool(structured_output=False)
    async def community(community_id: Id) -> CallToolResult:
        """One community: its report (summary and findings citing member ids), its
        sub-communities and members."""
        return await call("read", lambda: engine.community(community_id, project=project))

    @server.tool(structured_output=False)
    async def object_communities(object_id: Id) -> CallToolResult:
        """The communities an object belongs to, one per level, coarsest first."""
        return await call("read", lambda: engine.object_communities(object_id, project=project))
