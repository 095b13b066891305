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


# "who directed the films written by Kay Lo": Kay Lo's spouse Ann Bell, one of the answers, is one hop
# away, and a walk through their birth year reaches her in two hops as well.
SHORTCUT = [
    ("Film A", "written_by", "Kay Lo"),
    ("Film A", "directed_by", "Ann Bell"),
    ("Film B", "written_by", "Kay Lo"),
    ("Film B", "written_by", "Ann Bell"),
    ("Film B", "directed_by", "Bo Chan"),
    ("Kay Lo", "spouse", "Ann Bell"),
    ("Kay Lo", "born_in", "1999"),
    ("Ann Bell", "born_in", "1999"),
    ("Cy Dee", "born_in", "1999"),
    ("Di Eve", "born_in", "1999"),
]


def test_the_question_s_hop_count_teaches_its_chain_not_the_shortcut():
    t = Teacher(MemoryKG(SHORTCUT))
    # without a hop count: the shortest path only, the spouse hop
    assert t.set_question("q", ["Kay Lo"], ["Ann Bell", "Bo Chan"])
    assert t.gold_hops == {("Kay Lo", "spouse", "out")}
    # with it: of the 2-hop chains, written_by then directed_by reaches exactly the answers (F1 1.0;
    # written_by then written_by 0.67, the birth year 0.4), and only its hops are gold
    assert t.set_question("q", ["Kay Lo"], ["Ann Bell", "Bo Chan"], hops=2)
    assert t.gold_hops == {
        ("Kay Lo", "written_by", "in"),
        ("Film A", "directed_by", "out"),
        ("Film B", "directed_by", "out"),
    }
    assert t._gold.starts == {"Kay Lo"}
    assert t.counts["shortest_fallback"] == 0


def test_a_hop_count_no_walk_has_falls_back_to_the_shortest_paths():
    t = Teacher(MemoryKG([("Splash", "directed_by", "Ron Howard"), ("Big", "directed_by", "Penny Marshall")]))
    assert t.set_question("q1", ["Splash"], ["Ron Howard"], hops=2)
    assert t.counts["shortest_fallback"] == 1
    assert t.gold_hops == {("Splash", "directed_by", "out")}


def test_hops_at_length_finds_longer_walks_behind_a_shortcut():
    from kg_agents.kg.paths import hops_at_length, shortest_paths

    kg = MemoryKG([("A", "r", "B"), ("B", "s", "C"), ("A", "t", "C"), ("C", "u", "A")])
    assert [len(p.hops) for p in shortest_paths(kg, ["A"], ["C"]).paths] == [1, 1]
    two = hops_at_length(kg, ["A"], ["C"], 2)
    assert [(k, h.source, h.relation, h.target, h.inverse) for k, h in two] == [
        (1, "A", "r", "B", False),
        (2, "B", "s", "C", False),
    ]
    assert hops_at_length(kg, ["A"], ["A"], 2) == []  # a walk never comes back to a source
    with pytest.raises(ValueError, match="length"):
        hops_at_length(kg, ["A"], ["C"], 0)


def test_collect_examples_teaches_by_each_question_s_hop_count():
    class Q:
        id, question, topic_entities, answers = (
            "q",
            "who directed the films written by [Kay Lo]",
            ["Kay Lo"],
            [
                "Ann Bell",
                "Bo Chan",
            ],
        )

        def __init__(self, hops):
            self.hops = hops

    def first_relation(hops, gold_paths="hops"):
        examples, _ = collect_examples(
            MemoryKG(SHORTCUT), [Q(hops)], ["knowledge_navigator"], gold_paths=gold_paths
        )
        first = next(ex for ex in examples if ex.role == "relation")
        return {first.replies[i] for i in first.right}

    assert any("spouse" in r for r in first_relation(None))  # the shortest path
    right = first_relation(2)
    assert right and all("written" in r for r in right)
    assert any("spouse" in r for r in first_relation(2, gold_paths="shortest"))  # the hop count ignored
    with pytest.raises(ConfigError, match="gold_paths"):
        collect_examples(MemoryKG(SHORTCUT), [Q(2)], ["knowledge_navigator"], gold_paths="longest")


def test_the_teacher_ranks_the_explorer_s_relations_per_level(kg):
    # with a walk length the explorer would rank one relation chain, a decision no gold path labels; the
    # teacher runs it per level, the choice the specialist makes, so both hops' relations are taught
    class Q:
        id, question, topic_entities, answers = Q2

    examples, counts = collect_examples(kg, [Q()], ["graph_explore"], options={"graph_explore": {"hops": 2}})
    # Babaloo Mandel has one relation (no decision); each of his films' relations are ranked at level 2
    relations = [ex for ex in examples if ex.role == "relation"]
    assert len(relations) == 2 and counts["graph_explore/relation"] == 2
    assert all({ex.replies[i] for i in ex.right} == {"[directed_by]"} for ex in relations)
    # with the chain forced on, no relation decision is left to teach
    chained = {"graph_explore": {"hops": 2, "relation_chain": True}}
    examples, counts = collect_examples(kg, [Q()], ["graph_explore"], options=chained)
    assert counts["graph_explore/relation"] == 0 and not [ex for ex in examples if ex.role == "relation"]


def test_the_gold_chains_of_a_question_with_its_hop_count():
    t = Teacher(MemoryKG(SHORTCUT))
    assert t.set_question("q", ["Kay Lo"], ["Ann Bell", "Bo Chan"], hops=2)
    assert t._gold.chains == {(("written_by", "in"), ("directed_by", "out"))}
    chain = Decision(
        "chain",
        (
            (("Kay Lo",), (("written_by", "in"), ("written_by", "out"))),
            (("Kay Lo",), (("written_by", "in"), ("directed_by", "out"))),
        ),
    )
    assert right_options(chain, ["a", "b"], t._gold) == [1]
    # without a hop count there is no chain to teach
    assert t.set_question("q", ["Kay Lo"], ["Ann Bell", "Bo Chan"])
    assert right_options(chain, ["a", "b"], t._gold) == []


