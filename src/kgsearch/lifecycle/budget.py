"""LLM spend budgets: admit a spending request, meter its model calls, keep the tally.

The REST and MCP servers send every request that spends on the chat model (answers,
``keywords: "llm"`` searches, extraction previews, LLM community reports) through one
:class:`Budget`: :meth:`Budget.admit` refuses it with
:class:`~kgsearch.errors.BudgetExceeded` (429, ``retry_after``) when the key or its
project already reached a limit, and counts the request; :meth:`Budget.run` then does
the work inside a :class:`~kgsearch.llm.meter.Meter` and adds the tokens and US dollars
its model calls took. The tally lives in the store (:mod:`kgsearch.store.usage`, one
row per project, key and UTC minute), so daily limits survive a restart.

Windows are fixed: a minute is a UTC clock minute, a day a UTC calendar day. A call is
admitted while the window's total is below the limit, so one large call may pass a
token limit once (its size is known only when it ends); the next call is refused.
Admission is serialised within a process; several server processes on one store may
each admit one request past a limit at the same instant.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TypeVar

from pydantic import BaseModel, ConfigDict

from kgsearch import registry
from kgsearch.config import BudgetSettings
from kgsearch.errors import BudgetExceeded
from kgsearch.keys import KeyLimits
from kgsearch.llm.meter import Meter, metered
from kgsearch.store.usage import UsageLedger, UsageTotals

__all__ = [
    "Budget",
    "BudgetLimits",
    "Limits",
    "SpendRow",
    "SpendWindow",
    "UsageReport",
    "extractor_spends",
    "usage_report",
]

T = TypeVar("T")
_DAY_MINUTES = 1440
_KEEP_MINUTES = 2 * _DAY_MINUTES
_OFFLINE_EXTRACTORS = frozenset({"spacy", "none"})


def extractor_spends(name: str) -> bool:
    """Whether the extractor ``name`` may call a chat model (``llm`` and plugins' may;
    ``spacy`` never does). An unknown name spends nothing: it is refused as such."""
    return name in registry.names("extractor") and name not in _OFFLINE_EXTRACTORS


@dataclass(frozen=True)
class Limits:
    """One holder's limits (0: no limit)."""

    requests_per_minute: int = 0
    tokens_per_minute: int = 0
    tokens_per_day: int = 0
    cost_per_day_usd: float = 0.0


@dataclass(frozen=True)
class BudgetLimits:
    """The limits of each API key and of each project (all keys, and keyless calls)."""

    key: Limits = Limits()
    project: Limits = Limits()

    @classmethod
    def from_settings(cls, settings: BudgetSettings) -> BudgetLimits:
        """The limits ``[budget]`` sets."""
        s = settings
        return cls(
            key=Limits(
                s.key_requests_per_minute,
                s.key_tokens_per_minute,
                s.key_tokens_per_day,
                s.key_cost_per_day_usd,
            ),
            project=Limits(
                s.project_requests_per_minute,
                s.project_tokens_per_minute,
                s.project_tokens_per_day,
                s.project_cost_per_day_usd,
            ),
        )

    def for_key(self, own: KeyLimits | None) -> Limits:
        """A key's limits: its own where it has them (``kgsearch keys limit``), else
        the server's."""
        if own is None:
            return self.key
        base = self.key
        return Limits(
            _own(own.requests_per_minute, base.requests_per_minute),
            _own(own.tokens_per_minute, base.tokens_per_minute),
            _own(own.tokens_per_day, base.tokens_per_day),
            _own(own.cost_per_day_usd, base.cost_per_day_usd),
        )

    @classmethod
    def unlimited(cls) -> BudgetLimits:
        """No limit at all (usage is still counted)."""
        return cls()


def _own(value: T | None, default: T) -> T:
    return default if value is None else value


class SpendWindow(BaseModel):
    """Spend over one window (this minute, or today)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    requests: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    tokens: int = 0
    cost_usd: float = 0.0


class SpendRow(BaseModel):
    """A key's spend (``key_id`` "" for calls made without a key), or a project's
    total (``key_id`` None)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    project: str
    key_id: str | None
    this_minute: SpendWindow
    today: SpendWindow


