"""graph_cot's parsers of model outputs: ReAct steps, bracketed lists, scores, votes, Yes/No, relations."""

from __future__ import annotations

import pytest

from kg_agents.methods.graph_cot.parsing import (
    match_relations,
    parse_action,
    parse_bracket_list,
    parse_score,
    parse_selection,
    parse_thought,
    parse_yes,
    strip_label,
)


@pytest.mark.parametrize(
    "text,thought,actions,finish",
    [
        (
            "Thought 1: find it.\nAction 1: NeighborCheck[Splash, directed_by]",
            "find it.",
            [("NeighborCheck", ["Splash", "directed_by"])],
            None,
        ),
        ("**Thought:** x\n**Action:** RetrieveNode(Tom Hanks)", "x", [("RetrieveNode", ["Tom Hanks"])], None),
        (
            "Action: NodeFeature[Crouching Tiger, Hidden Dragon, label]",
            "",
            [("NodeFeature", ["Crouching Tiger, Hidden Dragon", "label"])],
            None,
        ),
        ("Action 4: Finish[Ron Howard | Penny Marshall]", "", [], ["Ron Howard", "Penny Marshall"]),
        (
            "NodeFeature[a, label], NodeFeature[b, label]",
            "",
            [("NodeFeature", ["a", "label"]), ("NodeFeature", ["b", "label"])],
            None,
        ),
    ],
)
def test_parse_action(text, thought, actions, finish):
    p = parse_action(text)
    assert (p.thought, p.actions, p.finish, p.error) == (thought, actions, finish, None)


def test_parsers_edge_cases():
    assert parse_action("Action 1: Search[x]").error == "Invalid action 'Action 1: Search[x]'."
    assert parse_action("").error == "No action found."
    assert parse_bracket_list("I think [a, b] and then [c | d]") == ["c", "d"]
    assert parse_bracket_list("Relevant Entities: Tom Hanks, Big") == ["Tom Hanks", "Big"]
    assert parse_score("Score: 0.75") == 0.75 and parse_score("80%") == 0.8 and parse_score("none") is None
    assert parse_selection("The best choice is 3. Choice 1 next, 7 is out of range", 3) == [3, 1]


def test_parse_thought_and_labels():
    assert parse_thought("Thought: Splash was directed by Ron Howard. Finish[Ron Howard]") == (
        "Splash was directed by Ron Howard."
    )
    assert parse_thought("Action 2: Finish[Ron Howard]") == "Action 2: Finish[Ron Howard]"  # nothing before
    assert parse_thought("I need the director of Splash.") == "I need the director of Splash."
    assert strip_label("**Action 3:** NodeDegree[x, y]") == "NodeDegree[x, y]"


def test_parse_yes():
    assert parse_yes("[Yes] they are enough") and parse_yes(" yes.")
    assert not parse_yes("[No]") and not parse_yes("I think yes")


def test_match_relations():
    rels = ["directed_by", "~starred_actors", "~written_by"]
    assert match_relations(["Directed By", "starred_actors", "nope", "directed_by"], rels) == [
        "directed_by",
        "~starred_actors",
    ]
    assert match_relations(["written_by"], ["written_by", "~written_by"]) == ["written_by"]
