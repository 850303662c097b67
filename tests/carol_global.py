"""A store of *A Christmas Carol*'s communities with the real reports gpt-3.5-turbo wrote
for them, and the real global-search replies, for the global search tests.

Everything comes from nano-graphrag's run over the book in the eval set
``christmas-carol-graphrag/nano-graphrag-fork-dickens`` (github.com/hhy-huang/
nano-graphrag @ e3a575f4, MIT License, Copyright (c) 2024 Gustavo Ye; the book is
Project Gutenberg eBook #24022, public domain in the US):

- the merged graph (``graph_chunk_entity_relation.graphml``): 374 entities, 186
  relationships, and each entity's communities (``clusters``: 14 of level 0, 18 of
  level 1), which become the store's communities;
- the response cache (``kv_store_llm_response_cache.json``): the 32 community reports
  gpt-3.5-turbo wrote for those 32 communities, its one global-search map reply (key
  points with importance scores) and the reduce answer written from it.

The cache keys a reply by an md5 of its prompt, which names the community's members in
a table we do not have, so each report is matched to the community whose member names
it mentions most (greedily, best match first). The map and reduce replies answered
nano-graphrag's "What are the top themes in this story?" over all of the reports.
"""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from xml.etree import ElementTree

from eval_data import EVAL_DATA

from kgsearch import Engine
from kgsearch.communities.reports import Material, parse_report
from kgsearch.community_values import CommunityBuild, CommunityRecord
from kgsearch.lifecycle.communities import REPORT_TEXT_VERSION
from kgsearch.model import ObjectIn, ObjectRef, RelationshipIn
from kgsearch.text.enrich import text_hash

__all__ = ["MAP_REPLY", "QUESTION", "REDUCE_REPLY", "REPORTS", "load_carol"]

FORK = EVAL_DATA / "christmas-carol-graphrag" / "nano-graphrag-fork-dickens"
QUESTION = "What are the top themes in this story?"
_NS = {"g": "http://graphml.graphdrawing.org/xmlns"}


def _cache() -> list[dict[str, str]]:
    return list(json.loads((FORK / "kv_store_llm_response_cache.json").read_text("utf-8")).values())


_ENTRIES = _cache()
REPORTS = [e["return"] for e in _ENTRIES if '"findings"' in e["return"]]
"""The 32 report replies, in file order."""
MAP_REPLY = next(e["return"] for e in _ENTRIES if '"points"' in e["return"])
"""The map reply: five key points with importance scores (90 to 70)."""
REDUCE_REPLY = next(e["return"] for e in _ENTRIES if "Top Themes" in e["return"])
"""The reduce answer written from the map's points."""


def _graph() -> tuple[dict[str, dict[str, str]], list[dict[str, str]]]:
    """Nodes (name → attributes) and edges of the merged graph."""
    root = ElementTree.parse(FORK / "graph_chunk_entity_relation.graphml").getroot()
    keys = {k.get("id", ""): k.get("attr.name", "") for k in root.findall("g:key", _NS)}

    def attrs(element: ElementTree.Element) -> dict[str, str]:
        return {keys[d.get("key", "")]: d.text or "" for d in element.findall("g:data", _NS)}

    graph = root.find("g:graph", _NS)
    assert graph is not None
    nodes = {n.get("id", "").strip('"'): attrs(n) for n in graph.findall("g:node", _NS)}
    edges = [
        {"source": e.get("source", "").strip('"'), "target": e.get("target", "").strip('"')}
        | attrs(e)
        for e in graph.findall("g:edge", _NS)
    ]
    return nodes, edges


def load_carol(engine: Engine) -> dict[str, str]:
    """Write the graph, its 32 communities and their real reports into ``engine``'s
    project; returns report title → community id."""
    nodes, edges = _graph()
    engine.add_objects(
        [
            ObjectIn(
                type=(a.get("entity_type") or "entity").strip('"').lower() or "entity",
                key=name,
                properties={"description": a.get("description", "").replace("<SEP>", " ")},
            )
            for name, a in nodes.items()
        ]
    )
    engine.add_relationships(
        [
            RelationshipIn(
                type="RELATED_TO",
                source=ObjectRef(type=_type(nodes[e["source"]]), key=e["source"]),
                target=ObjectRef(type=_type(nodes[e["target"]]), key=e["target"]),
                weight=float(e.get("weight") or 1.0),
                description=e.get("description", "").replace("<SEP>", " "),
            )
            for e in edges
        ]
    )
    project = engine.project
    store = engine.store
    ids = {(o.type, o.key): o.id for o in store.list_rows(project, "object", limit=1000).items}
    members: dict[tuple[int, int], list[str]] = defaultdict(list)
    for name, a in nodes.items():
        for cluster in json.loads(a.get("clusters") or "[]"):
            members[(cluster["level"], cluster["cluster"])].append(name)
    by_id = {name: ids[(_type(a), name)] for name, a in nodes.items()}
    rels = {
        frozenset((r.source_id, r.target_id)): r.weight
        for r in store.list_rows(project, "relationship", limit=1000).items
    }
    records: dict[tuple[int, int], CommunityRecord] = {}
    for level in (0, 1):
        for key in sorted(k for k in members if k[0] == level):
            ids_in = sorted(by_id[n] for n in members[key])
            parent = None
            if level == 1:
                parent = next(
                    records[p].id
                    for p in records
                    if p[0] == 0 and set(ids_in) <= set(records[p].members)
                )
            inside = set(ids_in)
            rank = sum(w for pair, w in rels.items() if pair <= inside)
            digest = hashlib.sha256("|".join(ids_in).encode()).hexdigest()[:16]
            records[key] = CommunityRecord(
                id=f"c{level}-{digest}",
                level=level,
                parent=parent,
                members=tuple(ids_in),
                size=len(ids_in),
                rank=rank,
                build_id="carol",
            )
    build = CommunityBuild(
        id="carol",
        generation=1,
        seed=0,
        max_cluster_size=10,
        resolution=1.0,
        modularity=0.0,
        levels=2,
        communities=len(records),
        nodes=len(nodes),
        isolated=0,
        graph_digest=store.graph_digest(project),
    )
    store.replace_communities(project, build, list(records.values()))
    matched = _match(REPORTS, {k: members[k] for k in records})
    titles: dict[str, str] = {}
    written = []
    for key, reply in matched.items():
        record = records[key]
        material = Material(community=record, members=[], edges=[])
        report = parse_report(reply, material, {}, {})
        text = report.text()
        written.append((report, text, text_hash(text), REPORT_TEXT_VERSION))
        titles[report.title] = record.id
    store.upsert_community_reports(project, written)
    return titles


def _type(attributes: dict[str, str]) -> str:
    return (attributes.get("entity_type") or "entity").strip('"').lower() or "entity"


def _match(
    replies: list[str], members: dict[tuple[int, int], list[str]]
) -> dict[tuple[int, int], str]:
    """Each community's report: the reply naming most of its members (share of its
    members named, then count), assigned greedily, best pair first."""
    texts = [r.upper() for r in replies]
    pairs = []
    for key, names in members.items():
        for i, text in enumerate(texts):
            named = sum(1 for n in names if n and n in text)
            pairs.append((named / len(names), named, key, i))
    pairs.sort(key=lambda p: (-p[0], -p[1], p[2], p[3]))
    found: dict[tuple[int, int], str] = {}
    used: set[int] = set()
    for _, _, key, i in pairs:
        if key not in found and i not in used:
            found[key] = replies[i]
            used.add(i)
    return found
