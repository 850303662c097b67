"""``kgsearch ask``: an answer from the graph, written by the configured chat model and
streamed to the terminal, with numbered citations that resolve to rows."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click
from rich.markup import escape

from kgsearch.cli.common import (
    State,
    emit,
    engine_from,
    handle_errors,
    load_settings,
    out,
    pass_state,
)
from kgsearch.cli.query import build_request, search_options
from kgsearch.search.answer import Answer

__all__ = ["ask"]


@click.command()
@click.argument("question")
@search_options
@click.option(
    "--max-tokens",
    default=1500,
    show_default=True,
    type=click.IntRange(1, 100_000),
    help="Token budget of the cited context sent to the model.",
)
@click.option(
    "--no-llm",
    is_flag=True,
    help="Ask no model (offline): print the cited context and, as the answer, the best "
    "sentences of its passages, each cited (a graph without documents: its top facts).",
)
@click.option("--llm-model", help="Chat model, e.g. openai:gpt-4o-mini (default: [llm] model).")
@click.option(
    "--record",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Append the model call to this file.",
)
@click.option(
    "--replay",
    type=click.Path(path_type=Path, dir_okay=False, exists=True),
    help="Answer from a --record file only (no model call).",
)
@pass_state
@handle_errors
def ask(
    state: State,
    /,
    question: str,
    max_tokens: int,
    no_llm: bool,
    llm_model: str | None,
    record: Path | None,
    replay: Path | None,
    **options: Any,
) -> None:
    """Answer a question from the graph, citing the objects, relationships and passages
    the answer rests on ([E1], [R1], [S1]; the references are listed after it).

    The answer streams from the chat model of the [llm] settings (the provider,
    timeouts, cache and record/replay of LLM extraction: KGSEARCH_LLM__MODEL,
    KGSEARCH_LLM__API_KEY, KGSEARCH_LLM__BASE_URL). --no-llm needs no model: it
    prints the cited context and quotes the passages' sentences that best match the
    question, each cited (on a graph without documents, its top facts).

    With --recipe global (after `kgsearch communities build`) a broad question is
    answered by map-reduce over the community reports it selects, citing communities
    [C1] and their facts; offline, the reports' most important points.

    \b
    Example:
      kgsearch ask "who directed Jesse James" --no-llm
      KGSEARCH_LLM__MODEL=ollama:llama3.1 kgsearch ask "films by Henry King"
    """
    request = build_request(question, **options)
    settings = load_settings()
    llm = {k: v for k, v in (("model", llm_model), ("record", record), ("replay", replay)) if v}
    settings = settings.model_copy(update={"llm": settings.llm.model_copy(update=llm)})
    streamed = not (state.as_json or no_llm)
    with engine_from(state, settings=settings) as engine:
        answer = engine.ask(
            request.pop("query"),
            llm=not no_llm,
            max_tokens=max_tokens,
            on_text=_stream() if streamed else None,
            **request,
        )
    emit(state, answer, lambda value: _render(value, streamed=streamed))


def _stream() -> Any:
    """Print the answer's pieces as they arrive, under a heading."""
    started = [False]

    def on_text(piece: str) -> None:
        if not started[0]:
            started[0] = True
            out.print("[bold]Answer[/]", highlight=False)
        click.echo(piece, nl=False)

    return on_text


def _render(answer: Answer, *, streamed: bool) -> None:
    if streamed:
        click.echo()
    else:
        if answer.offline and answer.context:
            out.print("[bold]Context[/]", highlight=False)
            out.print(answer.context, markup=False, highlight=False)
            out.print()
        out.print("[bold]Answer[/]", highlight=False)
        out.print(answer.answer, markup=False, highlight=False)
    warnings = answer.metadata.get("warnings")
    for warning in warnings if isinstance(warnings, list) else []:
        out.print(f"[yellow]warning:[/] {escape(str(warning))}")
    if not answer.references:
        return
    out.print("\n[bold]References[/]", highlight=False)
    for ref in answer.references:
        mark = "" if ref.cited else " [dim](not cited)[/]"
        out.print(
            f"  {escape(f'[{ref.cite}]')} {escape(ref.text)}  [dim]{ref.kind} {ref.id}[/]{mark}",
            highlight=False,
        )
    if answer.model:
        cached = ", from the cache" if answer.cached else ""
        out.print(f"[dim]answered by {answer.model}{cached}[/]", highlight=False)
