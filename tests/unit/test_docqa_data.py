"""scripts/docqa_data.py: the document-QA benchmark's notes and its answer and passage
matching, on hand-written passages."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "docqa_data.py"


def _load_script() -> ModuleType:
    name = "docqa_data_under_test"
    spec = importlib.util.spec_from_file_location(name, SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


dq = _load_script()

PASSAGES = [dq.Passage(f"Article {i}", f"Paragraph number {i} says something.") for i in range(23)]


def test_normalise_is_squad_style() -> None:
    assert dq.normalise("The  Beatles' “White” Album!") == "beatles white album"
    assert dq.normalise("Ｆｕｌｌ－width") == "full width"


def test_answer_found_takes_any_alias_as_whole_words() -> None:
    context = "[S1] ## G. Stanley Hall\n\nHall was born in Ashfield, Massachusetts."
    assert dq.answer_found(["Granville Hall", "Stanley Hall"], context)
    assert dq.answer_found(["ashfield massachusetts"], context)
    assert not dq.answer_found(["Ash"], context)  # a word's prefix is not the answer
    assert not dq.answer_found(["", "Boston"], context)


def test_passage_recall_matches_the_normalised_prefix_only() -> None:
    gold = [
        "Two Dollar Radio is an independent publisher based in Columbus, Ohio, founded in 2005.",
        "Formula One Arcade is a racing game.",
    ]
    cut = "[S1] two dollar radio is an INDEPENDENT publisher, based in Columbus Ohio founded…"
    assert dq.passage_key(gold[0]) == "two dollar radio is independent publisher based in columbus"
    assert dq.passage_recall(gold, cut) == 0.5
    assert dq.passage_recall(gold, cut + " Formula One Arcade is a racing game") == 1.0
    assert dq.passage_recall([], cut) == 0.0


def test_notes_hold_every_passage_once_mixed_and_seeded() -> None:
    files = dq.notes(PASSAGES, per_file=10, seed=3)
    assert [f.count("## ") for f in files] == [10, 10, 3]
    blocks = [b for f in files for b in f.split("## ")[1:]]
    assert sorted(b.split("\n")[0] for b in blocks) == sorted(p.title for p in PASSAGES)
    assert files[0].startswith("## Article ") and "\n\nParagraph number " in files[0]
    assert files == dq.notes(PASSAGES, per_file=10, seed=3)
    assert files != dq.notes(PASSAGES, per_file=10, seed=4)
    assert "## Article 0\n" not in files[0] or "## Article 1\n" not in files[0]


def test_write_notes_replaces_what_the_directory_held(tmp_path: Path) -> None:
    (tmp_path / "old.md").write_text("stale", encoding="utf-8")
    dq.write_notes(tmp_path, ["a", "b"], suffix=".txt")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["note-0001.txt", "note-0002.txt"]


def test_small_files_have_one_to_three_paragraphs() -> None:
    files = dq.small_files(PASSAGES, count=60, seed=1)
    counts = [f.count("\n\n") + 1 for f in files]
    assert len(files) == 60 and set(counts) == {1, 2, 3}
    assert files == dq.small_files(PASSAGES, count=60, seed=1)


@pytest.mark.skipif(not dq.TWOWIKI.exists(), reason="eval-data/2wikimultihopqa-hipporag absent")
def test_twowiki_keeps_every_gold_passage_in_its_sample() -> None:
    passages, asked = dq.twowiki(300, seed=5)
    texts = {p.text for p in passages}
    assert len(passages) == 300
    assert all(g in texts for q in asked for g in q.gold)
    assert len(asked) == 51 and not any(q.answers for q in asked)


def test_asked_corpus_is_the_questions_pools_each_passage_once() -> None:
    a, b, c = PASSAGES[:3]
    asked = [
        dq.Question("q1", ("x",), (a.text,), (a, b)),
        dq.Question("q2", (), (c.text,), (b, c)),
    ]
    assert dq.asked_corpus(asked) == [a, b, c]
    assert dq.asked_corpus(asked[:1]) == [a, b]


@pytest.mark.skipif(not dq.MUSIQUE.exists(), reason="eval-data/musique-hipporag-train100 absent")
def test_musique_gold_passages_are_in_each_questions_pool() -> None:
    corpus, asked = dq.musique()
    assert len(corpus) == 1890 and len(asked) == 100
    for q in asked:
        assert q.answers[0] and len(q.pool) == 20
        assert set(q.gold) <= {p.text for p in q.pool}
    assert len(dq.asked_corpus(asked[:25])) == 493


@pytest.mark.skipif(not dq.HOTPOT.exists(), reason="eval-data/hotpotqa-hipporag-train100 absent")
def test_hotpotqa_leaves_yes_no_answers_unscored() -> None:
    corpus, asked = dq.hotpotqa()
    assert len(corpus) == 994
    assert sum(not q.answers for q in asked) == 9
    for q in asked:  # one question comes with 4 articles, the others with 10
        assert len(q.gold) == 2 and len(q.pool) in (4, 10)
        assert set(q.gold) <= {p.text for p in q.pool}
