"""Search latency benchmarks (p50/p95, excluding query embedding) and ANN recall.

Usage: python scripts/bench_latency.py [--part metaqa|scale|prefilter|all] [--queries 300]
       [--passes 3] [--scale-relationships 1000000]

* metaqa — unified search over the full MetaQA graph (43k objects, 129k relationships,
  embedded with the bundled model; built by bench_quality.py if missing), with
  MetaQA questions as queries; ANN recall@10 of the relationship leg against exact.
* scale  — 1M relationships among 100k objects made of perturbed copies of the full
  MetaQA graph (real texts, real vectors plus noise; built once into bench-data/), real
  MetaQA questions as queries: unified search p50/p95 and recall@10 against exact.
* prefilter — cheaper first passes over the full MetaQA graph's vectors (1-bit codes,
  principal axes), measured and not adopted: each pass's CPU time against today's int8
  scan, and how many rows each must keep for the exact top 30 of real questions
  (``vector_prefilters.py``); not part of ``all``.
Peak memory (RSS) is reported for each.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import time
from pathlib import Path

import numpy as np
import numpy.typing as npt
from bench_quality import FULL_DB, ensure_full_db, metaqa_questions
from benchdoc import table, write_section
from replay import Replay
from vector_prefilters import kernel_times, prefilter_depths

from kgsearch import Engine, Kind, SearchRequest, connect
from kgsearch.embed import create_embedder
from kgsearch.store.ann import ANN_MIN_ROWS, Int8Scan
from kgsearch.store.base import EmbeddingResult, ObjectRow, RelationshipRow
from kgsearch.store.sqlite import SQLiteStore
from kgsearch.text import text_hash

# Noise norm added to each further copy's real vector in the scale graph.
NOISE = 0.5


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


def ivf_recall(
    matrix: np.ndarray, queries: list[np.ndarray], lists: int, probes: list[int], seed: int = 0
) -> list[tuple[int, float, float]]:
    """(nprobe, recall@10, share of rows scanned) of an IVF partition (spherical k-means
    on a sample, 10 rounds; scan the nprobe lists nearest the query, exact float32
    inside them): the alternative to a full scan that was measured and not adopted."""
    rng = np.random.default_rng(seed)
    sample = matrix[rng.choice(matrix.shape[0], min(matrix.shape[0], 64 * lists), replace=False)]
    centroids = sample[rng.choice(sample.shape[0], lists, replace=False)].copy()
    for _ in range(10):
        assign = np.argmax(sample @ centroids.T, axis=1)
        sums = np.zeros_like(centroids)
        np.add.at(sums, assign, sample)
        empty = np.bincount(assign, minlength=lists) == 0
        sums[empty] = sample[rng.choice(sample.shape[0], int(empty.sum()))]
        centroids = sums / np.linalg.norm(sums, axis=1, keepdims=True)
    assign = np.concatenate(
        [
            np.argmax(matrix[i : i + 65536] @ centroids.T, axis=1)
            for i in range(0, len(matrix), 65536)
        ]
    )
    out = []
    for nprobe in probes:
        found = scanned = 0.0
        for q in queries:
            exact = matrix @ q
            top = np.argsort(-exact)[:10]
            near = np.argsort(-(centroids @ q))[:nprobe]
            rows = np.flatnonzero(np.isin(assign, near))
            best = rows[np.argsort(-exact[rows])[:10]]
            found += sum(1 for r in best if r in set(top) or exact[r] >= exact[top[-1]] - 1e-5)
            scanned += len(rows) / len(matrix)
        out.append((nprobe, found / (10 * len(queries)), scanned / len(queries)))
    return out


def timed_searches(
    engine: Engine, requests: list[SearchRequest], embedded: dict[str, float] | None = None
) -> dict[str, list[float]]:
    """Per-request timings from the response metadata. The engine replays each
    question's vector (scripts/replay.py), so ``total`` is the whole search less the
    question's own embedding, and any other text the search embeds (the anchored leg's
    rest of the question) counts; end to end adds the question's embedding, timed once
    beforehand (``embedded``)."""
    out: dict[str, list[float]] = {
        "total": [],
        "relationships": [],
        "objects": [],
        "end to end (with query embedding)": [],
    }
    for request in requests:
        meta = engine.search(request).metadata["executionTime"]
        out["total"].append(meta["totalMs"])
        out["relationships"].append(meta.get("relationshipSearchMs", 0.0))
        out["objects"].append(meta.get("graphSearchMs", 0.0))
        question = (embedded or {}).get(request.query, 0.0)
        out["end to end (with query embedding)"].append(question + meta["totalMs"])
    return out


def replaying(path: str, questions: list[str]) -> tuple[Engine, dict[str, float]]:
    """An engine on ``path`` whose embedder replays the questions' vectors, made once by
    the bundled model beforehand, and each question's embedding time (ms)."""
    real = create_embedder("bundled")
    real.embed_query("warm up")
    vectors: dict[str, np.ndarray] = {}
    embedded: dict[str, float] = {}
    for question in questions:
        started = time.perf_counter()
        vectors[question] = real.embed_query(question)
        embedded[question] = (time.perf_counter() - started) * 1000
    return Engine(connect(path), embedder=Replay(real, vectors)), embedded  # type: ignore[arg-type]


