"""Side by side: kgsearch and LightRAG on the full MetaQA graph, the same vectors, one run.

Usage: python scripts/bench_peers.py [--questions 1000] [--no-write]
       [--lightrag-version 1.5.7]

LightRAG (``lightrag-hku``) is installed by this script into its own virtualenv,
bench-data/peers-venv/, and runs in a child process of that virtualenv (this same file,
``--child``) through its public API only: ``LightRAG(...)``, ``ainsert_custom_kg`` once
(the working directory is kept in bench-data/peers/ and reused while the graph is the
same), then ``aquery_data`` per question in ``global`` mode, which retrieves without a
model call, with the question given as both keyword lists so keyword extraction is
bypassed. The LLM function raises if it is ever called.

Same graph: every object and relationship of bench-data/metaqa-full.db (the full MetaQA
KB, built by bench_quality.py). LightRAG keeps one undirected edge per entity pair and
one entity per name, so the relationships of a pair become one LightRAG relationship
(its keywords the relation types, its description their kgsearch texts).

Same vectors: LightRAG's embedding function serves vectors from kgsearch's store, by
text: a description line that is a kgsearch text gets that row's stored vector (bundled
all-MiniLM-L6-v2 int8), an entity or relationship the mean of its lines' vectors, and a
question the vector kgsearch's own search embeds it to (``embed_query``), computed once
before the timed loop. Any other text fails the run.

Same questions as bench_quality.py's MetaQA part, the same answer hits@10: an answer
entity among the top 10 hits (kgsearch: an object hit or a relationship hit's
endpoints; LightRAG: the endpoints of the first 10 relationships of its context).
The systems take turns question by question (the order rotates), so load falls on each.
Times are per query, wall clock around the call, less the query embedding.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import logging
import os
import statistics
import subprocess
import sys
import time
import traceback
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "bench-data"
VENV = DATA / "peers-venv"
WORK = DATA / "peers"
LIGHTRAG_VERSION = "1.5.7"
LIMIT = 10
WARMUP = 20
UNIFIED = "kgsearch, unified search (default)"
RELATIONSHIPS = "kgsearch, relationships only"
PEER = "LightRAG, global mode"


class PeerError(Exception):
    """A failure with a message that says what to do next (shown without a traceback)."""


def percentile(values: list[float], q: float) -> float:
    """The q-quantile (0..1) by nearest rank, as bench_latency.py."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


# the LightRAG virtualenv ---------------------------------------------------------------------


def _venv_python() -> Path:
    return VENV / "bin" / "python"


def ensure_lightrag(version: str) -> Path:
    """The virtualenv's interpreter, with ``lightrag-hku==version`` installed in it."""
    python = _venv_python()
    if not python.exists():
        print(f"creating {VENV}", file=sys.stderr)
        made = subprocess.run(
            [sys.executable, "-m", "venv", str(VENV)], capture_output=True, text=True
        )
        if made.returncode:
            raise PeerError(f"could not create the virtualenv {VENV}:\n{made.stderr.strip()}")
    if _installed_version(python) != version:
        print(f"installing lightrag-hku=={version} into {VENV}", file=sys.stderr)
        pip = subprocess.run(
            [str(python), "-m", "pip", "install", "--quiet", f"lightrag-hku=={version}"],
            capture_output=True,
            text=True,
        )
        if pip.returncode or _installed_version(python) != version:
            said = (pip.stderr or pip.stdout).strip().splitlines()
            tail = "\n".join([line for line in said if not line.startswith("WARNING")][-6:])
            raise PeerError(
                f"pip could not install lightrag-hku=={version} into {VENV}:\n{tail}\n"
                "Check the version (--lightrag-version) and that PyPI is reachable."
            )
    print(f"using lightrag-hku {version} from {VENV}", file=sys.stderr)
    return python


def _installed_version(python: Path) -> str | None:
    found = subprocess.run(
        [str(python), "-c", "import importlib.metadata as m; print(m.version('lightrag-hku'))"],
        capture_output=True,
        text=True,
    )
    return found.stdout.strip() if found.returncode == 0 else None


# the graph and the vectors handed to LightRAG --------------------------------------------------


