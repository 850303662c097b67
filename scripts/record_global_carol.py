"""Record the global-search test's model calls (tests/unit/communities/carol_global.jsonl)
through the record/replay path, with nano-graphrag's real replies.

No model is reachable here, so the replies are the real ones gpt-3.5-turbo gave
nano-graphrag's global search over *A Christmas Carol*'s community reports (the eval
set ``christmas-carol-graphrag``, see tests/carol_global.py for the attribution): a
local chat server answers kgsearch's map request with the recorded map reply (key
points with importance scores) and its reduce request with the recorded answer. The
store holds the book's 32 communities with their real reports, embedded with the
bundled model; ``ask --recipe global`` runs through the real OpenAI client and
:class:`~kgsearch.llm.cache.RecordingLLM` writes each request with its reply. Run it
again after a change to the prompts or to the community selection:

    python scripts/record_global_carol.py
"""

from __future__ import annotations

import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from carol_global import MAP_REPLY, QUESTION, REDUCE_REPLY, load_carol  # noqa: E402
from chat_server import chat_reply, start_chat_server  # noqa: E402

from kgsearch import Engine, connect  # noqa: E402
from kgsearch.config import LLMSettings  # noqa: E402
from kgsearch.embed import create_embedder  # noqa: E402
from kgsearch.model import Kind  # noqa: E402

CASSETTE = ROOT / "tests" / "unit" / "communities" / "carol_global.jsonl"


def respond(number: int, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    system = body["messages"][0]["content"]
    if system.startswith("[global-map-"):
        return 200, chat_reply(MAP_REPLY, model="gpt-3.5-turbo")
    if system.startswith("[global-reduce-"):
        return 200, chat_reply(REDUCE_REPLY, model="gpt-3.5-turbo")
    return 500, {"error": {"message": "not a global-search request"}}


def main() -> None:
    CASSETTE.unlink(missing_ok=True)
    stopping = threading.Event()
    server, httpd = start_chat_server(respond, stopping)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            llm = LLMSettings(
                model="openai:gpt-3.5-turbo", base_url=server.url, record=CASSETTE, cache=False
            )
            store = connect(str(Path(tmp) / "carol.db"))
            with Engine(
                store, embedder=create_embedder("bundled"), project="carol", llm_settings=llm
            ) as engine:
                load_carol(engine)
                engine.embed_pending(kinds=[Kind.COMMUNITY])
                answer = engine.ask(QUESTION, recipe="global")
    finally:
        stopping.set()
        httpd.shutdown()
        httpd.server_close()
    print(answer.metadata["global"], len(server.requests), "requests")
    for ref in answer.references:
        print(ref.cite, ref.cited, ref.text)
    print(CASSETTE, CASSETTE.stat().st_size, "bytes")


if __name__ == "__main__":
    main()
