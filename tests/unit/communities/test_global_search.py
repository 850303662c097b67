"""Global search (``ask --recipe global``): map-reduce over community reports.

The replayed answer runs over *A Christmas Carol*'s 32 communities with the real reports
gpt-3.5-turbo wrote for them, and replays the real map and reduce replies of
nano-graphrag's global search (``tests/carol_global.py`` has the attribution) from a
recording made through ``--record`` (``scripts/record_global_carol.py``). The reports
are embedded with the bundled model, so the communities chosen are the ones real
relevance picks. The other tests use scripted models on the same store.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from carol_global import MAP_REPLY, QUESTION, REDUCE_REPLY, load_carol

from kgsearch import Engine, connect
from kgsearch.community_values import CommunityReport, Finding
from kgsearch.config import LLMSettings
from kgsearch.embed import create_embedder
from kgsearch.errors import ProviderError
from kgsearch.llm.base import Message
from kgsearch.llm.fake import FakeLLM
from kgsearch.llm.guard import GuardedLLM, llm_guard
from kgsearch.llm.meter import Meter, metered
from kgsearch.model import Kind
from kgsearch.search import global_map, global_search
from kgsearch.search.answer import Answer
from kgsearch.search.global_map import extractive_points, parse_points
from kgsearch.store.base import Store

pytestmark = pytest.mark.slow  # the bundled model embeds the reports

CASSETTE = Path(__file__).parent / "carol_global.jsonl"
_WORD = re.compile(r"\w+")


@pytest.fixture(scope="module")
def carol(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    path = tmp_path_factory.mktemp("carol") / "carol.db"
    with Engine(connect(str(path)), embedder=create_embedder("bundled"), project="carol") as e:
        load_carol(e)
        e.embed_pending(kinds=[Kind.COMMUNITY])
    yield path


def _engine(path: Path, **settings: object) -> Engine:
    llm = LLMSettings(**settings) if settings else None
    store: Store = connect(str(path))
    return Engine(store, embedder=create_embedder("bundled"), project="carol", llm_settings=llm)


def _global(answer: Answer) -> dict[str, Any]:
    found = answer.metadata["global"]
    assert isinstance(found, dict)
    return found


def _warnings(answer: Answer) -> list[str]:
    found = answer.metadata["warnings"]
    assert isinstance(found, list)
    return [str(w) for w in found]


def _words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.casefold()) if len(w) > 3}


def test_a_replayed_global_answer_cites_the_communities_its_points_came_from(
    carol: Path,
) -> None:
    with _engine(carol, replay=CASSETTE) as engine:
        answer = engine.ask(QUESTION, recipe="global")
        cited = [r for r in answer.references if r.cited]
        reports = {r.id: engine.community(r.id, members=0).report for r in cited}

    assert answer.answer == REDUCE_REPLY
    assert answer.cached and answer.model == "openai:gpt-3.5-turbo"
    assert _global(answer) == {
        "communities": 10,
        "map_calls": 1,
        "map_failed": 0,
        "points": 5,
        "map": "llm",
    }
    # the reduce call read the map's five real points, most important first
    scores = [int(s) for s in re.findall(r"\(importance (\d+)\)", answer.context)]
    assert scores == [90, 85, 80, 75, 70]
    points = [p["description"] for p in json.loads(MAP_REPLY)["points"]]
    assert all(p in answer.context for p in points)
    # the model cited nothing itself: its sentences' closest points give the citations
    assert any("cited no report" in str(w) for w in _warnings(answer))
    assert [(r.cite, r.kind, r.text) for r in cited] == [
        (
            "C1",
            "community",
            "Scrooge and Various Characters in A Christmas Carol (level 0, 58 members)",
        ),
        ("C2", "community", "Christmas and Scrooge's Transformation (level 0, 13 members)"),
        (
            "C6",
            "community",
            "Bob Cratchit and Tiny Tim in 'A Christmas Carol' (level 1, 5 members)",
        ),
    ]
    # each citation resolves to its community, whose report says what the answer says
    for ref in cited:
        report = reports[ref.id]
        assert report is not None and ref.text.startswith(report.title)
        assert len(_words(report.text()) & _words(answer.answer)) >= 10, ref.text
    # the hallucinated report (names from the extraction prompt's examples) is not cited
    assert not any("Washington" in r.text or "Dulce" in r.text for r in cited)


def test_offline_the_same_flow_quotes_the_reports_best_points_each_cited(carol: Path) -> None:
    with _engine(carol) as engine:
        answer = engine.ask(QUESTION, recipe="global", llm=False)

    assert answer.offline and _global(answer)["map"] == "extractive"
    lines = answer.answer.splitlines()
    assert lines[0].startswith("From the community reports (no model asked")
    quoted = [line for line in lines if line.startswith("- ")]
    assert len(quoted) == global_search.TOP_POINTS
    assert all(re.search(r"\[C\d+\]$", line) for line in quoted)
    refs = {r.cite: r for r in answer.references}
    used = set(re.findall(r"\[(C\d+)\]", answer.answer))
    assert used and all(refs[c].cited for c in used)
    assert refs["C1"].text.startswith("Scrooge and Various Characters")
    assert "redemption" in answer.answer


class _Batches:
    """A model that answers each map call with one point citing its first report, fails
    the calls listed, and answers the reduce call citing every label it was given."""

    def __init__(self, failing: Sequence[str]) -> None:
        self.failing = set(failing)

    def __call__(self, messages: Sequence[Message]) -> str:
        user = messages[-1].content
        labels = re.findall(r"^\[(C\d+)\]", user, flags=re.MULTILINE)
        if messages[0].content.startswith("[global-map-"):
            if self.failing & set(labels):
                raise ProviderError("the model is down")
            return json.dumps(
                {"points": [{"description": f"Point {labels[0][1:]} [{labels[0]}].", "score": 50}]}
            )
        return "Summary " + "".join(f"[{c}]" for c in sorted(set(labels)))


def test_a_failing_map_call_drops_its_reports_and_the_answer_still_comes(
    carol: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(global_map, "MAP_TOKENS", 1)  # one report per call
    llm = FakeLLM(default=_Batches(failing=["C2"]))
    with _engine(carol) as engine:
        answer = engine.ask(QUESTION, recipe="global", llm=llm, limit=4)

    assert _global(answer)["map_calls"] == 4
    assert _global(answer)["map_failed"] == 1
    assert any("C2 failed: the model is down" in str(w) for w in _warnings(answer))
    assert answer.answer == "Summary [C1][C3][C4]"
    assert [r.cite for r in answer.references if r.cited] == ["C1", "C3", "C4"]
    assert len(llm.calls) == 5


def test_when_every_map_call_fails_the_reports_own_points_are_reduced(
    carol: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(global_map, "MAP_TOKENS", 1)
    llm = FakeLLM(default=_Batches(failing=["C1", "C2", "C3"]))
    with _engine(carol) as engine:
        answer = engine.ask(QUESTION, recipe="global", llm=llm, limit=3)

    assert _global(answer)["map"] == "extractive"
    assert any("every map call failed" in str(w) for w in _warnings(answer))
    assert answer.answer.startswith("Summary [C1]")
    assert not answer.offline  # the model still wrote the answer


def test_map_calls_run_in_the_callers_context_and_are_charged_to_its_budget(
    carol: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(global_map, "MAP_TOKENS", 1)
    guard = llm_guard(deadline=10, workers=global_map.MAP_WORKERS)
    llm = GuardedLLM(FakeLLM(default=_Batches(failing=[]), price_per_million=1.0), guard)
    meter = Meter()
    try:
        with _engine(carol) as engine, metered(meter):
            answer = engine.ask(QUESTION, recipe="global", llm=llm, limit=5)
    finally:
        guard.close()

    assert _global(answer)["map_calls"] == 5
    assert meter.calls == 6  # five map calls in the pool's threads and the reduce call
    assert meter.cost_usd > 0


def _report(findings: Sequence[str], rating: float = 5.0) -> CommunityReport:
    return CommunityReport(
        id="c0-x",
        level=0,
        title="T",
        summary="",
        rating=rating,
        findings=tuple(
            Finding(summary=f, relationships=(f"r-{i}",)) for i, f in enumerate(findings)
        ),
    )


def test_map_replies_are_read_tolerantly() -> None:
    reports = {
        "C1": _report(["Scrooge hoards money in his counting-house"]),
        "C2": _report(["Tiny Tim is ill and the Cratchits are poor"]),
    }
    reply = (
        "```json\n"
        + json.dumps(
            {
                "points": [
                    {"description": "Poverty weighs on the Cratchits [C2].", "score": 140},
                    {"description": "Scrooge hoards his money.", "score": "35"},
                    {"description": "no score"},
                    {"description": "  ", "score": 10},
                    "not a point",
                ]
            }
        )
        + "\n```"
    )

    points = parse_points(reply, reports)

    assert [(p.cites, p.text, p.score) for p in points] == [
        (("C2",), "Poverty weighs on the Cratchits.", 100.0),
        (("C1",), "Scrooge hoards his money.", 35.0),
    ]
    assert points[1].facts == ("r-0",)  # the finding it shares words with


@pytest.mark.parametrize("reply", ["Sorry, I cannot help.", '{"answer": "x"}', '{"points": 3}'])
def test_a_map_reply_without_points_is_an_error(reply: str) -> None:
    with pytest.raises(ProviderError) as caught:
        parse_points(reply, {"C1": _report(["x"])})
    assert "points JSON" in caught.value.message


def test_the_offline_map_weighs_the_questions_words_then_the_rating() -> None:
    report = _report(["Fezziwig hosts a ball", "Scrooge fears the ghost of Marley"], rating=8)

    narrow = extractive_points("Who is afraid of ghosts?", "C1", report)
    broad = extractive_points("What are the main themes?", "C1", report)

    assert narrow[0].text == "Scrooge fears the ghost of Marley"
    assert [p.text for p in broad] == ["Fezziwig hosts a ball", "Scrooge fears the ghost of Marley"]
    assert broad[0].score == pytest.approx(32.0) and broad[0].facts == ("r-0",)


def test_the_cli_replays_the_global_answer_from_the_recording(carol: Path) -> None:
    from click.testing import CliRunner

    from kgsearch.cli import cli

    args = ["--db", str(carol), "--project", "carol", "--json", "ask", QUESTION]
    result = CliRunner().invoke(
        cli, [*args, "--recipe", "global", "--replay", str(CASSETTE)], catch_exceptions=False
    )

    assert result.exit_code == 0, result.output
    answer = json.loads(result.output)
    assert answer["answer"] == REDUCE_REPLY
    assert [r["cite"] for r in answer["references"] if r["cited"]] == ["C1", "C2", "C6"]
    assert answer["metadata"]["global"]["map_calls"] == 1


class _SlowBatches(_Batches):
    """:class:`_Batches` that takes a while per map call and notes how many map calls
    were in flight at once."""

    def __init__(self) -> None:
        super().__init__(failing=[])
        self._lock = threading.Lock()
        self.running = 0
        self.most = 0

    def __call__(self, messages: Sequence[Message]) -> str:
        if not messages[0].content.startswith("[global-map-"):
            return super().__call__(messages)
        with self._lock:
            self.running += 1
            self.most = max(self.most, self.running)
        try:
            time.sleep(0.2)
            return super().__call__(messages)
        finally:
            with self._lock:
                self.running -= 1


def test_global_answers_at_once_queue_their_map_calls_instead_of_losing_reports(
    carol: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # three answers of five map calls each, a guard with room for the map calls of one
    # answer and the three reduce calls: past its threads the guard refuses a call
    monkeypatch.setattr(global_map, "MAP_TOKENS", 1)
    model = _SlowBatches()
    guard = llm_guard(deadline=30, workers=global_map.MAP_WORKERS + 3)
    llm = GuardedLLM(FakeLLM(default=model), guard)
    answers: list[Answer] = []

    def ask() -> None:
        with _engine(carol) as engine:
            answers.append(engine.ask(QUESTION, recipe="global", llm=llm, limit=5))

    try:
        threads = [threading.Thread(target=ask) for _ in range(3)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
    finally:
        guard.close()

    assert len(answers) == 3
    assert [_global(a)["map_failed"] for a in answers] == [0, 0, 0], [_warnings(a) for a in answers]
    assert model.most <= global_map.MAP_WORKERS
