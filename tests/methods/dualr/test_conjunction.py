"""dualr with several topic entities (a chain from every topic for each answer) and whole answer sets."""

from __future__ import annotations

import pytest

from kg_agents.errors import ConfigError
from kg_agents.kg import verify_path
from kg_agents.methods.dualr.graph import create_dualr_graph
from tests.fakes import FakeChat
from tests.methods.constrained import IN_1988, assert_narrowed
from tests.methods.dualr.test_graph import checkpoint, kg  # noqa: F401  (module fixtures)

BOTH = {
    "question": "which films starring [Tom Hanks] did [Robert Zemeckis] direct",
    "topic_entities": ["Tom Hanks", "Robert Zemeckis"],
}


def _backtrack(out):
    return next(t for t in out["trace"] if t["node"] == "backtrack")


def test_a_conjunctions_answers_have_a_verified_chain_from_every_topic(kg, checkpoint):  # noqa: F811
    for g in (
        create_dualr_graph(kg, checkpoint=checkpoint, answer_with="gnn"),
        create_dualr_graph(kg, checkpoint=checkpoint, llm=FakeChat(replies=["A"]), decide="generate"),
    ):
        out = g.invoke(BOTH)
        assert out["errors"] == [] and _backtrack(out)["conjunction_met"] is True
        # the only entities both topics reach: the films they share
        assert out["answers"] and set(out["answers"]) <= {"Cast Away", "Forrest Gump"}
        for a in out["answers"]:
            ends = [p for p in out["paths"] if p.end == a]
            assert sorted(p.start for p in ends) == ["Robert Zemeckis", "Tom Hanks"]
        assert len(out["paths"]) == 2 * len(out["answers"]) and all(verify_path(kg, p) for p in out["paths"])


def test_topics_no_candidate_joins_fall_back_to_the_candidates_own_chains(kg, checkpoint):  # noqa: F811
    g = create_dualr_graph(kg, checkpoint=checkpoint, answer_with="gnn")
    out = g.invoke(
        {"question": "films of [Tom Hanks] in [French]", "topic_entities": ["Tom Hanks", "French"]}
    )
    assert _backtrack(out)["conjunction_met"] is False
    assert out["answers"] and all(verify_path(kg, p) for p in out["paths"])
    assert all(p.start in ("Tom Hanks", "French") for p in out["paths"])


def test_a_chain_question_answers_its_whole_set_best_first(kg, checkpoint):  # noqa: F811
    g = create_dualr_graph(kg, checkpoint=checkpoint, answer_with="gnn")
    q = {"question": "which films did [Tom Hanks] act in", "topic_entities": ["Tom Hanks"]}
    g.invoke(q)  # the first run builds the exploration graph: its ties may order otherwise
    whole = g.invoke(q, context={"set_ratio": 0.01})
    chosen = g.invoke(q, context={"whole_set": False})
    assert whole["answers"][: len(chosen["answers"])] == chosen["answers"]
    assert len(whole["answers"]) > len(chosen["answers"])
    assert len(whole["paths"]) == len(whole["answers"]) and all(verify_path(kg, p) for p in whole["paths"])
    decided = next(t for t in whole["trace"] if t["node"] == "determine_answer")
    assert decided["whole_set"] == {"answers": len(whole["answers"]), "cut": False}
    cut = g.invoke(q, context={"set_ratio": 0.01, "max_answers": 2})
    assert len(cut["answers"]) == 2 and set(cut["answers"]) <= set(whole["answers"])
    assert next(t for t in cut["trace"] if t["node"] == "determine_answer")["whole_set"]["cut"] is True


@pytest.mark.integration
def test_local_model_and_bundled_explorer_answer_a_conjunction_on_a_small_kg(kg):  # noqa: F811
    """The embedded chat model and the bundled MetaQA explorer (the small KG has MetaQA's relations):
    every answer of a two-topic question has a verified chain from each topic entity."""
    from kg_agents.llm import resolve_chat_model

    g = create_dualr_graph(kg, llm=resolve_chat_model("local", max_tokens=24), pack="none")
    out = g.invoke(BOTH)
    assert out["usage"]["llm_calls"] == 1 and _backtrack(out)["conjunction_met"] is True
    assert out["answers"] and set(out["answers"]) <= {"Cast Away", "Forrest Gump"}
    for a in out["answers"]:
        assert sorted(p.start for p in out["paths"] if p.end == a) == ["Robert Zemeckis", "Tom Hanks"]
    assert all(verify_path(kg, p) for p in out["paths"])


def test_a_constraint_questions_whole_set_is_narrowed(kg, checkpoint):  # noqa: F811
    g = create_dualr_graph(kg, checkpoint=checkpoint, answer_with="gnn")
    # the tiny explorer's whole set may take in a 2-hop entity (a film's director) as well as the films
    assert_narrowed(g.invoke(IN_1988), g.invoke(IN_1988, context={"constraint": False}), kg, exact_set=False)
    with pytest.raises(ConfigError, match="constraint"):
        create_dualr_graph(kg, checkpoint=checkpoint, answer_with="gnn", constraint="no")
