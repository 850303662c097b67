"""LLM spend per project and key, written once for both stores (``UsageLedger``;
table ``llm_usage``).

One row per (project, key id, UTC minute) holds the requests, tokens and US dollars
the spending calls of that minute took, so per-minute and per-day budgets
(:mod:`kgsearch.lifecycle.budget`) survive a restart and a day is one range scan.
Calls made without a key (keyless local mode, an MCP server) are kept under key id
``""``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from kgsearch.store.dialect import Slice

__all__ = ["LLMUsage", "UsageLedger", "UsageTotals"]


@dataclass(frozen=True)
class UsageTotals:
    """What one key (or, keyless, one project) spent over a range of minutes.

    Attributes:
        project: The project.
        key_id: The API key id ("" for calls made without a key).
        requests: Spending requests admitted.
        prompt_tokens: Prompt tokens the model calls took (cached replies: none).
        completion_tokens: Completion tokens.
        cost_usd: US dollars, where the provider's price is known (else 0).
    """

    project: str
    key_id: str
    requests: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0

    @property
    def tokens(self) -> int:
        """Prompt plus completion tokens."""
        return self.prompt_tokens + self.completion_tokens


class UsageLedger(Protocol):
    """LLM spend per (project, key, UTC minute), added to and summed over ranges."""

    def add_llm_usage(
        self,
        project: str,
        key_id: str,
        minute: int,
        *,
        requests: int = 0,
        prompt_tokens: int = 0,
        completion_tokens: int = 0,
        cost_usd: float = 0.0,
    ) -> None:
        """Add to the (project, key, minute) row, creating it at zero first.
        ``minute`` is whole minutes since the Unix epoch (UTC)."""
        ...

    def llm_usage(
        self, since_minute: int, *, project: str | None = None, key_id: str | None = None
    ) -> list[UsageTotals]:
        """Totals per (project, key) over the minutes from ``since_minute`` on, of one
        project or key, or of all; ordered by project, then key id."""
        ...

    def prune_llm_usage(self, before_minute: int) -> int:
        """Delete the rows of minutes before ``before_minute``; how many went."""
        ...


class LLMUsage(Slice):
    """``UsageLedger`` over a store's connection and dialect."""

    def add_llm_usage(
        self,
        project: str,
        key_id: str,
        minute: int,
        *,
        requests: int = 0,
        prompt_tokens: int = 0,
        completion_tokens: int = 0,
        cost_usd: float = 0.0,
    ) -> None:
        text = self.dialect.text
        self.db.write(
            self.dialect.sql(
                "INSERT INTO llm_usage (project, key_id, minute, requests, prompt_tokens, "
                "completion_tokens, cost_usd) VALUES (?, ?, ?, ?, ?, ?, ?) "
                "ON CONFLICT (project, key_id, minute) DO UPDATE SET "
                "requests = llm_usage.requests + excluded.requests, "
                "prompt_tokens = llm_usage.prompt_tokens + excluded.prompt_tokens, "
                "completion_tokens = llm_usage.completion_tokens + excluded.completion_tokens, "
                "cost_usd = llm_usage.cost_usd + excluded.cost_usd"
            ),
            (
                text(project),
                text(key_id),
                minute,
                requests,
                prompt_tokens,
                completion_tokens,
                float(cost_usd),
            ),
        )

    def llm_usage(
        self, since_minute: int, *, project: str | None = None, key_id: str | None = None
    ) -> list[UsageTotals]:
        where, params = "minute >= ?", [since_minute]
        for column, value in (("project", project), ("key_id", key_id)):
            if value is not None:
                where += f" AND {column} = ?"
                params.append(self.dialect.text(value))
        rows = self.db.all(
            self.dialect.sql(
                "SELECT project, key_id, sum(requests) AS requests, "
                "sum(prompt_tokens) AS prompt_tokens, "
                "sum(completion_tokens) AS completion_tokens, sum(cost_usd) AS cost_usd "
                f"FROM llm_usage WHERE {where} GROUP BY project, key_id "
                "ORDER BY project, key_id"
            ),
            params,
        )
        return [
            UsageTotals(
                project=str(r["project"]),
                key_id=str(r["key_id"]),
                requests=int(r["requests"]),
                prompt_tokens=int(r["prompt_tokens"]),
                completion_tokens=int(r["completion_tokens"]),
                cost_usd=float(r["cost_usd"]),
            )
            for r in rows
        ]

    def prune_llm_usage(self, before_minute: int) -> int:
        return self.db.write(
            self.dialect.sql("DELETE FROM llm_usage WHERE minute < ?"), (before_minute,)
        )