def export_graph(store: Any, questions: list[str], query_vectors: np.ndarray) -> tuple[int, int]:
    """Write WORK/graph.json (names, types, texts), WORK/vectors.npy (each text's stored
    vector) and WORK/queries.npy (each question's query vector); return the numbers of
    objects and relationships. The digest of graph and vectors names LightRAG's working
    directory, so a changed store is inserted anew."""
    from kgsearch import Kind

    objects = {o.id: o for o in store.iter_rows("default", "object")}
    vectors: dict[str, np.ndarray] = {}
    for kind in (Kind.OBJECT, Kind.RELATIONSHIP):
        entry = store.vectors_cache.entry(store.db, "default", kind)
        vectors.update(zip(entry.ids, entry.matrix, strict=True))
    texts: dict[str, int] = {}
    rows: list[np.ndarray] = []

    def text_of(row: Any) -> str:
        text = row.embedding.embedded_text
        if row.id not in vectors or not text:
            raise PeerError(
                f"{row.id} has no stored vector: embed the store first "
                "(python scripts/bench_quality.py --part metaqa builds it)"
            )
        if text not in texts:  # a repeated text keeps its first vector
            texts[text] = len(rows)
            rows.append(vectors[row.id])
        return str(text)

    entities: dict[str, dict[str, Any]] = {}
    for o in objects.values():
        entity = entities.setdefault(o.key, {"name": o.key, "types": [], "texts": []})
        entity["types"].append(o.type)
        entity["texts"].append(text_of(o))
    relationships = [
        {
            "head": objects[r.source_id].key,
            "tail": objects[r.target_id].key,
            "type": r.type,
            "text": text_of(r),
        }
        for r in store.iter_rows("default", "relationship")
    ]
    graph = {"entities": list(entities.values()), "relationships": relationships}
    matrix = np.stack(rows).astype(np.float32)
    digest = hashlib.sha256(json.dumps(graph, sort_keys=True).encode())
    digest.update(matrix.tobytes())
    WORK.mkdir(parents=True, exist_ok=True)
    payload = {**graph, "texts": list(texts), "questions": questions}
    payload["digest"] = digest.hexdigest()[:16]
    (WORK / "graph.json").write_text(json.dumps(payload), encoding="utf-8")
    np.save(WORK / "vectors.npy", matrix)
    np.save(WORK / "queries.npy", query_vectors.astype(np.float32))
    return len(objects), len(relationships)


# the child: LightRAG in its own virtualenv -------------------------------------------------------


class _Utf8Tokenizer:
    """Token counts for LightRAG's context budgets without tiktoken, whose encoding files
    are downloaded on first use (no network here): one token per UTF-8 byte, which
    over-counts, and the contexts here are far below the budgets either way."""

    def encode(self, content: str) -> list[int]:
        return list(content.encode("utf-8"))

    def decode(self, tokens: list[int]) -> str:
        return bytes(tokens).decode("utf-8", errors="ignore")


class _StoredVectors:
    """LightRAG's embedding function: vectors from kgsearch's store, by text."""

    def __init__(self, work: Path, graph: dict[str, Any]) -> None:
        matrix = np.load(work / "vectors.npy")
        self.by_text = {t: matrix[i] for i, t in enumerate(graph["texts"])}
        queries = np.load(work / "queries.npy")
        self.queries = {q: queries[i] for i, q in enumerate(graph["questions"])}
        self.seconds = 0.0
        self.calls = 0
        self.served = {"question": 0, "stored": 0, "mean of stored": 0}

    def vector(self, text: str) -> np.ndarray:
        if text in self.queries:
            self.served["question"] += 1
            return np.asarray(self.queries[text])
        found = [self.by_text[line] for line in text.split("\n") if line in self.by_text]
        if not found:
            raise PeerError(f"no kgsearch vector for LightRAG's text {text[:120]!r}")
        self.served["stored" if len(found) == 1 else "mean of stored"] += 1
        mean = np.mean(found, axis=0)
        return np.asarray(mean / np.linalg.norm(mean))

    async def __call__(self, texts: list[str], **_: Any) -> np.ndarray:
        started = time.perf_counter()
        out = np.stack([self.vector(t) for t in texts]).astype(np.float32)
        self.seconds += time.perf_counter() - started
        self.calls += 1
        return out


