"""Communities of a project's graph: hierarchical Leiden detection, pure (no store).

:func:`detect_communities` turns weighted edges into levels of communities
(docs/communities.md); :func:`compare_communities` and :func:`redetect_communities`
say which communities changed enough after an edit to need a new report.
"""

from __future__ import annotations

from kgsearch.communities.detect import (
    DEFAULT_MAX_CLUSTER_SIZE,
    DEFAULT_SEED,
    Community,
    Detection,
    community_id,
    detect_communities,
)
from kgsearch.communities.incremental import (
    CommunityChanges,
    compare_communities,
    redetect_communities,
)

__all__ = [
    "DEFAULT_MAX_CLUSTER_SIZE",
    "DEFAULT_SEED",
    "Community",
    "CommunityChanges",
    "Detection",
    "community_id",
    "compare_communities",
    "detect_communities",
    "redetect_communities",
]