def verdict(p95: float, limit: float, recall: float | None = None, floor: float = 0.0) -> str:
    """One line saying whether this run met the target."""
    met = p95 <= limit and (recall is None or recall >= floor)
    target = f"total p95 ≤ {limit:.0f} ms" + (
        f", recall@10 ≥ {floor}" if recall is not None else ""
    )
    measured = f"p95 {p95:.1f} ms" + (f", recall {recall:.3f}" if recall is not None else "")
    return f"**Target ({target}): {'met' if met else 'missed'} in this run** ({measured})."


def summary(label: str, timings: dict[str, list[float]]) -> list[list[object]]:
    """Table rows of p50/p95 per timing."""
    return [
        [label, name, f"{statistics.median(v):.1f}", f"{percentile(v, 0.95):.1f}"]
        for name, v in timings.items()
    ]


def run_metaqa(n: int, passes: int) -> str:
    """Unified search latency and ANN recall on the full MetaQA graph."""
    path = str(ensure_full_db())
    questions = [q for q, _ in metaqa_questions(n)]
    engine, embedded = replaying(path, questions)
    store = engine.store
    assert isinstance(store, SQLiteStore)
    started = time.perf_counter()
    for kind in (Kind.OBJECT, Kind.RELATIONSHIP):
        store.wait_for_index("default", kind, 900)
    warm = time.perf_counter() - started
    requests = [SearchRequest(query=q, limit=10) for q in questions]
    timed_searches(engine, requests[:20])  # warm caches
    runs = [timed_searches(engine, requests, embedded) for _ in range(passes)]
    timings = {name: [t for run in runs for t in run[name]] for name in runs[0]}
    per_pass = ", ".join(f"{percentile(run['total'], 0.95):.1f}" for run in runs)
    exact = SQLiteStore(path, ann_min_rows=None)
    vectors = [engine.embedder.embed_query(q) for q in questions[:200]]
    recall = {
        k.value: recall_at_10(store, exact, k, vectors) for k in (Kind.OBJECT, Kind.RELATIONSHIP)
    }
    exact_engine = Engine(exact, embedder=engine.embedder)
    exact_timings = timed_searches(exact_engine, requests[:100], embedded)
    rel_matrix = exact.vectors_cache.entry(exact.db, "default", Kind.RELATIONSHIP).matrix
    ivf = ivf_recall(rel_matrix, vectors, 256, [8, 32, 128])
    exact.close()
    engine.close()
    return (
        f"{len(requests)} MetaQA questions searched {passes} times over (p50/p95 of all "
        f"{passes * len(requests)} searches; the p95 of each pass: {per_pass} ms), unified "
        "search (objects + relationships, vector + BM25 each, RRF), limit 10, after "
        "warm-up. Times exclude the question's embedding except in the end-to-end row: "
        "the question's vector is replayed (made once by the bundled model beforehand, "
        "scripts/replay.py) and the whole search timed, so any other text a search "
        "embeds (the anchored leg's rest of a new question) counts; end to end adds the "
        "question's embedding as timed beforehand. The per-scope rows add up each leg's "
        "own time; the BM25 legs run beside the vector legs, so the two scopes overlap and "
        "can sum to more than the total. The float32 rows are one pass over the first "
        "100 questions.\n\n"
        + table(
            ["index", "timing", "p50 ms", "p95 ms"],
            summary("default (int8 scan)", timings)
            + summary("float32 product only", exact_timings),
        )
        + "\n\n"
        + verdict(percentile(timings["total"], 0.95), 20)
        + " Recall@10 of the default vector path against the float32 product (200 "
        f"queries, ties counted): objects {recall['object']:.3f}, relationships "
        f"{recall['relationship']:.3f}. Loading the vectors after opening the store took "
        f"{warm:.1f} s. Peak RSS: {rss_mb():,.0f} MB.\n\n"
        "Not adopted: an IVF partition of the relationship vectors (256 k-means lists; "
        "recall@10 against the float32 product over the same 200 questions, by lists "
        "probed): "
        + "; ".join(
            f"{probe} lists: recall {r:.3f}, {share:.0%} of rows scanned" for probe, r, share in ivf
        )
        + ". Questions are far from the triplet texts they match, so their true neighbours "
        "sit in lists far from the query.\n"
    )


