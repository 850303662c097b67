"""Peak memory and time of embedding passages with the bundled model, batched by count
(64 texts a call, as before) or by padded tokens (at most 2,048 a call, the default).

Usage: python scripts/bench_embed_memory.py [--passages 700] [--write]

Each way runs in a fresh process over the same MuSiQue passages (title + paragraph,
up to 256 tokens), 64 texts per ``embed_documents`` call as the embedding lifecycle
sends them; the process's peak RSS includes the model and the interpreter.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

from benchdoc import table, write_section

CORPUS = (
    Path(__file__).resolve().parents[2]
    / "shared/eval-data/musique-hipporag-train100/musique_train_corpus.json"
)


def _child(passages: int, by_count: bool) -> None:
    import kgsearch.embed.bundled as bundled

    if by_count:  # the old batching: 64 texts whatever their length
        bundled.BATCH_TOKENS = 10**9
    corpus = json.loads(CORPUS.read_text(encoding="utf-8"))[:passages]
    texts = [f"{p['title']}\n{p['text']}" for p in corpus]
    embedder = bundled.BundledEmbedder()
    started = time.perf_counter()
    for i in range(0, len(texts), 64):
        embedder.embed_documents(texts[i : i + 64])
    seconds = time.perf_counter() - started
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"seconds": seconds, "peak_mb": peak}))


def main() -> None:
    """Run both ways in child processes and print (and with --write, record) them."""
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        _child(int(sys.argv[2]), sys.argv[3] == "count")
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--passages", type=int, default=700)
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args()
    rows = []
    for way, label in (("count", "64 texts a call (before)"), ("tokens", "≤ 2,048 tokens a call")):
        done = subprocess.run(
            [sys.executable, __file__, "--child", str(args.passages), way],
            capture_output=True,
            text=True,
            check=True,
        )
        figures = json.loads(done.stdout.strip().splitlines()[-1])
        rows.append(
            [
                label,
                f"{figures['seconds']:.1f}",
                f"{args.passages / figures['seconds']:.1f}",
                f"{figures['peak_mb']:.0f}",
            ]
        )
        print(label, figures, file=sys.stderr)
    body = (
        f"{args.passages} MuSiQue passages (title + paragraph, up to 256 tokens), 64 per "
        "call as the embedding lifecycle sends them, each way in a fresh process.\n\n"
        + table(["batching", "seconds", "passages/s", "peak RSS MB"], rows)
    )
    print(body)
    if args.write:
        write_section(
            "embed-memory",
            "Embedding memory: batches bounded by padded tokens",
            f"python scripts/bench_embed_memory.py --passages {args.passages} --write",
            body,
        )


if __name__ == "__main__":
    main()