async def _refuse_llm(*_: Any, **__: Any) -> str:
    raise RuntimeError("LightRAG called its LLM: the benchmark must not make a model call")


def _custom_kg(graph: dict[str, Any], normalize: Callable[[str], str]) -> dict[str, Any]:
    """LightRAG's custom-KG payload: one entity per name, one relationship per unordered
    pair (names as LightRAG normalises them; names it would reject are left out)."""
    entities = []
    for e in graph["entities"]:
        if normalize(e["name"]):
            entities.append(
                {
                    "entity_name": e["name"],
                    "entity_type": ", ".join(dict.fromkeys(e["types"])),
                    "description": "\n".join(e["texts"]),
                }
            )
    pairs: dict[tuple[str, str], list[dict[str, str]]] = defaultdict(list)
    dropped = {"unnamed endpoint": 0, "self-loop": 0}
    for r in graph["relationships"]:
        head, tail = normalize(r["head"]), normalize(r["tail"])
        if not head or not tail:
            dropped["unnamed endpoint"] += 1
        elif head == tail:
            dropped["self-loop"] += 1
        else:
            pairs[(min(head, tail), max(head, tail))].append(r)
    relationships = [
        {
            "src_id": rels[0]["head"],
            "tgt_id": rels[0]["tail"],
            "keywords": ", ".join(dict.fromkeys(r["type"] for r in rels)),
            "description": "\n".join(r["text"] for r in rels),
        }
        for rels in pairs.values()
    ]
    return {
        "entities": entities,
        "relationships": relationships,
        "dropped": dropped,
        "merged": sum(len(rels) > 1 for rels in pairs.values()),
    }


async def _child(work: Path, proto: IO[str]) -> None:
    """Build or reopen LightRAG's store, then answer one question per stdin line."""
    import lightrag.utils  # type: ignore[import-not-found]

    normalize_entity_name = lightrag.utils.normalize_entity_name

    logging.getLogger("lightrag").setLevel(logging.ERROR)
    graph = json.loads((work / "graph.json").read_text(encoding="utf-8"))
    version = getattr(lightrag, "__version__", "?")
    folder = work / f"lightrag-{version}-{graph['digest']}"
    embed = _StoredVectors(work, graph)
    rag = lightrag.LightRAG(
        working_dir=str(folder),
        embedding_func=lightrag.utils.EmbeddingFunc(
            embedding_dim=384, func=embed, model_name="kgsearch-bundled-minilm-int8"
        ),
        llm_model_func=_refuse_llm,
        tokenizer=lightrag.utils.Tokenizer("utf8-bytes", _Utf8Tokenizer()),
        embedding_batch_num=1024,
    )
    await rag.initialize_storages()
    logging.getLogger("lightrag").setLevel(logging.ERROR)
    kg = _custom_kg(graph, normalize_entity_name)
    insert_s = None
    if not (folder / "inserted.json").exists():
        started = time.perf_counter()
        await rag.ainsert_custom_kg({k: kg[k] for k in ("entities", "relationships")})
        insert_s = time.perf_counter() - started
        (folder / "inserted.json").write_text(json.dumps({"seconds": insert_s}))
    originals: dict[str, list[str]] = defaultdict(list)
    for e in graph["entities"]:
        originals[normalize_entity_name(e["name"])].append(e["name"])
    ready = {
        "version": version,
        "insert_s": insert_s,
        "entities": len(kg["entities"]),
        "relationships": len(kg["relationships"]),
        "dropped": kg["dropped"],
        "merged": kg["merged"],
        "served": dict(embed.served),
    }
    _send(proto, {"ready": ready})
    for line in sys.stdin:
        index = json.loads(line)["q"]
        question = graph["questions"][index]
        param = lightrag.QueryParam(
            mode="global",
            only_need_context=True,
            top_k=LIMIT,
            hl_keywords=[question],
            ll_keywords=[question],
            enable_rerank=False,
        )
        embedded = embed.seconds
        started = time.perf_counter()
        result = await rag.aquery_data(question, param)
        elapsed = time.perf_counter() - started
        spent = embed.seconds - embedded
        if not isinstance(result, dict) or result.get("status") not in ("success", "failure"):
            raise RuntimeError(f"aquery_data returned {str(result)[:200]}: its API changed")
        rels = (result.get("data") or {}).get("relationships", [])[:LIMIT]
        names = {n for r in rels for end in ("src_id", "tgt_id") for n in originals[r[end]]}
        _send(
            proto, {"ms": (elapsed - spent) * 1000, "embed_ms": spent * 1000, "names": list(names)}
        )
    await rag.finalize_storages()


