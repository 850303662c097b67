"""CLI command ``schema show``: the graph schema LLM extraction is held to."""

from __future__ import annotations

from pathlib import Path

import click
from rich.markup import escape

from kgsearch.cli.common import State, emit, handle_errors, load_settings, out, pass_state
from kgsearch.config import config_path
from kgsearch.extract.ontology import GraphSchema, load_schema, schema_from_setting

__all__ = ["schema"]


@click.group()
def schema() -> None:
    """Show the graph schema (entity and relation types) LLM extraction follows.

    Example: kgsearch schema show --schema schema.toml
    """


def _render(value: GraphSchema | None) -> None:
    if value is None:
        out.print("no graph schema: open extraction (set [extract] schema or pass --schema)")
        return
    title = value.name or "graph schema"
    out.print(f"[bold]{escape(title)}[/] (digest {value.digest})")
    if value.description:
        out.print(escape(value.description))
    out.print(f"entity types ({len(value.entity_types)}):")
    for entity in value.entity_types:
        line = f"  {entity.name}" + (f": {entity.description}" if entity.description else "")
        if entity.properties:
            line += f" [properties: {', '.join(entity.properties)}]"
        out.print(escape(line))
    out.print(f"relation types ({len(value.relation_types)}):")
    for relation in value.relation_types:
        source = " | ".join(relation.source) or "any"
        target = " | ".join(relation.target) or "any"
        line = f"  {relation.name} ({source} → {target})"
        if relation.single_valued:
            line += " single-valued"
        if relation.description:
            line += f": {relation.description}"
        out.print(escape(line))


@schema.command("show")
@click.option(
    "--schema",
    "path",
    type=click.Path(path_type=Path, dir_okay=False, exists=True),
    help="Read this file instead of [extract] schema.",
)
@pass_state
@handle_errors
def show(state: State, path: Path | None) -> None:
    """Print the active graph schema: --schema FILE, else [extract] schema in settings.

    Example: kgsearch schema show --schema ontology.json --json
    """
    value = (
        load_schema(path)
        if path is not None
        else schema_from_setting(load_settings().extract.schema_, base=config_path().parent)
    )
    emit(
        state,
        value.model_dump(mode="json") if value is not None else None,
        lambda _: _render(value),
    )
