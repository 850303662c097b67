"""The engine's LLM usage section (what the servers' budgets counted)."""

from __future__ import annotations

from kgsearch.engine.core import EngineCore
from kgsearch.errors import NotFound
from kgsearch.keys import KeyLimits
from kgsearch.lifecycle.budget import UsageReport, usage_report

__all__ = ["UsageMethods"]


class UsageMethods(EngineCore):
    """LLM spend per API key and per project, and a key's own limits (one call each)."""

    def llm_usage(self, *, project: str | None = None) -> UsageReport:
        """LLM spend per key and per project, this minute and today (UTC), as the REST
        and MCP servers' budgets counted it (:mod:`kgsearch.lifecycle.budget`).

        Args:
            project: Only this project (default: every project).
        """
        return usage_report(self.store, project=project)

    def set_key_limits(self, key_id: str, limits: KeyLimits | None) -> None:
        """Give a key its own LLM budget (fields left None take the server's
        ``[budget] key_*``), or None to clear it; servers apply it on the key's next
        request.

        Raises:
            NotFound: No key has this id.
        """
        if not self.store.set_api_key_limits(key_id, limits):
            raise NotFound(f"no API key {key_id!r}; see `kgsearch keys list`")
