"""Natural-language text for relationships: ``"Alice works for Acme Corp"`` (seed 000).

A relationship is embedded as ``"{source} {predicate} {target}"``, optionally followed
by ``": {description}"``. Display names and predicates are resolved here; the caller
looks up the endpoint objects.
"""

from __future__ import annotations

import functools

from kgsearch.model import display_name

__all__ = ["display_name", "humanize_relation_type", "triplet_text"]


@functools.lru_cache(maxsize=4096)
def humanize_relation_type(type_: str) -> str:
    """Turn a relation type into a predicate: ``WORKS_FOR`` → ``"works for"``.

    Args:
        type_: The relationship type, e.g. ``"DEPENDS_ON"`` or ``"directed_by"``.

    Returns:
        The type with underscores as spaces, lowercased, whitespace collapsed.
    """
    return " ".join(type_.replace("_", " ").lower().split())


def _present(text: str | None) -> str | None:
    if text is None or not text.strip():
        return None
    return text.strip()


def triplet_text(
    source_name: str,
    type_: str,
    target_name: str,
    *,
    label: str | None = None,
    description: str | None = None,
) -> str:
    """Build the embedded text of a relationship.

    Args:
        source_name: Display name of the source object (see :func:`display_name`).
        type_: The relationship type; humanized into the predicate.
        target_name: Display name of the target object.
        label: A human predicate that replaces the humanized type when not blank.
        description: Free text appended after ``": "`` when not blank.

    Returns:
        ``"Elon Musk founded Tesla"``, or ``"Elon Musk founded Tesla: in 2003"`` with a
        description.
    """
    predicate = _present(label) or humanize_relation_type(type_)
    triplet = " ".join(part for part in (source_name, predicate, target_name) if part)
    detail = _present(description)
    return f"{triplet}: {detail}" if detail else triplet