def run_prefilter(n: int) -> str:
    """Prefilters before the int8 scan on the full MetaQA graph: cost and depth needed."""
    path = str(ensure_full_db())
    engine = Engine(connect(path))
    store = engine.store
    assert isinstance(store, SQLiteStore)
    questions = [q for q, _ in metaqa_questions(n)]
    queries = np.asarray([engine.embedder.embed_query(q) for q in questions], dtype=np.float32)
    rows: list[list[object]] = []
    same: list[str] = []
    sizes: dict[str, int] = {}
    for kind in (Kind.OBJECT, Kind.RELATIONSHIP):
        matrix = store.vectors_cache.entry(store.db, "default", kind).matrix
        sizes[kind.value] = matrix.shape[0]
        scan, agree = Int8Scan(matrix), 0
        for q in queries:
            exact = np.argsort(-(matrix @ q), kind="stable")[:30]
            agree += set(scan.search(q, 30)[0].tolist()) == set(exact.tolist())
        same.append(f"{kind.value}s {agree / len(queries):.3f}")
        for label, depths in prefilter_depths(matrix, queries).items():
            p50, p99, p995 = (float(np.percentile(depths, q)) for q in (50, 99, 99.5))
            row: list[object] = [f"{kind.value}s ({matrix.shape[0]:,})", label]
            row += [f"{v:,.0f}" for v in (p50, p99, p995, max(depths))]
            rows.append([*row, f"{p995 / matrix.shape[0]:.0%}"])
    times = kernel_times(sizes["relationship"])
    engine.close()
    return (
        f"{len(queries)} MetaQA questions (bundled model). A prefilter scores every row "
        "with a cheaper code, keeps the best N and re-scores them; N must hold the exact "
        "top 30 (the vector legs' depth in a unified search). Rows the code scores at least "
        "as high as the lowest of the exact top 30, per question:\n\n"
        + table(["collection", "code", "p50", "p99", "p99.5", "max", "p99.5 share"], rows)
        + "\n\nCPU time of one pass over "
        f"{sizes['relationship']:,} random rows (median of 15 turns, thread CPU time):\n\n"
        + table(["pass", "ms"], [[name, f"{ms:.2f}"] for name, ms in times.items()])
        + "\n\nToday's int8 scan (int8 products, 120 best re-scored in float32) returns the "
        "exact top 30 for this share of the questions: "
        + ", ".join(same)
        + ". numkong's products cost about the same per row whatever the width (a fixed "
        "cost per row dominates), so a narrower code saves little of the pass, and the "
        "codes that are cheap per row need N in the thousands to tens of thousands. "
        "Not adopted.\n"
    )


def _perturbed(
    matrix: np.ndarray, rows: np.ndarray, copy: int, noise: float, seed: int
) -> np.ndarray:
    """Copy ``copy`` of the given rows: copy 0 is the real vector, copy c ≥ 1 adds
    isotropic Gaussian noise of expected norm ``noise`` (seeded by (seed, copy)), then
    renormalises (cosine to the original about 1/sqrt(1 + noise²))."""
    vectors: npt.NDArray[np.float32] = matrix[rows].astype(np.float32)
    if copy == 0:
        return vectors
    rng = np.random.default_rng([seed, copy, int(rows[0])])
    dims = vectors.shape[1]
    vectors = vectors + (noise / np.sqrt(dims)) * rng.standard_normal(vectors.shape).astype(
        np.float32
    )
    unit: npt.NDArray[np.float32] = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    return unit