def test_the_teacher_labels_the_explorer_s_relation_chain(kg):
    # a second pass with the chain on records the chain decision alone; the levels' relations come from
    # the first pass, per level
    class Q:
        id, question, topic_entities, answers = Q2
        hops = 2

    examples, counts = collect_examples(kg, [Q()], ["graph_explore"], options={"graph_explore": {"hops": 2}})
    chains = [ex for ex in examples if ex.role == "chain"]
    assert len(chains) == 1 and counts["graph_explore/chain"] == 1
    assert {chains[0].replies[i] for i in chains[0].right} == {"reverse of written by, then directed by"}
    assert "Relation chain" in chains[0].chat[-1]["content"]
    assert counts["graph_explore/relation"] == 2  # the first pass's, none from the chain pass
    assert len([ex for ex in examples if ex.role == "relation"]) == 2
    # a question without its hop count has no chain decision
    del Q.hops
    examples, counts = collect_examples(kg, [Q()], ["graph_explore"], options={"graph_explore": {"hops": 2}})
    assert counts["graph_explore/chain"] == 0 and not [ex for ex in examples if ex.role == "chain"]


def test_the_teacher_labels_the_agent_s_relation_chain_with_the_explorer_s_prompt(kg):
    # graph_agent ranks the same chain prompt as graph_explore (the adapter they share learns both); the
    # first pass, chain off, labels the agent's actions at each hop, the second the chain alone
    class Q:
        id, question, topic_entities, answers = Q2
        hops = 2

    options = {"graph_agent": {"hops": 2}}
    examples, counts = collect_examples(kg, [Q()], ["graph_agent"], options=options)
    chains = [ex for ex in examples if ex.role == "chain"]
    assert len(chains) == 1 and counts["graph_agent/chain"] == 1
    assert {chains[0].replies[i] for i in chains[0].right} == {"reverse of written by, then directed by"}
    explorer, _ = collect_examples(kg, [Q()], ["graph_explore"], options={"graph_explore": {"hops": 2}})
    assert [ex.chat for ex in explorer if ex.role == "chain"] == [chains[0].chat]
    assert counts["graph_agent/action"] >= 1  # the first pass's steps that had a choice
    assert all(ex.role in ("action", "chain") for ex in examples)
    # at 1 hop the agent's chain is one relation (the explorer ranks none there)
    one = type(
        "Q1", (), {"id": Q1[0], "question": Q1[1], "topic_entities": Q1[2], "answers": Q1[3], "hops": 1}
    )
    examples, counts = collect_examples(kg, [one()], ["graph_agent"], options={"graph_agent": {"hops": 1}})
    chains = [ex for ex in examples if ex.role == "chain"]
    assert len(chains) == 1 and {chains[0].replies[i] for i in chains[0].right} == {"directed by"}
    explorer, counts = collect_examples(
        kg, [one()], ["graph_explore"], options={"graph_explore": {"hops": 1}}
    )
    assert counts["graph_explore/chain"] == 0 and not [ex for ex in explorer if ex.role == "chain"]


def test_the_teacher_labels_the_navigator_s_relation_chain(kg):
    class Q:
        id, question, topic_entities, answers = Q2
        hops = 2

    examples, counts = collect_examples(
        kg, [Q()], ["knowledge_navigator"], options={"knowledge_navigator": {"hops": 2}}
    )
    chains = [ex for ex in examples if ex.role == "chain"]
    assert len(chains) == 1 and counts["knowledge_navigator/chain"] == 1
    assert {chains[0].replies[i] for i in chains[0].right} == {"reverse of written by, then directed by"}
    # as a specialist sees it: the chain prompt without the worked example
    assert "Relation chain" in chains[0].chat[-1]["content"] and "Example" not in chains[0].chat[0]["content"]
    # the per-hop relations come from the first pass alone (Babaloo Mandel's one relation needs no call;
    # Splash's and Parenthood's second hops are one decision each)
    assert counts["knowledge_navigator/relation"] == len([ex for ex in examples if ex.role == "relation"]) > 0


def test_a_teacher_of_some_roles_walks_the_gold_trajectory_and_records_only_them(kg):
    t = Teacher(kg, roles=frozenset({"answer"}))
    t.set_question("q1", ["Splash"], ["Ron Howard"])
    keys = ((("Splash",), "directed_by", "out"), (("Splash",), "written_by", "out"))
    ranking = rank(t, "which relation?", ["a", "b"], role="relation", keys=keys)
    assert ranking.best == "a"  # still answered right
    assert not t.examples and t.counts["relation"] == 0  # but not recorded
    rank(t, "who?", ["Tom Hanks", "Ron Howard"], role="answer")
    assert [ex.role for ex in t.examples] == ["answer"]


def test_collect_examples_skips_constraint_questions_with_a_count(kg):
    from kg_agents.eval.datasets import Question

    qid, question, topics, answers = Q1
    chain = Question(qid, question, answers, topics, qtype="chain")
    constraint = Question("c1", question + " in 1984", answers, topics, qtype="constraint")
    examples, counts = collect_examples(kg, [chain, constraint], ["graph_rag"])
    assert counts["questions"] == 1 and counts["skipped_constraint"] == 1
    assert examples and {ex.question_id for ex in examples} == {qid}
