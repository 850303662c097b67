"""Logic both stores share: the lifecycle's upsert rule, the model check, paging.

The stores differ in SQL dialect and placeholders; what is written here is the same
for both and lives once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypeVar

from kgsearch.errors import ConfigError, DimensionMismatch
from kgsearch.model import Filters, Page

__all__ = ["batched", "check_embedding_model", "every_page", "on_conflict"]

T = TypeVar("T")

_STATE_ON_CONFLICT = """
    status = CASE
        WHEN excluded.text_hash = {t}.text_hash AND {t}.deleted_at IS NULL THEN {t}.status
        WHEN excluded.text_hash = {t}.embedded_hash AND {t}.vector IS NOT NULL THEN 'embedded'
        ELSE 'pending' END,
    attempts = CASE WHEN excluded.text_hash = {t}.text_hash THEN {t}.attempts ELSE 0 END,
    last_error = CASE WHEN excluded.text_hash = {t}.text_hash THEN {t}.last_error ELSE NULL END,
    next_attempt_at = CASE WHEN excluded.text_hash = {t}.text_hash
        THEN {t}.next_attempt_at ELSE 0 END,
    text = excluded.text, text_hash = excluded.text_hash, text_version = excluded.text_version,
    deleted_at = NULL{extra}
"""


def on_conflict(table: str, extra: str = "") -> str:
    """``ON CONFLICT … DO UPDATE`` assignments for an embeddable table (SQLite and
    PostgreSQL alike): a text change resets the lifecycle; an unchanged text keeps it; a
    text that returns to what was embedded before is embedded again without calling the
    embedder. ``extra`` appends assignments (``", col = excluded.col"``)."""
    return _STATE_ON_CONFLICT.format(t=table, extra=extra)


def check_embedding_model(
    url: str, current_model: str | None, current_dims: int | None, model: str, dims: int
) -> None:
    """Refuse to mix vectors: another model or other dims than the store holds.

    Raises:
        DimensionMismatch: The store holds vectors of other dimensions.
        ConfigError: The store holds vectors of another model.
    """
    if not current_model:
        return
    if current_dims and current_dims != dims:
        raise DimensionMismatch(
            f"store {url} holds {current_dims}-d vectors of {current_model}; the embedder "
            f"{model} makes {dims}-d vectors. "
            "Re-embed with `kgsearch embed generate --model ... --force`.",
            details={"store_dims": current_dims, "embedder_dims": dims},
        )
    if current_model != model:
        raise ConfigError(
            f"store {url} was embedded with {current_model}, not {model}. "
            f"Switch models explicitly with `kgsearch embed generate --model {model} --force`, "
            "which re-embeds every row.",
            details={"store_model": current_model, "embedder_model": model},
        )


def every_page(
    list_rows: Callable[..., Page], project: str, kind: str, size: int = 1000
) -> Iterator[Any]:
    """Every live row of a kind through a store's ``list_rows``, page by page (validity
    not applied: expired relationships are rows too)."""
    cursor: str | None = None
    while True:
        page = list_rows(project, kind, limit=size, cursor=cursor, filters=Filters(as_of=None))
        yield from page.items
        if page.next_cursor is None:
            return
        cursor = page.next_cursor


def batched(items: Iterable[T], size: int = 1000) -> Iterator[list[T]]:
    """Lists of up to ``size`` consecutive items."""
    batch: list[T] = []
    for item in items:
        batch.append(item)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch
