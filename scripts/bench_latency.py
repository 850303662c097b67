"""Search latency benchmarks (p50/p95, excluding query embedding) and ANN recall.

Usage: python scripts/bench_latency.py [--part metaqa|scale|all] [--queries 300]
       [--scale-relationships 1000000]

* metaqa — unified search over the full MetaQA graph (43k objects, 129k relationships,
  embedded with the bundled model; built by bench_quality.py if missing), with
  MetaQA questions as queries; ANN recall@10 of the relationship leg against exact.
* scale  — 1M relationships among 100k objects with synthetic clustered vectors
  (allowed for this scale test): unified search p50/p95 and ANN recall@10.
Peak memory (RSS) is reported for each.
"""

from __future__ import annotations

import argparse
import random
import resource
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
from bench_quality import ensure_full_db, metaqa_questions
from benchdoc import table, write_section

from kgsearch import Engine, Kind, SearchRequest, connect
from kgsearch.store.base import EmbeddingResult, ObjectRow, RelationshipRow
from kgsearch.store.sqlite import SQLiteStore
from kgsearch.testing import FakeEmbedder
from kgsearch.text import text_hash


def percentile(values: list[float], q: float) -> float:
    """The q-quantile (0..1) by nearest rank."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def rss_mb() -> float:
    """Peak resident memory of this process so far."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def recall_at_10(
    approx: SQLiteStore, exact: SQLiteStore, kind: Kind, queries: list[np.ndarray]
) -> float:
    """Mean share of the fast path's top 10 that belong to the exact top 10 (a hit tied
    with the exact 10th score counts: among equal scores any order is exact)."""
    total = 0.0
    for q in queries:
        fast = approx.vector_search("default", kind, q, limit=10)
        truth = exact.vector_search("default", kind, q, limit=10)
        kth = truth[-1][1] if truth else 0.0
        ids = {i for i, _ in truth}
        total += sum(1 for i, s in fast if i in ids or s >= kth - 1e-5) / 10
    return total / len(queries)


def timed_searches(engine: Engine, requests: list[SearchRequest]) -> dict[str, list[float]]:
    """Per-request timings from the response metadata (query embedding excluded)."""
    out: dict[str, list[float]] = {"total": [], "relationships": [], "objects": []}
    for request in requests:
        meta = engine.search(request).metadata["executionTime"]
        out["total"].append(meta["totalMs"] - meta["embedQueryMs"])
        out["relationships"].append(meta.get("relationshipSearchMs", 0.0))
        out["objects"].append(meta.get("graphSearchMs", 0.0))
    return out


def summary(label: str, timings: dict[str, list[float]]) -> list[list[object]]:
    """Table rows of p50/p95 per timing."""
    return [
        [label, name, f"{statistics.median(v):.1f}", f"{percentile(v, 0.95):.1f}"]
        for name, v in timings.items()
    ]


def run_metaqa(n: int) -> str:
    """Unified search latency and ANN recall on the full MetaQA graph."""
    path = str(ensure_full_db())
    engine = Engine(connect(path))
    store = engine.store
    assert isinstance(store, SQLiteStore)
    started = time.perf_counter()
    for kind in (Kind.OBJECT, Kind.RELATIONSHIP):
        store.wait_for_index("default", kind, 900)
    warm = time.perf_counter() - started
    questions = [q for q, _ in metaqa_questions(n)]
    requests = [SearchRequest(query=q, limit=10) for q in questions]
    timed_searches(engine, requests[:20])  # warm caches
    timings = timed_searches(engine, requests)
    exact = SQLiteStore(path, ann_min_rows=None)
    vectors = [engine.embedder.embed_query(q) for q in questions[:200]]
    recall = {
        k.value: recall_at_10(store, exact, k, vectors) for k in (Kind.OBJECT, Kind.RELATIONSHIP)
    }
    exact_engine = Engine(exact, embedder=engine.embedder)
    exact_timings = timed_searches(exact_engine, requests[:100])
    exact.close()
    engine.close()
    return (
        f"{len(requests)} MetaQA questions, unified search (objects + relationships, "
        "vector + BM25 each, RRF), limit 10, after warm-up. Times exclude query "
        "embedding (reported separately by the API as embedQueryMs).\n\n"
        + table(
            ["index", "timing", "p50 ms", "p95 ms"],
            summary("default (int8 scan)", timings)
            + summary("float32 product only", exact_timings),
        )
        + "\n\nRecall@10 of the default vector path against the float32 product (200 "
        f"queries, ties counted): objects {recall['object']:.3f}, relationships "
        f"{recall['relationship']:.3f}. Loading the vectors after opening the store took "
        f"{warm:.1f} s. Peak RSS: {rss_mb():,.0f} MB.\n"
    )