def _send(proto: IO[str], message: dict[str, Any]) -> None:
    proto.write(json.dumps(message) + "\n")
    proto.flush()


def child_main(work: Path) -> None:
    """Entry point of ``--child``: the protocol runs on the original stdout; anything
    LightRAG prints goes to stderr (the parent's log file)."""
    proto = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    try:
        asyncio.run(_child(work, proto))
    except Exception as exc:  # reported to the parent, which exits with the message
        traceback.print_exc()  # into the log file only
        _send(proto, {"error": f"{type(exc).__name__}: {exc}"})
        raise SystemExit(1) from None


class LightRAGChild:
    """The parent's handle on the child process."""

    def __init__(self, python: Path) -> None:
        self.log = WORK / "child.log"
        self.proc = subprocess.Popen(
            [str(python), str(Path(__file__).resolve()), "--child", str(WORK)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.log.open("w"),
            text=True,
        )
        self.ready = self._receive()["ready"]

    def query(self, index: int) -> dict[str, Any]:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({"q": index}) + "\n")
        self.proc.stdin.flush()
        return self._receive()

    def _receive(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        message: dict[str, Any] = json.loads(line) if line else {}
        if not message:  # the child died before it could say why
            self.proc.kill()
            tail = "\n".join(self.log.read_text(errors="replace").strip().splitlines()[-6:])
            raise PeerError(f"LightRAG child ended without an answer:\n{tail}\n(log: {self.log})")
        if "error" in message:
            self.proc.kill()
            raise PeerError(
                f"LightRAG child failed: {message['error']}\n(traceback in {self.log}; an "
                "AttributeError or TypeError there usually means LightRAG's API changed: "
                f"pin --lightrag-version {LIGHTRAG_VERSION})"
            )
        return message

    def close(self) -> None:
        if self.proc.stdin:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=120)
        except subprocess.TimeoutExpired:
            self.proc.kill()


# the run ---------------------------------------------------------------------------------------

Search = Callable[[int], tuple[float, set[str]]]


@dataclass
class Measured:
    """One run's figures: per system (p50 ms, p95 ms, answer hits@10), and its setting."""

    stats: dict[str, tuple[float, float, float]]
    questions: int
    graph: tuple[int, int]
    lightrag: dict[str, Any]
    embed_ms: float
    load: tuple[tuple[float, ...], tuple[float, ...]]


def interleave(
    systems: dict[str, Search], questions: list[tuple[str, set[str]]]
) -> dict[str, tuple[float, float, float]]:
    """Each question through every system, the order rotating; after a warm-up."""
    labels = list(systems)
    for i in range(min(WARMUP, len(questions))):
        for label in labels:
            systems[label](i)
    times: dict[str, list[float]] = {label: [] for label in labels}
    hits = dict.fromkeys(labels, 0)
    for i, (_, answers) in enumerate(questions):
        for label in labels[i % len(labels) :] + labels[: i % len(labels)]:
            ms, found = systems[label](i)
            times[label].append(ms)
            hits[label] += bool(found & answers)
        if (i + 1) % 100 == 0:
            print(f"{i + 1} questions", file=sys.stderr)
    return {
        label: (statistics.median(v), percentile(v, 0.95), hits[label] / len(questions))
        for label, v in times.items()
    }


