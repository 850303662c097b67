"""The ``agreement`` reranker: hits that more retrievers found come first.

RRF already rewards a hit found by several legs, but a single leg's rank 1 can still
outscore a hit that three legs placed a little lower. ``agreement`` makes consensus the
first key: a hit's score is the number of distinct retrievers that found it (a leg and
its ``:hinted`` twin count once), ties going to the fused score, then the fused order.
It is pure (``found_by`` rides on every candidate), so hydration reads nothing for it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from kgsearch.errors import InvalidRequest
from kgsearch.search.rerank import Candidate
from kgsearch.search.rerankers import RERANKERS, RerankerPart

__all__ = ["AgreementReranker"]


class AgreementReranker:
    """Ranks candidates by how many distinct legs found them, most first.

    ``score = number of retrievers`` (``objects:bm25`` and ``objects:bm25:hinted`` are
    one); ties go to the higher incoming score, then incoming order.
    """

    def rerank(self, query: str, hits: Sequence[Candidate], *, limit: int) -> list[Candidate]:
        """Reorder ``hits`` by agreement; see the class docstring.

        Raises:
            InvalidRequest: If ``limit`` is below 1.
        """
        if limit < 1:
            raise InvalidRequest(f"limit must be >= 1 (got {limit})", details={"limit": limit})
        votes = [len({h.leg.removesuffix(":hinted") for h in c.found_by}) for c in hits]
        order = sorted(range(len(hits)), key=lambda i: (-votes[i], -hits[i].score, i))
        return [replace(hits[i], score=float(votes[i])) for i in order[:limit]]


RERANKERS.register("agreement", RerankerPart("agreement", lambda _: AgreementReranker()))