def build_scale(path: str, n_rel: int, n_obj: int, dims: int, seed: int = 7) -> None:
    """Synthetic graph: n_obj objects, n_rel relationships, clustered unit vectors."""
    rng = np.random.default_rng(seed)
    words = [f"w{i}" for i in range(5000)]
    store = SQLiteStore(path)
    store.set_embedding_model("fake:384", dims)
    centers = rng.standard_normal((1000, dims)).astype(np.float32)
    with store.bulk_load():
        rows = []
        for i in range(n_obj):
            text = f"[Type: #thing] object {i} {random.Random(i).choice(words)}"
            rows.append(
                ObjectRow(
                    f"o{i}",
                    "Thing",
                    f"k{i}",
                    (),
                    {"name": f"object {i}"},
                    (),
                    text,
                    text_hash(text),
                    1,
                )
            )
        store.upsert_objects("default", rows, return_ids=False)
        r = random.Random(seed)
        for start in range(0, n_rel, 50_000):
            batch = []
            for i in range(start, min(n_rel, start + 50_000)):
                text = " ".join(r.choice(words) for _ in range(4))
                batch.append(
                    RelationshipRow(
                        f"r{i}",
                        "LINKS",
                        f"o{r.randrange(n_obj)}",
                        f"o{r.randrange(n_obj)}",
                        None,
                        {},
                        1.0,
                        None,
                        None,
                        None,
                        (),
                        text,
                        text_hash(text),
                        1,
                    )
                )
            store.upsert_relationships("default", batch)
    for kind, count, prefix in ((Kind.OBJECT, n_obj, "o"), (Kind.RELATIONSHIP, n_rel, "r")):
        texts = {row.id: row.embedding.text for row in store.iter_rows("default", kind.value)}
        for start in range(0, count, 20_000):
            ids = [f"{prefix}{i}" for i in range(start, min(count, start + 20_000))]
            assign = rng.integers(0, len(centers), len(ids))
            vecs = centers[assign] + 0.35 * rng.standard_normal((len(ids), dims)).astype(np.float32)
            vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
            store.complete(
                kind,
                [
                    EmbeddingResult("default", i, texts[i] or "", text_hash(texts[i] or ""), v)
                    for i, v in zip(ids, vecs, strict=True)
                ],
                model="fake:384",
                dims=dims,
                text_version=1,
                elapsed_ms=0.0,
            )
    store.close()


def run_scale(n_queries: int, n_rel: int) -> str:
    """p50/p95 and ANN recall at 1M relationships with synthetic vectors."""
    dims = 384
    with tempfile.TemporaryDirectory() as tmp:
        path = str(Path(tmp) / "scale.db")
        started = time.perf_counter()
        build_scale(path, n_rel, n_rel // 10, dims)
        build_s = time.perf_counter() - started
        store = SQLiteStore(path)
        started = time.perf_counter()
        for kind in (Kind.OBJECT, Kind.RELATIONSHIP):
            store.wait_for_index("default", kind, 3600)
        index_s = time.perf_counter() - started
        rng = np.random.default_rng(11)
        rel_vectors = store.vectors_cache.entry(store.db, "default", Kind.RELATIONSHIP).matrix
        picks = rng.integers(0, rel_vectors.shape[0], n_queries)
        queries = rel_vectors[picks] + 0.2 * rng.standard_normal((n_queries, dims)).astype(
            np.float32
        )
        queries /= np.linalg.norm(queries, axis=1, keepdims=True)
        engine = Engine(store, embedder=_FixedEmbedder(queries))
        requests = [
            SearchRequest(query=f"w{(7 * i) % 5000} w{(13 * i + 5) % 5000}", limit=10)
            for i in range(n_queries)
        ]
        timed_searches(engine, requests[:10])
        engine.embedder.reset()  # type: ignore[attr-defined]
        timings = timed_searches(engine, requests)
        exact = SQLiteStore(path, ann_min_rows=None)
        recall = recall_at_10(store, exact, Kind.RELATIONSHIP, list(queries[:200]))
        exact.close()
        engine.close()
    return (
        f"{n_rel:,} relationships and {n_rel // 10:,} objects, 384-d synthetic "
        "clustered unit vectors (1,000 Gaussian clusters), synthetic triplet texts in "
        f"the FTS index; {n_queries} unified searches (vector + BM25 on both scopes, "
        "RRF), limit 10.\n\n"
        + table(["index", "timing", "p50 ms", "p95 ms"], summary("HNSW", timings))
        + f"\n\nANN recall@10 vs exact on the relationship leg (200 queries): "
        f"**{recall:.3f}**. Building the store took {build_s:.0f} s; loading vectors and "
        f"building both HNSW indexes {index_s:.0f} s. Peak RSS: {rss_mb():,.0f} MB."
    )


class _FixedEmbedder(FakeEmbedder):
    """Returns pre-made query vectors in order (synthetic scale test only)."""

    def __init__(self, queries: np.ndarray) -> None:
        super().__init__(384)
        self._queries = queries
        self._next = 0

    @property
    def model_id(self) -> str:
        return "fake:384"

    def reset(self) -> None:
        self._next = 0

    def embed_query(self, text: str) -> np.ndarray:
        vector = self._queries[self._next % len(self._queries)]
        self._next += 1
        return vector


def main() -> None:
    """Run the chosen parts and write docs/benchmarks.md."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", choices=["metaqa", "scale", "all"], default="all")
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--scale-relationships", type=int, default=1_000_000)
    args = parser.parse_args()
    if args.part in ("metaqa", "all"):
        body = run_metaqa(args.queries)
        print(body)
        write_section(
            "latency-metaqa",
            "Speed: unified search on the full MetaQA graph",
            f"python scripts/bench_latency.py --part metaqa --queries {args.queries}",
            body,
        )
    if args.part in ("scale", "all"):
        body = run_scale(args.queries, args.scale_relationships)
        print(body)
        write_section(
            "latency-scale",
            "Speed: 1M relationships (synthetic vectors)",
            "python scripts/bench_latency.py --part scale --queries "
            f"{args.queries} --scale-relationships {args.scale_relationships}",
            body,
        )


if __name__ == "__main__":
    main()
