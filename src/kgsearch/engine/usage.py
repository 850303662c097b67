"""The engine's LLM usage section (what the servers' budgets counted)."""

from __future__ import annotations

from kgsearch.engine.core import EngineCore
from kgsearch.lifecycle.budget import UsageReport, usage_report

__all__ = ["UsageMethods"]


class UsageMethods(EngineCore):
    """LLM spend per API key and per project (one call)."""

    def llm_usage(self, *, project: str | None = None) -> UsageReport:
        """LLM spend per key and per project, this minute and today (UTC), as the REST
        and MCP servers' budgets counted it (:mod:`kgsearch.lifecycle.budget`).

        Args:
            project: Only this project (default: every project).
        """
        return usage_report(self.store, project=project)
