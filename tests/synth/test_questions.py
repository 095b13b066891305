"""The questions' files: written atomically, read back, and read by the evaluation and the trainers."""

from __future__ import annotations

import json

import pytest

from kg_agents.errors import DataFormatError
from kg_agents.eval.datasets import load_jsonl_questions
from kg_agents.eval.metrics import score_aliased
from kg_agents.eval.runner import gold_sets
from kg_agents.kg.memory import MemoryKG
from kg_agents.methods.dualr.train import read_questions as dualr_read_questions
from kg_agents.synth import QUESTION_KINDS, SynthQuestion, read_questions, synthesise, write_questions
from kg_agents.synth import questions as questions_module


def test_question_kinds_are_one_vocabulary():
    assert QUESTION_KINDS == ("chain", "conjunction", "constraint")


def test_written_files_read_back_and_load_as_datasets(films, tmp_path):
    r = synthesise(films, n=50, hops=(1, 2), kinds=("chain", "conjunction"), seed=0)
    files = write_questions(r, tmp_path / "out")
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [
        "stats.json",
        "train.jsonl",
        "validation.jsonl",
    ]
    back = read_questions(files["train"]) + read_questions(files["validation"])
    assert sorted(back, key=lambda q: q.id) == sorted(r.questions, key=lambda q: q.id)
    assert json.loads(files["stats"].read_text())["n"] == 50

    ds = load_jsonl_questions(files["train"], kg=films, split="dev")
    by_id = {q.id: q for q in r.train}
    assert len(ds) == len(by_id)
    for q in ds.questions:
        mine = by_id[q.id]
        assert q.question == mine.question and q.answers == list(mine.answers)
        assert q.topic_entities == list(mine.topic_entities) and q.hops == mine.hops and q.qtype == mine.kind
        assert q.meta["relation_path"] == mine.relation_path and q.meta["gold_path"] == mine.gold_path

    trainq = dualr_read_questions(files["validation"])
    assert [t.question for t in trainq] == [q.question for q in r.validation]


def test_answers_match_by_id_or_label_when_they_differ(tmp_path):
    labels = {f"ex:f{i}": f"Film {i}" for i in range(4)} | {"ex:d": "Ann Lee", "ex:e": "Bo Chan"}
    triples = [(f"ex:f{i}", "http://ex.org/directedBy", "ex:d" if i < 2 else "ex:e") for i in range(4)]
    kg = MemoryKG(triples, labels=labels)
    r = synthesise(kg, n=6, hops=(1,), seed=0, validation_fraction=0.0)
    q = next(q for q in r.questions if q.relation_path == "http://ex.org/directedBy")
    assert q.question.count("[Film ") == 1 and q.answer_labels in (("Ann Lee",), ("Bo Chan",))
    write_questions(r, tmp_path)
    (loaded,) = [x for x in load_jsonl_questions(tmp_path / "train.jsonl", kg=kg).questions if x.id == q.id]
    golds = gold_sets(loaded)
    assert golds == [[q.answers[0], q.answer_labels[0]]]
    assert score_aliased([q.answer_labels[0]], golds)["hits@1"] == 1.0
    assert score_aliased([q.answers[0]], golds)["hits@1"] == 1.0


def test_a_failed_write_leaves_the_old_files_whole(films, tmp_path, monkeypatch):
    r = synthesise(films, n=20, hops=(1,), seed=0)
    write_questions(r, tmp_path)
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    calls = []

    def failing(path, data):
        calls.append(path)
        raise OSError("disk full")

    monkeypatch.setattr(questions_module, "atomic_write", failing)
    r2 = synthesise(films, n=20, hops=(1,), seed=1)
    with pytest.raises(OSError):
        write_questions(r2, tmp_path)
    assert calls and {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        ("not json", "invalid JSON"),
        ("[1]", "expected a JSON object"),
        ('{"id": "a"}', "missing field"),
        (
            json.dumps(
                {
                    **SynthQuestion(
                        "a", "q [x]", ("b",), ("x",), 1, "chain", "r", "x -> r -> b", "t", "train"
                    ).to_json(),
                    "hops": "1",
                }
            ),
            "hops must be an int",
        ),
    ],
)
def test_read_questions_names_the_bad_line(tmp_path, line, reason):
    p = tmp_path / "train.jsonl"
    good = SynthQuestion("g", "q [x]", ("b",), ("x",), 1, "chain", "r", "x -> r -> b", "t", "train")
    p.write_text(json.dumps(good.to_json()) + "\n" + line + "\n", encoding="utf-8")
    with pytest.raises(DataFormatError, match=reason) as err:
        read_questions(p)
    assert err.value.line == 2


def test_the_public_api_is_pinned():
    import kg_agents.synth as synth

    assert len(synth.__all__) == len(set(synth.__all__))  # ruff keeps it sorted (RUF022)
    assert set(synth.__all__) == {
        "FILTERS",
        "QUESTION_KINDS",
        "SYNTHESISED_KINDS",
        "PathSchema",
        "SynthQuestion",
        "SynthResult",
        "check_chain",
        "check_form",
        "execute",
        "fill_form",
        "format_relation_path",
        "generic_forms",
        "humanise",
        "paraphrase_forms",
        "parse_relation_path",
        "phrase",
        "read_questions",
        "read_topic_labels",
        "sample_relation_paths",
        "synthesise",
        "write_questions",
    }
    assert all(getattr(synth, name) is not None for name in synth.__all__)
