"""The specialist's teacher: which options a gold path supports, and the gold trajectories it walks."""

from __future__ import annotations

import pytest

from kg_agents.core.decide import Decision, current_decision, rank
from kg_agents.core.registry import create_graph
from kg_agents.errors import ConfigError
from kg_agents.kg import MemoryKG
from kg_agents.kg.testing import CONTRACT_TRIPLES
from kg_agents.specialist.teacher import Teacher, right_options
from kg_agents.specialist.train import collect_examples
from tests.fakes import FakeChat

Q1 = ("q1", "who directed [Splash]", ["Splash"], ["Ron Howard"])
Q2 = ("q2", "who directed the films written by [Babaloo Mandel]", ["Babaloo Mandel"], ["Ron Howard"])


@pytest.fixture
def kg():
    return MemoryKG(CONTRACT_TRIPLES)


def gold_of(kg, q):
    t = Teacher(kg)
    assert t.set_question(q[0], q[2], q[3])
    return t._gold


def test_gold_paths_of_a_two_hop_question(kg):
    gold = gold_of(kg, Q2)
    assert ("Babaloo Mandel", "written_by", "in") in gold.hops
    assert ("Splash", "directed_by", "out") in gold.hops and ("Parenthood", "directed_by", "out") in gold.hops
    assert gold.starts == {"Babaloo Mandel"}
    assert gold.answers == {"ron howard"}
    assert {"splash", "parenthood", "ron howard"} <= gold.nodes


def test_unreachable_question_is_reported(kg):
    t = Teacher(kg, max_hops=1)
    assert not t.set_question("q", ["Babaloo Mandel"], ["Ron Howard"])  # two hops away
    assert not t.set_question("q", ["Splash"], ["Not In The KG"])


@pytest.mark.parametrize(
    "decision,options,want",
    [
        (
            Decision("relation", ((("Splash",), "directed_by", "out"), (("Splash",), "written_by", "out"))),
            "ab",
            [0],
        ),
        (Decision("relation", ((("Splash",), "directed_by", "in"),)), "a", []),  # the wrong direction
        (Decision("answer"), ["Tom Hanks", "Ron Howard"], [1]),
        (Decision("answer", ("Tom Hanks", "Ron Howard")), ["A", "B"], [1]),
        (Decision("entity", ("Splash", "Big")), ["[Splash]", "[Big]"], [0]),
        (Decision("end", ((True, ("Splash",)), (False, ("Splash",)))), ["[Yes]", "[No]"], [1]),
        (Decision("end", ((True, ("Ron Howard",)), (False, ("Ron Howard",)))), ["[Yes]", "[No]"], [0]),
        (
            Decision("action", (("retrieve", "Splash"), ("retrieve", "Babaloo Mandel"))),
            ["x", "y"],
            [1],
        ),
        (
            Decision(
                "action",
                (
                    ("neighbor", ("Babaloo Mandel",), "written_by", "in"),
                    ("neighbor", ("Babaloo Mandel",), "written_by", "out"),
                    ("finish", ("Splash", "Parenthood")),
                ),
            ),
            ["x", "y", "z"],
            [0],
        ),
        (
            Decision(
                "action", (("neighbor", ("Splash",), "directed_by", "out"), ("finish", ("Ron Howard",)))
            ),
            ["x", "y"],
            [1],  # finishing with the answer beats walking on
        ),
        (Decision("vote"), ["Choice 1", "Choice 2"], []),
    ],
)
def test_right_options_per_role(kg, decision, options, want):
    assert right_options(decision, list(options), gold_of(kg, Q2)) == want


def test_rank_publishes_the_decision_and_checks_it():
    seen = []

    class Spy(FakeChat):
        def score_options(self, messages, options):
            seen.append(current_decision())
            return [0.0, -1.0]

    llm = Spy(responses=[])
    rank(llm, "pick", ["a", "b"], role="answer", keys=["A", "B"], complete=False)
    assert seen == [Decision("answer", ("A", "B"), False)]
    assert current_decision() is None  # reset after the ranking
    with pytest.raises(ConfigError, match="role must be one of"):
        rank(llm, "pick", ["a", "b"], role="guess")
    with pytest.raises(ConfigError, match="1 keys for 2 options"):
        rank(llm, "pick", ["a", "b"], role="answer", keys=["A"])


@pytest.mark.parametrize(
    "method,roles",
    [
        ("knowledge_navigator", {"relation"}),
        ("graph_explore", {"relation", "end"}),
        ("graph_agent", {"action"}),
        ("graph_rag", {"answer"}),
    ],
)
def test_teacher_walks_each_method_to_the_gold_answer(kg, method, roles):
    teacher = Teacher(kg, method=method)
    graph = create_graph(method, kg, llm=teacher)
    qid, question, topics, answers = Q1
    assert teacher.set_question(qid, topics, answers)
    out = graph.invoke({"question": question, "topic_entities": topics})
    assert out["answers"][:1] == ["Ron Howard"]
    assert roles <= {ex.role for ex in teacher.examples}
    for ex in teacher.examples:
        assert ex.right and all(0 <= i < len(ex.replies) for i in ex.right)
        assert ex.method == method and ex.question_id == "q1"
        assert ex.chat and ex.chat[-1]["role"] == "user"


def test_collect_examples_counts_and_skips(kg):
    class Q:
        def __init__(self, qid, question, topics, answers):
            self.id, self.question, self.topic_entities, self.answers = qid, question, topics, answers

    qs = [Q(*Q1), Q(*Q2), Q("q3", "who is [Splash]", ["Splash"], ["Nobody Here"])]
    examples, counts = collect_examples(kg, qs, ["knowledge_navigator", "graph_agent"])
    assert counts["questions"] == 3
    assert counts["knowledge_navigator/unreachable"] == 1 and counts["graph_agent/unreachable"] == 1
    assert counts["graph_agent/action"] >= 4  # retrieve, neighbour check(s), finish on each question
    assert {ex.question_id for ex in examples} == {"q1", "q2"}
    # the 2-hop question's agent walk: RetrieveNode, NeighborCheck twice, Finish
    agent_q2 = [ex for ex in examples if ex.method == "graph_agent" and ex.question_id == "q2"]
    finish = agent_q2[-1]
    assert "Finish[" in finish.replies[finish.right[0]] and "Ron Howard" in finish.replies[finish.right[0]]


def test_a_decision_whose_every_option_is_right_is_counted_not_kept(kg):
    teacher = Teacher(kg)
    assert teacher.set_question("q2", ["Babaloo Mandel"], ["Ron Howard"])
    both = rank(teacher, "pick", ["a", "b"], role="answer", keys=["Ron Howard", "ron howard"])
    assert tuple(both.scores) == (0.0, 0.0)
    one = rank(teacher, "pick", ["a", "b"], role="answer", keys=["Ron Howard", "Tom Hanks"])
    assert one.best == "a"
    assert teacher.counts["answer:all_right"] == 1 and teacher.counts["answer"] == 1
    assert [ex.right for ex in teacher.examples] == [[0]]