class UsageReport(BaseModel):
    """LLM spend per key and per project, this minute and today (UTC)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    day: str
    minute: str
    keys: list[SpendRow]
    projects: list[SpendRow]


def _window(totals: UsageTotals | None) -> SpendWindow:
    if totals is None:
        return SpendWindow()
    return SpendWindow(
        requests=totals.requests,
        prompt_tokens=totals.prompt_tokens,
        completion_tokens=totals.completion_tokens,
        tokens=totals.tokens,
        cost_usd=round(totals.cost_usd, 6),
    )


def _summed(project: str, rows: list[UsageTotals]) -> UsageTotals:
    return UsageTotals(
        project=project,
        key_id="",
        requests=sum(r.requests for r in rows),
        prompt_tokens=sum(r.prompt_tokens for r in rows),
        completion_tokens=sum(r.completion_tokens for r in rows),
        cost_usd=sum(r.cost_usd for r in rows),
    )


def usage_report(
    ledger: UsageLedger, *, project: str | None = None, now: float | None = None
) -> UsageReport:
    """Spend per key and per project (of one project, or all), this minute and today.

    Args:
        ledger: The store.
        project: Only this project's keys and total.
        now: The time (seconds since the epoch; default: now).
    """
    now = time.time() if now is None else now
    minute = int(now // 60)
    day_start = minute - minute % _DAY_MINUTES
    today = ledger.llm_usage(day_start, project=project)
    current = {(r.project, r.key_id): r for r in ledger.llm_usage(minute, project=project)}
    keys = [
        SpendRow(
            project=r.project,
            key_id=r.key_id,
            this_minute=_window(current.get((r.project, r.key_id))),
            today=_window(r),
        )
        for r in today
    ]
    projects = []
    for name in sorted({r.project for r in today}):
        mine = [r for r in today if r.project == name]
        now_rows = [r for (p, _), r in current.items() if p == name]
        projects.append(
            SpendRow(
                project=name,
                key_id=None,
                this_minute=_window(_summed(name, now_rows)),
                today=_window(_summed(name, mine)),
            )
        )
    stamp = datetime.fromtimestamp(minute * 60, UTC)
    return UsageReport(
        day=stamp.date().isoformat(),
        minute=stamp.isoformat(),
        keys=keys,
        projects=projects,
    )


class Budget:
    """Admission and accounting of spending requests over a store's usage ledger.

    Args:
        ledger: Where usage is kept (any store).
        limits: The limits; :meth:`BudgetLimits.unlimited` counts without refusing.
        clock: Seconds since the epoch (tests move it).
    """

    def __init__(
        self,
        ledger: UsageLedger,
        limits: BudgetLimits,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.ledger = ledger
        self.limits = limits
        self._clock = clock
        self._lock = threading.Lock()
        self._pruned_day = -1

    def admit(self, project: str, key_id: str | None, own: KeyLimits | None = None) -> None:
        """Count one spending request of ``key_id`` (None or "": no key) in ``project``,
        held to the key's ``own`` limits where it has them.

        Raises:
            BudgetExceeded: The key or the project reached a limit (nothing counted).
        """
        key = key_id or ""
        with self._lock:
            now = self._clock()
            minute = int(now // 60)
            day_start = minute - minute % _DAY_MINUTES
            this_minute = self.ledger.llm_usage(minute, project=project)
            today = self.ledger.llm_usage(day_start, project=project)
            if key:
                mine = [r for r in this_minute if r.key_id == key]
                mine_today = [r for r in today if r.key_id == key]
                _check("key", self.limits.for_key(own), mine, mine_today, now)
            _check("project", self.limits.project, this_minute, today, now)
            self.ledger.add_llm_usage(project, key, minute, requests=1)
            if day_start != self._pruned_day:
                self._pruned_day = day_start
                self.ledger.prune_llm_usage(minute - _KEEP_MINUTES)

    def settle(self, project: str, key_id: str | None, meter: Meter) -> None:
        """Add what ``meter`` counted to the tally of the current minute."""
        if meter.calls == 0:
            return
        minute = int(self._clock() // 60)
        self.ledger.add_llm_usage(
            project,
            key_id or "",
            minute,
            prompt_tokens=meter.usage.prompt_tokens,
            completion_tokens=meter.usage.completion_tokens,
            cost_usd=meter.cost_usd,
        )

    def run(self, project: str, key_id: str | None, work: Callable[[], T]) -> T:
        """``work()`` (admitted already) with its model calls metered and settled."""
        meter = Meter()
        try:
            with metered(meter):
                return work()
        finally:
            self.settle(project, key_id, meter)

    def spend(self, project: str, key_id: str | None, work: Callable[[], T]) -> T:
        """:meth:`admit`, then :meth:`run`.

        Raises:
            BudgetExceeded: A limit is reached (``work`` is not called).
        """
        self.admit(project, key_id)
        return self.run(project, key_id, work)


def _check(
    holder: str,
    limits: Limits,
    this_minute: list[UsageTotals],
    today: list[UsageTotals],
    now: float,
) -> None:
    minute = _summed("", this_minute)
    day = _summed("", today)
    to_minute = max(1, int(60 - now % 60) + 1)
    to_day = max(1, int(86_400 - now % 86_400) + 1)
    checks = (
        ("requests_per_minute", minute.requests, limits.requests_per_minute, to_minute),
        ("tokens_per_minute", minute.tokens, limits.tokens_per_minute, to_minute),
        ("tokens_per_day", day.tokens, limits.tokens_per_day, to_day),
        ("cost_per_day_usd", day.cost_usd, limits.cost_per_day_usd, to_day),
    )
    for name, used, allowed, retry in checks:
        if allowed and used >= allowed:
            setting = f"{holder}_{name}"
            raise BudgetExceeded(
                f"LLM budget exceeded: this {holder} used {used:g} of {allowed:g} "
                f"({name.replace('_', ' ')}); retry in {retry} s, or raise [budget] "
                f"{setting} on the server",
                details={
                    "limit": setting,
                    "used": used,
                    "allowed": allowed,
                    "retry_after": retry,
                },
            )