def build_scale(path: str, n_rel: int, n_obj: int, noise: float = NOISE, seed: int = 7) -> None:
    """Realistic scale graph: n_obj objects and n_rel relationships made of copies of the
    full MetaQA graph (copy c of row i has id ``o{i}~c``/``r{i}~c``, the row's real text
    and its real MiniLM vector perturbed as in :func:`_perturbed`); a relationship copy
    links the same copy number of its endpoints (modulo the object copies made)."""
    source = SQLiteStore(str(ensure_full_db()))
    info = source.info()
    assert info.embedding_model and info.dims
    objects = list(source.iter_rows("default", "object"))
    rels = list(source.iter_rows("default", "relationship"))
    obj_entry = source.vectors_cache.entry(source.db, "default", Kind.OBJECT)
    rel_entry = source.vectors_cache.entry(source.db, "default", Kind.RELATIONSHIP)
    obj_pos = {id: i for i, id in enumerate(obj_entry.ids)}
    rel_pos = {id: i for i, id in enumerate(rel_entry.ids)}
    objects = [o for o in objects if o.id in obj_pos]
    rels = [r for r in rels if r.id in rel_pos]
    obj_copies = -(-n_obj // len(objects))
    store = SQLiteStore(path)
    store.set_embedding_model(info.embedding_model, info.dims)
    with store.bulk_load():
        rows = []
        for i in range(n_obj):
            o, c = objects[i % len(objects)], i // len(objects)
            text = o.embedding.text or o.key
            rows.append(
                ObjectRow(
                    id=f"{o.id}~{c}", type=o.type, key=f"{o.key}~{c}", tags=o.tags,
                    properties=o.properties, labels=o.labels,
                    text=text, text_hash=text_hash(text), text_version=1,
                )
            )  # fmt: skip
        store.upsert_objects("default", rows, return_ids=False)
        for start in range(0, n_rel, 50_000):
            batch = []
            for i in range(start, min(n_rel, start + 50_000)):
                r, c = rels[i % len(rels)], i // len(rels)
                text = r.embedding.text or ""
                batch.append(
                    RelationshipRow(
                        id=f"{r.id}~{c}", type=r.type, source_id=f"{r.source_id}~{c % obj_copies}",
                        target_id=f"{r.target_id}~{c % obj_copies}", label=r.label,
                        properties=r.properties, weight=r.weight, valid_from=None,
                        valid_to=None, description=None, source_chunks=(),
                        text=text, text_hash=text_hash(text), text_version=1,
                    )
                )  # fmt: skip
            store.upsert_relationships("default", batch, endpoints_checked=True)
    plan = (
        (Kind.OBJECT, objects, obj_entry.matrix, obj_pos, n_obj),
        (Kind.RELATIONSHIP, rels, rel_entry.matrix, rel_pos, n_rel),
    )
    for kind, items, matrix, pos, count in plan:
        for start in range(0, count, 20_000):
            stop = min(count, start + 20_000)
            results = []
            for copy in range(start // len(items), (stop - 1) // len(items) + 1):
                lo, hi = max(start, copy * len(items)), min(stop, (copy + 1) * len(items))
                chosen = items[lo - copy * len(items) : hi - copy * len(items)]
                vectors = _perturbed(
                    matrix, np.array([pos[x.id] for x in chosen]), copy, noise, seed
                )
                for x, v in zip(chosen, vectors, strict=True):
                    text = x.embedding.text or getattr(x, "key", "") or ""
                    results.append(
                        EmbeddingResult("default", f"{x.id}~{copy}", text, text_hash(text), v)
                    )
            store.complete(
                kind, results, model=info.embedding_model, dims=info.dims, text_version=1,
                elapsed_ms=0.0,
            )  # fmt: skip
    store.close()
    source.close()


def scale_db(n_rel: int) -> Path:
    """The scale store for ``n_rel`` relationships, built once and kept in bench-data/."""
    path = FULL_DB.parent / f"scale-{n_rel}-noise{NOISE}.db"
    if not path.exists():
        partial = path.with_suffix(".partial")
        partial.unlink(missing_ok=True)
        build_scale(str(partial), n_rel, n_rel // 10)
        partial.rename(path)
    return path


def run_scale(n_queries: int, n_rel: int) -> str:
    """p50/p95, recall and memory at 1M relationships built from the real MetaQA graph."""
    started = time.perf_counter()
    path = str(scale_db(n_rel))
    build_s = time.perf_counter() - started
    questions = [q for q, _ in metaqa_questions(n_queries)]
    engine, embedded = replaying(path, questions)
    store = engine.store
    assert isinstance(store, SQLiteStore)
    started = time.perf_counter()
    for kind in (Kind.OBJECT, Kind.RELATIONSHIP):
        store.wait_for_index("default", kind, 7200)
    index_s = time.perf_counter() - started
    requests = [SearchRequest(query=q, limit=10) for q in questions]
    timed_searches(engine, requests[:20])
    timings = timed_searches(engine, requests, embedded)
    rss_search = rss_mb()
    exact = SQLiteStore(path, ann_min_rows=None)
    vectors = [engine.embedder.embed_query(q) for q in questions[:200]]
    recall = {
        k.value: recall_at_10(store, exact, k, vectors) for k in (Kind.OBJECT, Kind.RELATIONSHIP)
    }
    ann = store.vectors_cache.entry(store.db, "default", Kind.RELATIONSHIP).ann
    how = (
        "loaded from the file a previous run saved (delete `bench-data/*.db.ann/` to time a build)"
        if ann is not None and ann.loaded
        else "built"
    )
    beams = ""
    if ann is not None:
        default = ann.expansion_search
        found = []
        for beam in (256, default):
            ann.expansion_search = beam
            found.append(f"{recall_at_10(store, exact, Kind.RELATIONSHIP, vectors):.3f} at {beam}")
        ann.expansion_search = default
        beams = f" HNSW recall@10 by search beam (ef): {', '.join(found)}."
    exact.close()
    replay = engine.embedder
    engine.close()
    scan = SQLiteStore(path, ann_min_rows=n_rel + 1)  # int8 scan, no HNSW
    scan_timings = timed_searches(Engine(scan, embedder=replay), requests[:150], embedded)
    scan.close()
    entry = "HNSW" if n_rel >= ANN_MIN_ROWS else "int8 scan"
    return (
        f"{n_rel:,} relationships and {n_rel // 10:,} objects made of copies of the full "
        "MetaQA graph: copy 0 is the real graph (real texts, real MiniLM vectors); each "
        "further copy repeats every row's text and adds Gaussian noise of expected norm "
        f"{NOISE} to its real vector, renormalised (cosine to the original ≈ "
        f"{1 / np.sqrt(1 + NOISE**2):.2f}); see `build_scale()` in the script. Repeated "
        "texts multiply every word's document frequency by the number of copies, so the "
        "BM25 legs here are slower than on 1M distinct texts. Queries: "
        f"{n_queries} real MetaQA questions embedded with the bundled model; unified search "
        "(vector + BM25 on objects and relationships, RRF), limit 10, after warm-up, "
        "query embedding excluded (per-scope rows overlap, as in the MetaQA section). "
        "The last rows are the same store with the HNSW index "
        "turned off (exact int8 scan), first 150 questions.\n\n"
        + table(
            ["index", "timing", "p50 ms", "p95 ms"],
            summary(f"default ({entry})", timings) + summary("int8 scan only", scan_timings),
        )
        + "\n\n"
        + verdict(percentile(timings["total"], 0.95), 50, recall["relationship"], 0.95)
        + " Recall@10 of the default vector path against the float32 product (200 "
        f"queries, ties counted): objects {recall['object']:.3f}, relationships "
        f"{recall['relationship']:.3f} (the int8 scan: exact top 10 on MetaQA).{beams} "
        f"Building the store (once; it is kept in bench-data/) took {build_s:.0f} s in this "
        f"run; loading the vectors and the HNSW index ({how}) {index_s:.0f} s. Peak RSS after "
        f"the timed searches: {rss_search:,.0f} MB (one store, with its indexes); "
        f"{rss_mb():,.0f} MB at the end (a float32-only and a scan-only store opened too).\n"
    )


def main() -> None:
    """Run the chosen parts and write docs/benchmarks.md."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", choices=["metaqa", "scale", "prefilter", "all"], default="all")
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--scale-relationships", type=int, default=1_000_000)
    parser.add_argument(
        "--passes",
        type=int,
        default=3,
        help="times the MetaQA questions are searched (one pass is noisy on a shared machine)",
    )
    args = parser.parse_args()
    if args.passes < 1:
        parser.error("--passes must be at least 1")
    if args.part in ("metaqa", "all"):
        body = run_metaqa(args.queries, args.passes)
        print(body)
        write_section(
            "latency-metaqa",
            "Speed: unified search on the full MetaQA graph",
            f"python scripts/bench_latency.py --part metaqa --queries {args.queries} "
            f"--passes {args.passes}",
            body,
        )
    if args.part == "prefilter":
        body = run_prefilter(args.queries)
        print(body)
        write_section(
            "latency-prefilter",
            "Speed: prefilters before the int8 vector scan (not adopted)",
            f"python scripts/bench_latency.py --part prefilter --queries {args.queries}",
            body,
        )
    if args.part in ("scale", "all"):
        body = run_scale(args.queries, args.scale_relationships)
        print(body)
        write_section(
            "latency-scale",
            "Speed: 1M relationships (perturbed copies of MetaQA)",
            "python scripts/bench_latency.py --part scale --queries "
            f"{args.queries} --scale-relationships {args.scale_relationships}",
            body,
        )


if __name__ == "__main__":
    main()
