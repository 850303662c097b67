"""How a store's search queries are embedded, said from the settings alone: through the
bundled model's int8 query graph or its document model, and why.

A floor module (no numpy, no pydantic), so ``kgsearch embed status`` can say it on its
light path, which loads neither the settings model nor any embedder; the bundled
embedder says the same of itself (:attr:`kgsearch.embed.bundled.BundledEmbedder.queries`),
and once it has embedded a query, whether the query graph could be opened.
"""

from __future__ import annotations

__all__ = ["DOCUMENT_MODEL_FAST", "DOCUMENT_MODEL_OFF", "FAST_MODEL", "MODEL", "planned_queries"]

DOCUMENT_MODEL_OFF = "document model (fast_queries is off)"
"""The bundled model with ``[embed] fast_queries = false``: queries exactly as documents."""
DOCUMENT_MODEL_FAST = "document model (the fast model multiplies in int8 itself)"
"""``bundled:fast``: its one session already multiplies in int8."""

MODEL = "all-MiniLM-L6-v2-int8"
"""The bundled model's name (:mod:`kgsearch.embed.bundled` takes it from here)."""
FAST_MODEL = "all-MiniLM-L6-v2-int8pc"
"""``bundled:fast``'s model name."""
_BUNDLED, _BUNDLED_FAST = f"bundled:{MODEL}", f"bundled:{FAST_MODEL}"


def planned_queries(model_id: str | None, fast_queries: bool | None) -> str | None:
    """How a process would embed queries for a store embedded with ``model_id``.

    Args:
        model_id: The store's embedding model (``StoreInfo.embedding_model``), or None
            when nothing is embedded yet.
        fast_queries: The ``[embed] fast_queries`` setting (None: the model's default).

    Returns:
        ``"query graph (fast_queries, the bundled model's default)"`` (or ``"query
        graph (fast_queries is on)"`` when set), :data:`DOCUMENT_MODEL_OFF`,
        :data:`DOCUMENT_MODEL_FAST`; None for another provider or no model yet.
    """
    if model_id == _BUNDLED_FAST:
        return DOCUMENT_MODEL_FAST
    if model_id != _BUNDLED:
        return None
    if fast_queries is False:
        return DOCUMENT_MODEL_OFF
    why = "fast_queries is on" if fast_queries else "fast_queries, the bundled model's default"
    return f"query graph ({why})"
