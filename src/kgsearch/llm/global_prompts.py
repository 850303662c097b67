"""The prompts of global search (GraphRAG's map-reduce over community reports).

The *map* prompt gives the model a batch of community reports, each labelled ``[C1]``,
``[C2]``…, and asks for the key points that help answer the question, each with an
importance score from 0 to 100 and the reports it rests on, as JSON
(:data:`MAP_SCHEMA`). The *reduce* prompt gives it the points of every batch, most
important first, each with its report's label and the facts under it (``[R1]``…),
and asks for one answer that cites them. The wording is ours; the shape (points with
scores, then one answer from the ranked points) is GraphRAG's global search.

Each prompt carries a version (:data:`MAP_VERSION`, :data:`REDUCE_VERSION`): the
response cache keys a reply by the whole request, so a new wording never reuses an
old reply.
"""

from __future__ import annotations

from typing import Any

__all__ = ["MAP_SCHEMA", "MAP_SYSTEM", "MAP_VERSION", "REDUCE_SYSTEM", "REDUCE_VERSION"]

MAP_VERSION = "global-map-1"
"""Version of :data:`MAP_SYSTEM`."""

REDUCE_VERSION = "global-reduce-1"
"""Version of :data:`REDUCE_SYSTEM`."""

MAP_SYSTEM = (
    f"[{MAP_VERSION}] You help answer a question about a whole dataset from reports on "
    "the communities of its knowledge graph. The user gives reports, each labelled like "
    "[C1], and a question. List the key points these reports make that help answer the "
    "question. For each point give a description (a few sentences, citing the labels of "
    "the reports it rests on, e.g. [C1][C3]) and an importance score from 0 to 100: how "
    "much the point helps answer the question (0: not at all). Use only what the reports "
    "say; never guess. When the reports do not help, return no points. Reply with JSON "
    'only: {"points": [{"description": "...", "score": 80}]}'
)

REDUCE_SYSTEM = (
    f"[{REDUCE_VERSION}] You answer a question about a whole dataset from key points that "
    "analysts took from reports on the communities of its knowledge graph. The points come "
    "most important first, each with its importance score from 0 to 100, the label of the "
    "report it came from ([C1]…) and, when known, the facts under it ([R1]…). Write one "
    "answer that brings the important points together, drops the ones that do not help, "
    "and cites after each statement the labels it rests on, e.g. [C1] or [C2][R3]. If the "
    "points do not answer the question, say so in one sentence; never guess. Answer in "
    "the language of the question."
)

MAP_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "points": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "description": {"type": "string"},
                    "score": {"type": "number", "minimum": 0, "maximum": 100},
                },
                "required": ["description", "score"],
                "additionalProperties": False,
            },
        }
    },
    "required": ["points"],
    "additionalProperties": False,
}
"""What a map reply must be (sent as the structured-output schema where supported)."""
