"""Issue 31's temporal measure: real passages naming successive holders of one office,
extracted by the LLM extractor (the real OpenAI-compatible client against a local HTTP
server that replays model-style replies) under a schema whose ``officeholder`` relation
holds one value at a time; ``as_of`` search then returns the holder of each date.

The passages are from the 2WikiMultihopQA corpus (HippoRAG's copy; Apache-2.0;
eval-data ``2wikimultihopqa-hipporag``, see its README): four Dukes of Medina Sidonia,
whose passages date only when each one *became* duke (except the 10th's "from 1664 to
1667"), and three Prime Ministers of Togo with full terms. The replies are written here
in the shape a model answers our prompt with (not recorded from a model): each states
what its passage says, dated as the passage dates it.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from chat_server import ChatServer, chat_reply, start_chat_server
from eval_data import EVAL_DATA

from kgsearch import Engine
from kgsearch.config import ExtractSettings, LLMSettings
from kgsearch.embed.fake import FakeEmbedder
from kgsearch.model import Filters
from kgsearch.store import connect

CORPUS = EVAL_DATA / "2wikimultihopqa-hipporag" / "2wikimultihopqa_corpus.json"
DUKES = "Duke of Medina Sidonia"
TOGO = "Prime Minister of Togo"
SCHEMA = {
    "name": "Office holders",
    "entity_types": [
        {"name": "person"},
        {"name": "office", "description": "A public office or a noble title"},
    ],
    "relation_types": [
        {
            "name": "officeholder",
            "description": "the person who holds the office or title",
            "source": ["office"],
            "target": ["person"],
            "single_valued": True,
        },
        {"name": "spouse", "source": ["person"], "target": ["person"]},
    ],
}


def _holder(
    office: str, person: str, said: str, start: str, end: str | None = None
) -> dict[str, Any]:
    rel: dict[str, Any] = {
        "source": office,
        "target": person,
        "relation": "officeholder",
        "description": said,
        "keywords": ["succession", "title"],
        "strength": 9,
        "valid_from": start,
    }
    if end is not None:
        rel["valid_to"] = end
    return rel


def _reply(office: str, people: list[str], relationships: list[dict[str, Any]]) -> str:
    entities = [{"name": office, "type": "office", "description": f"The office of {office}."}]
    entities += [
        {"name": p, "type": "person", "description": f"{p}, named in the passage."} for p in people
    ]
    return json.dumps({"entities": entities, "relationships": relationships}, indent=1)


# passage title -> the model-style reply to its extraction
REPLIES = {
    "Gaspar Alfonso Pérez de Guzmán, 9th Duke of Medina Sidonia": _reply(
        DUKES,
        ["Gaspar Alfonso Pérez de Guzmán y Sandoval", "Ana María de Guzmán"],
        [
            _holder(
                DUKES,
                "Gaspar Alfonso Pérez de Guzmán y Sandoval",
                "Gaspar Alfonso became Duke of Medina Sidonia in 1636, on the 8th Duke's death.",
                "1636",
            ),
            {
                "source": "Gaspar Alfonso Pérez de Guzmán y Sandoval",
                "target": "Ana María de Guzmán",
                "relation": "spouse",
                "description": "In 1622, aged 20, he married his aunt Ana María de Guzmán.",
                "valid_from": "1622",
                "valid_to": "1637",
            },
        ],
    ),
    "Gaspar Juan Pérez de Guzmán, 10th Duke of Medina Sidonia": _reply(
        DUKES,
        ["Gaspar Juan Pérez de Guzmán y Guzmán"],
        [
            _holder(
                DUKES,
                "Gaspar Juan Pérez de Guzmán y Guzmán",
                "Gaspar Juan was Duke of Medina Sidonia from 1664 to 1667 and died without issue.",
                "1664",
                "1667",
            )
        ],
    ),
    "Juan Claros Pérez de Guzmán, 11th Duke of Medina Sidonia": _reply(
        DUKES,
        ["Juan Claros Pérez de Guzmán y Fernández de Córdoba", "Antonia Teresa Pimentel"],
        [
            _holder(
                DUKES,
                "Juan Claros Pérez de Guzmán y Fernández de Córdoba",
                "Juan Claros became Duke of Medina Sidonia in 1667 on his half-brother's death.",
                "1667",
            ),
            {
                "source": "Juan Claros Pérez de Guzmán y Fernández de Córdoba",
                "target": "Antonia Teresa Pimentel",
                "relation": "spouse",
                "description": "In around 1670 he married Antonia Teresa Pimentel, twice widowed.",
                "valid_from": "around 1670",
            },
        ],
    ),
    "Manuel Pérez de Guzmán, 12th Duke of Medina Sidonia": _reply(
        DUKES,
        ["Manuel Pérez de Guzmán y Pimentel"],
        [
            _holder(
                DUKES,
                "Manuel Pérez de Guzmán y Pimentel",
                "Manuel Pérez de Guzmán became Duke of Medina Sidonia in 1713.",
                "1713",
            )
        ],
    ),
    "Kwassi Klutse": _reply(
        TOGO,
        ["Kwassi Klutse"],
        [
            _holder(
                TOGO,
                "Kwassi Klutse",
                "Kwassi Klutse was Prime Minister of Togo from August 20, 1996 to May 21, 1999.",
                "1996-08-20",
                "1999-05-21",
            )
        ],
    ),
    "Agbéyomé Kodjo": _reply(
        TOGO,
        ["Messan Agbéyomé Gabriel Kodjo"],
        [
            _holder(
                TOGO,
                "Messan Agbéyomé Gabriel Kodjo",
                "Kodjo served as Prime Minister of Togo from 29 August 2000 to 27 June 2002.",
                "2000-08-29",
                "2002-06-27",
            )
        ],
    ),
    "Koffi Sama": _reply(
        TOGO,
        ["Koffi Sama"],
        [
            _holder(
                TOGO,
                "Koffi Sama",
                "Koffi Sama was the Prime Minister of Togo from 29 June 2002 to 9 June 2005.",
                "29 June 2002",
                "9 June 2005",
            )
        ],
    ),
}
PASSAGES = {p["title"]: p["text"] for p in json.loads(CORPUS.read_text("utf-8"))}


def answer(number: int, body: dict[str, Any]) -> tuple[Any, ...]:
    prompt = body["messages"][-1]["content"]
    for title, reply in REPLIES.items():
        if PASSAGES[title][:80] in prompt:
            return 200, chat_reply(reply)
    return 200, chat_reply('{"entities": [], "relationships": []}')


@pytest.fixture
def server() -> Iterator[ChatServer]:
    stopping = threading.Event()
    chat, httpd = start_chat_server(answer, stopping)
    yield chat
    stopping.set()
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture
def engine(server: ChatServer, tmp_path: Path) -> Engine:
    docs = tmp_path / "docs"
    docs.mkdir()
    for n, title in enumerate(REPLIES):
        (docs / f"{n}.txt").write_text(PASSAGES[title], encoding="utf-8")
    engine = Engine(
        connect(f"sqlite:///{tmp_path / 'kg.db'}"),
        embedder=FakeEmbedder(16),
        extract_settings=ExtractSettings.model_validate(
            {"extractor": "llm", "chunk_chars": 6000, "schema": SCHEMA}
        ),
        llm_settings=LLMSettings(model="openai:gpt-4o", base_url=server.url, api_key="test-key"),
    )
    report = engine.ingest(paths=[docs])
    assert report.extraction is not None and report.extraction.extracted == len(REPLIES)
    return engine


def holders(engine: Engine, office: str, when: datetime | None) -> set[str]:
    """The people an ``officeholder`` search finds for ``office`` valid at ``when``."""
    response = engine.search(
        f"{office} officeholder",
        objects=None,
        chunks=None,
        limit=50,
        filters=Filters(relationship_types=["officeholder"], as_of=when),
    )
    rels = engine.store.get_relationships("default", [r.id for r in response.results])
    names = {o.id: o.name for o in engine.store.iter_rows("default", "object")}
    return {names[r.target_id] for r in rels if names[r.source_id] == office}


def at(year: int, month: int = 6, day: int = 1) -> datetime:
    return datetime(year, month, day, tzinfo=UTC)


def test_as_of_search_answers_who_held_the_title_at_each_date(
    server: ChatServer, engine: Engine
) -> None:
    prompt = server.bodies[0]["messages"][0]["content"]
    assert "officeholder (office → person)" in prompt and "[one value at a time]" in prompt
    assert "valid_from and valid_to" in prompt
    assert holders(engine, DUKES, at(1650)) == {"Gaspar Alfonso Pérez de Guzmán y Sandoval"}
    assert holders(engine, DUKES, at(1665)) == {"Gaspar Juan Pérez de Guzmán y Guzmán"}
    assert holders(engine, DUKES, at(1700)) == {
        "Juan Claros Pérez de Guzmán y Fernández de Córdoba"
    }
    assert holders(engine, DUKES, at(1720)) == {"Manuel Pérez de Guzmán y Pimentel"}
    assert holders(engine, DUKES, None) == {"Manuel Pérez de Guzmán y Pimentel"}  # now
    assert holders(engine, DUKES, at(1600)) == set()  # before any dated holder


def test_stated_terms_answer_without_closing_anything(engine: Engine) -> None:
    assert holders(engine, TOGO, at(1998)) == {"Kwassi Klutse"}
    assert holders(engine, TOGO, at(2001)) == {"Messan Agbéyomé Gabriel Kodjo"}
    assert holders(engine, TOGO, at(2002, 6, 27)) == {"Messan Agbéyomé Gabriel Kodjo"}
    assert holders(engine, TOGO, at(2002, 6, 28)) == set()  # the day between two terms
    assert holders(engine, TOGO, at(2003)) == {"Koffi Sama"}
    assert holders(engine, TOGO, None) == set()  # no term is open today


def test_the_closed_fact_is_kept_with_its_reason(engine: Engine) -> None:
    rels = engine.list_rows("relationship", limit=100).items
    names = {o.id: o.name for o in engine.store.iter_rows("default", "object")}
    by_holder = {names[r.target_id]: r for r in rels if r.type == "officeholder"}
    alfonso = by_holder["Gaspar Alfonso Pérez de Guzmán y Sandoval"]
    assert alfonso.valid_from == at(1636, 1, 1) and alfonso.valid_to == at(1664, 1, 1)
    closed = alfonso.properties["_invalidated"]
    assert closed["by"] == by_holder["Gaspar Juan Pérez de Guzmán y Guzmán"].id
    assert "one value at a time" in closed["reason"]
    # a spouse is no single-valued relation here: dated, never closed by another fact
    spouses = [r for r in rels if r.type == "spouse"]
    assert {r.valid_from for r in spouses} == {at(1622, 1, 1), at(1670, 1, 1)}
    assert not any("_invalidated" in r.properties for r in spouses)


def test_ingesting_again_changes_no_validity(engine: Engine, tmp_path: Path) -> None:
    def validity() -> dict[str, tuple[Any, ...]]:
        return {
            r.id: (r.valid_from, r.valid_to, r.properties.get("_invalidated"))
            for r in engine.list_rows("relationship", limit=100).items
        }

    before = validity()
    engine.ingest(paths=[tmp_path / "docs"])
    assert validity() == before