def run(n: int, version: str) -> Measured:
    """Both systems over the same questions."""
    # kgsearch and the bench_quality helpers are imported here, not at the top: the
    # child runs this file in LightRAG's virtualenv, which has neither.
    from bench_quality import _answers, ensure_full_db, metaqa_questions
    from replay import Replay

    from kgsearch import Engine, Kind, SearchRequest
    from kgsearch.embed import create_embedder
    from kgsearch.store.sqlite import SQLiteStore

    python = ensure_lightrag(version)
    load_before = os.getloadavg()
    path = str(ensure_full_db())
    questions = [(q, _answers(q, gold)) for q, gold in metaqa_questions(n)]
    texts = [q for q, _ in questions]
    real = create_embedder("bundled")
    real.embed_query(texts[0])  # loads the model
    started = time.perf_counter()
    query_vectors = np.stack([real.embed_query(q) for q in texts])
    embed_ms = (time.perf_counter() - started) * 1000 / len(texts)
    # the questions replayed, the whole search timed (see replay.py)
    replay = Replay(real, dict(zip(texts, query_vectors, strict=True)))
    engine = Engine(SQLiteStore(path), embedder=replay)  # type: ignore[arg-type]
    for kind in (Kind.OBJECT, Kind.RELATIONSHIP):
        engine.store.wait_for_index("default", kind, 900)  # type: ignore[attr-defined]
    engine.warm()  # what `serve` does at start
    names = {o.id: o.key for o in engine.store.iter_rows("default", "object")}
    exact = SQLiteStore(path, ann_min_rows=None)
    graph = export_graph(exact, texts, query_vectors)
    exact.close()

    def kgsearch(options: dict[str, Any]) -> Search:
        def search(i: int) -> tuple[float, set[str]]:
            started = time.perf_counter()
            response = engine.search(SearchRequest(query=texts[i], limit=LIMIT, **options))
            wall = (time.perf_counter() - started) * 1000
            found: set[str] = set()
            for r in response.results:
                if r.type == "graph":
                    found.add(r.key)
                elif r.type == "relationship":
                    found.update((names.get(r.source_id, ""), names.get(r.target_id, "")))
            return wall, found

        return search

    child = LightRAGChild(python)

    def peer(i: int) -> tuple[float, set[str]]:
        answer = child.query(i)
        return answer["ms"], set(answer["names"])

    try:
        stats = interleave(
            {
                UNIFIED: kgsearch({}),
                RELATIONSHIPS: kgsearch({"objects": None, "chunks": None}),
                PEER: peer,
            },
            questions,
        )
    finally:
        child.close()
        engine.close()
    return Measured(
        stats, len(questions), graph, child.ready, embed_ms, (load_before, os.getloadavg())
    )


