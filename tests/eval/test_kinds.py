"""Per-kind figures and the supported-answer ratio of conjunctions, in the summary and the report."""

from __future__ import annotations

import asyncio
import json

import pytest

from kg_agents.eval.datasets import Question
from kg_agents.eval.metrics import SUMMARY_KEYS, per_kind, score_answers, summarize
from kg_agents.eval.runner import REPORT, SUMMARY, question_kind, run_eval, supported_count
from kg_agents.kg import MemoryKG
from kg_agents.kg.base import Path

KG = MemoryKG(
    [
        ("Film A", "directed_by", "Ann"),
        ("Film B", "directed_by", "Ann"),
        ("Film A", "starred_actors", "Cid"),
        ("Film B", "starred_actors", "Dee"),
        ("Film A", "release_year", "1994"),
    ]
)
ANN_A = Path.from_text("Ann -> ~directed_by -> Film A")
ANN_B = Path.from_text("Ann -> ~directed_by -> Film B")
CID_A = Path.from_text("Cid -> ~starred_actors -> Film A")
FAKE = Path.from_text("Cid -> ~starred_actors -> Film B")  # not in the KG


def test_supported_count_needs_a_path_from_every_topic():
    assert supported_count(KG, ["Film A", "Film B"], ["Ann", "Cid"], [ANN_A, ANN_B, CID_A]) == 1
    assert supported_count(KG, ["Film A"], ["Ann", "Cid"], [ANN_A]) == 0
    assert supported_count(KG, ["Film A"], [], [ANN_A]) == 0
    # a path from the topic that ends elsewhere does not support the answer
    assert supported_count(KG, ["Film B"], ["Ann", "Cid"], [ANN_B, CID_A]) == 0


def test_question_kind():
    assert question_kind(Question("1", "q", ["a"], qtype="conjunction")) == "conjunction"
    assert question_kind(Question("2", "q", ["a"], qtype="actor_to_movie")) is None
    assert question_kind(Question("3", "q", ["a"], qtype="x", meta={"kind": "constraint"})) == "constraint"


def test_summarize_per_kind_and_supported_ratio():
    records = [
        {
            "kind": "conjunction",
            "scores": score_answers(["alpha", "beta"], ["alpha"]),
            "answers_total": 2,
            "answers_supported": 1,
        },
        {
            "kind": "conjunction",
            "scores": score_answers(["gamma"], ["gamma"]),
            "answers_total": 1,
            "answers_supported": 1,
        },
        {"kind": "constraint", "scores": score_answers(["x"], ["y"]), "answers_total": 1},
    ]
    s = summarize(records, method="m", dataset="d")
    assert tuple(s)[: len(SUMMARY_KEYS)] == SUMMARY_KEYS
    assert s["supported_answer_ratio"] == pytest.approx(2 / 3)
    assert s["per_kind"]["conjunction"] == {
        "n": 2,
        "hits@1": 1.0,
        "f1": pytest.approx((2 / 3 + 1) / 2),
        "supported_answer_ratio": pytest.approx(2 / 3),
    }
    assert s["per_kind"]["constraint"] == {"n": 1, "hits@1": 0.0, "f1": 0.0}
    plain = summarize([{"scores": score_answers(["x"], ["x"])}], method="m", dataset="d")
    assert tuple(plain) == SUMMARY_KEYS and plain["supported_answer_ratio"] is None
    assert per_kind([{"kind": None, "scores": {}}]) == {}


class _Graph:
    """Returns fixed answers and paths per question."""

    def __init__(self, outputs):
        self.outputs = outputs

    async def ainvoke(self, state, **_):
        return self.outputs[state["question"]]


def test_run_eval_writes_per_kind_figures_and_report(tmp_path):
    questions = [
        Question("c1", "films by [Ann] with [Cid]", ["Film A"], ["Ann", "Cid"], hops=1, qtype="conjunction"),
        Question(
            "k1",
            "films by [Ann] from 1994",
            ["Film A"],
            ["Ann"],
            hops=1,
            qtype="x",
            meta={"kind": "constraint"},
        ),
    ]
    outputs = {
        # Film A has a path from both topics; Film B only from Ann; the fake path does not verify
        "films by [Ann] with [Cid]": {"answers": ["Film A", "Film B"], "paths": [ANN_A, CID_A, ANN_B, FAKE]},
        "films by [Ann] from 1994": {"answers": ["Film A", "Film B"], "paths": [ANN_A, ANN_B]},
    }
    s = asyncio.run(
        run_eval(
            questions,
            tmp_path,
            method="fake",
            dataset="tiny",
            build_graph=lambda kg: _Graph(outputs),
            kg_for=lambda q: KG,
            progress=False,
        )
    )
    assert s["supported_answer_ratio"] == 0.5
    assert s["per_kind"]["conjunction"]["n"] == 1 and s["per_kind"]["constraint"]["hits@1"] == 1.0
    assert json.loads((tmp_path / SUMMARY).read_text())["per_kind"] == s["per_kind"]
    report = (tmp_path / REPORT).read_text()
    assert "## By question kind" in report and "| conjunction | 1 | 1.000 | 0.667 | 0.500 |" in report
    preds = [json.loads(line) for line in (tmp_path / "predictions.jsonl").read_text().splitlines()]
    assert {p["id"]: (p["kind"], p.get("answers_supported")) for p in preds} == {
        "c1": ("conjunction", 1),
        "k1": ("constraint", None),
    }
