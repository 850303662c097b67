"""The engine's entity resolution section: proposals, merges by hand, and undo."""

from __future__ import annotations

from collections.abc import Sequence

from kgsearch.engine.core import EngineCore
from kgsearch.model import GraphObject, Kind
from kgsearch.reports import MergeReport
from kgsearch.resolve.match import Candidate, MatchRules, MergeRecord, resolve
from kgsearch.writes.merge import merge_objects, split_object

__all__ = ["EntityMethods"]

_RULES = MatchRules()


def _aliases(o: GraphObject) -> tuple[str, ...]:
    names = o.properties.get("aliases")
    return tuple(a for a in names if isinstance(a, str)) if isinstance(names, list) else ()


class EntityMethods(EngineCore):
    """Entity resolution over stored objects (one call each)."""

    def entity_candidates(
        self,
        *,
        project: str | None = None,
        types: Sequence[str] | None = None,
        vectors: bool = True,
    ) -> list[MergeRecord]:
        """Merges entity resolution proposes over the project's objects, applying none:
        exact normalised names, aliases, acronyms, typo-apart names (rapidfuzz) and,
        with ``vectors``, embedding similarity of embedded objects, each pair within
        compatible types, with its reason and score."""
        p = self._p(project)
        objects = [o for o in self.store.iter_rows(p, "object") if types is None or o.type in types]
        found = self.store.vectors(p, Kind.OBJECT, [o.id for o in objects]) if vectors else {}
        candidates = [
            Candidate(o.id, o.name, o.type, aliases=_aliases(o), vector=found.get(o.id))
            for o in objects
        ]
        return resolve(candidates, _RULES).merges

    def merge_entities(
        self,
        keep_id: str,
        merge_ids: Sequence[str],
        *,
        project: str | None = None,
        reason: str = "manual",
        force: bool = False,
    ) -> MergeReport:
        """Fold objects into ``keep_id``: their relationships, chunk provenance and
        mentions move to it and they are deleted; undo with :meth:`split_entity`.

        Raises:
            NotFound: An id is not a live object.
            InvalidRequest: Incompatible types (a film and a person) without ``force``.
        """
        return merge_objects(
            self._writes(project),
            keep_id,
            merge_ids,
            compatible=_RULES.types_compatible,
            reason=reason,
            force=force,
        )

    def split_entity(
        self, keep_id: str, merged_id: str, *, project: str | None = None
    ) -> MergeReport:
        """Undo the merge of ``merged_id`` into ``keep_id``: it comes back with its
        relationships and mentions, and the kept object loses what it brought.

        Raises:
            NotFound: ``merged_id`` was not merged into ``keep_id``.
        """
        return split_object(self._writes(project), keep_id, merged_id)
