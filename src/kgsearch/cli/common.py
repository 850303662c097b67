"""Shared CLI plumbing over the engine: settings and engine building, row references.

The output helpers live in :mod:`kgsearch.cli.output` and are re-exported here.
"""

from __future__ import annotations

from pydantic import ValidationError

from kgsearch.cli.output import (
    State,
    console,
    emit,
    handle_errors,
    missing_sqlite_file,
    no_store,
    out,
    pass_state,
    resumable,
    table,
)
from kgsearch.config import Settings, config_path
from kgsearch.engine import Engine
from kgsearch.errors import ConfigError, NotFound

__all__ = [
    "State",
    "console",
    "emit",
    "engine_from",
    "handle_errors",
    "load_settings",
    "missing_sqlite_file",
    "out",
    "pass_state",
    "resumable",
    "row_id",
    "table",
]


def load_settings() -> Settings:
    """Load settings, turning validation errors into a clean message."""
    try:
        return Settings()
    except ValidationError as exc:
        raise ConfigError(f"invalid settings: {exc}") from None
    except ValueError as exc:  # the TOML file does not parse
        raise ConfigError(f"invalid settings: {config_path()}: {exc}") from None


def engine_from(
    state: State,
    *,
    model: str | None = None,
    settings: Settings | None = None,
    create: bool = False,
) -> Engine:
    """Build the engine for a command (from ``settings`` when a command overrides some).

    Only commands that write (``create=True``: init, import, ingest, serve…) may make
    a new SQLite file; the others refuse a path where there is none, so a mistyped
    ``--db`` is an error rather than a new empty store.

    Raises:
        NotFound: ``create`` is false and the SQLite file does not exist.
    """
    settings = settings or load_settings()
    url = state.db or settings.store.url
    if not create:
        missing = missing_sqlite_file(url)
        if missing is not None:
            raise no_store(missing)
    return Engine.from_settings(settings, project=state.project, store_url=url, model=model)


def row_id(engine: Engine, ref: str) -> str:
    """The id a reference names: an id as it is, or an object's ``TYPE/KEY``.

    Every command that takes a row accepts both (``objects get/delete``, ``embed
    preview``…). An id containing ``/`` still works: ``TYPE/KEY`` is tried first.

    Raises:
        NotFound: ``TYPE/KEY`` names no object and is not an id either.
    """
    if "/" not in ref:
        return ref
    type_, key = ref.split("/", 1)
    if not type_ or not key:  # not a TYPE/KEY (ObjectRef refuses an empty part)
        return ref
    try:
        return engine.get_object_by_key(type_, key).id
    except NotFound:
        return ref