def describe(m: Measured) -> str:
    """The docs/benchmarks.md section body."""
    from benchdoc import table

    info = m.lightrag
    peer_p50, peer_p95, _ = m.stats[PEER]
    rows = [
        [label, f"{p50:.1f}", f"{p95:.1f}", f"{hit:.3f}", f"{p50 / peer_p50:.2f}×",
         f"{p95 / peer_p95:.2f}×"]
        for label, (p50, p95, hit) in m.stats.items()
    ]  # fmt: skip
    load = " → ".join(", ".join(f"{x:.1f}" for x in avg) for avg in m.load)
    insert = (
        f"inserted in {info['insert_s']:.0f} s this run"
        if info["insert_s"] is not None
        else "reopened from bench-data/peers/, inserted by an earlier run"
    )
    return (
        f"{m.questions} MetaQA 1-hop dev questions (the seed-42 shuffle of "
        f"bench_quality.py) over the full graph ({m.graph[0]:,} objects, "
        f"{m.graph[1]:,} relationships, all embedded), "
        f"lightrag-hku {info['version']} in its own virtualenv beside kgsearch at this "
        "commit; the systems take turns question by question (the order rotates), "
        f"after {WARMUP} warm-up questions each. Times are per query, wall clock around "
        "the call (kgsearch `Engine.search` in process; LightRAG `aquery_data` timed "
        "inside its process), less the question's embedding: kgsearch's embedder "
        "replays the question's vector (scripts/replay.py; any other text a search "
        "embeds, such as the anchored leg's rest of the question, goes through the model "
        "and is counted), LightRAG's time inside its embedding function, which returns "
        "the question's vector computed before the loop by the bundled model (the same vector "
        f"kgsearch searches with; embedding a question took {m.embed_ms:.1f} ms on "
        "average here, on top of either system). Answer hits@10 as in bench_quality.py: "
        "an answer entity among the top 10 hits (kgsearch: an object hit or a "
        "relationship hit's endpoints; LightRAG: the endpoints of the first 10 "
        "relationships of its context). Ratios are kgsearch / LightRAG (below 1: "
        "kgsearch faster).\n\n"
        + table(["system", "p50 ms", "p95 ms", "answer hits@10", "p50 ratio", "p95 ratio"], rows)
        + "\n\nLightRAG: `LightRAG(working_dir, embedding_func, llm_model_func, tokenizer)` "
        "with its default storages (NanoVectorDB, NetworkX, JSON key-value), "
        f"`ainsert_custom_kg` of {info['entities']:,} entities and "
        f"{info['relationships']:,} relationships ({insert}), then "
        '`aquery_data(question, QueryParam(mode="global", top_k=10, hl_keywords=[question], '
        "ll_keywords=[question], enable_rerank=False))`: a float32 product with every "
        "relationship vector and a full argsort (NanoVectorDB), then graph look-ups for "
        "the edges and their entities. The keyword lists bypass keyword extraction, and "
        "the LLM function raises if called (it never was). LightRAG keeps one undirected "
        f"edge per entity pair, so {info['merged']:,} pairs with several MetaQA relations "
        "became one relationship each (keywords: the relation types; description: their "
        f"kgsearch texts); {info['dropped']['unnamed endpoint']} relationships with an "
        "endpoint that LightRAG's name normalisation empties (short numbers, such as the "
        f"rating `4`) and {info['dropped']['self-loop']} self-loops (a movie and a person "
        "of the same name), which `ainsert_custom_kg` rejects, were left out. Its logger "
        "is set to ERROR; token budgets count UTF-8 bytes (tiktoken would download its "
        "encoding).\n\n"
        "Same vectors: LightRAG's embedding function serves kgsearch's stored vectors "
        "(bundled all-MiniLM-L6-v2 int8) by text: a relationship's vector is its "
        "description line's stored vector (the mean, renormalised, for a merged pair), an "
        "entity's the same over its objects' texts; no text was embedded anew (one "
        "without a stored vector would fail the run). So both scan the same relationship "
        "vectors with the same query vectors, though LightRAG's own format would embed "
        "`keywords\\tsource\\ntarget\\ndescription`.\n\n"
        f"Load average (1, 5, 15 min), start → end: {load}."
    )


def readme_rows(m: Measured) -> str:
    """The README comparison table's rows."""
    version = m.lightrag["version"]
    labels = {
        UNIFIED: "kgsearch, unified search (default)",
        RELATIONSHIPS: "kgsearch, relationship search only",
        PEER: f"LightRAG {version}, global mode",
    }
    return "\n".join(
        f"| {labels[label]} | {p50:.1f} | {p95:.1f} | {hit:.3f} |"
        for label, (p50, p95, hit) in m.stats.items()
    )


def main() -> None:
    """Run the side-by-side benchmark and write its docs/benchmarks.md section."""
    if sys.argv[1:2] == ["--child"]:
        child_main(Path(sys.argv[2]))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=1000)
    parser.add_argument("--no-write", action="store_true", help="print, do not write the docs")
    parser.add_argument("--lightrag-version", default=LIGHTRAG_VERSION)
    args = parser.parse_args()
    try:
        measured = run(args.questions, args.lightrag_version)
    except PeerError as exc:
        raise SystemExit(f"bench_peers: {exc}") from None
    body = describe(measured)
    print(body)
    print("\nREADME rows (system | p50 ms | p95 ms | answer hits@10):\n" + readme_rows(measured))
    if not args.no_write:
        from benchdoc import write_section

        command = f"python scripts/bench_peers.py --questions {args.questions}"
        if args.lightrag_version != LIGHTRAG_VERSION:
            command += f" --lightrag-version {args.lightrag_version}"
        write_section(
            "peers", "Side by side: kgsearch and LightRAG on the full MetaQA graph", command, body
        )


if __name__ == "__main__":
    main()
