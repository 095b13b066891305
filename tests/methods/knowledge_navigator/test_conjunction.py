"""KnowledgeNavigator with several topic entities (one walk from each, answers where they meet) and the
whole answer set of a chain question, with the scripted chat model."""

from __future__ import annotations

import pytest

from kg_agents.errors import ConfigError
from kg_agents.kg import MemoryKG
from kg_agents.kg.base import verify_path
from kg_agents.kg.testing import CONTRACT_TRIPLES
from kg_agents.methods.knowledge_navigator.graph import create_knowledge_navigator_graph
from tests.fakes import FakeChat, FakeHops
from tests.kg.hop_by_hop import HopByHopKG
from tests.methods.constrained import IN_1988, assert_narrowed
from tests.methods.meeting import assert_answered_where_they_meet

KG = MemoryKG(CONTRACT_TRIPLES)
BOTH = "which films starring [Tom Hanks] did [Robert Zemeckis] direct"


def _in_order(text: str, options: list[str]) -> list[float]:
    """Options scored in the order offered (the first is the likeliest)."""
    return [float(-i) for i in range(len(options))]


def _graph(kg=KG, **options):
    llm = FakeChat(logprobs=_in_order)
    return llm, create_knowledge_navigator_graph(kg, llm=llm, num_variants=0, calibrate=False, **options)


@pytest.mark.parametrize("kg", [KG, HopByHopKG(KG)], ids=["chain queries", "hop by hop"])
def test_two_topics_are_walked_each_and_answered_where_they_meet(kg):
    llm, g = _graph(kg, hop_classifier=FakeHops(2))
    out = g.invoke({"question": BOTH, "topic_entities": ["Tom Hanks", "Robert Zemeckis"]})
    assert_answered_where_they_meet(out, KG)
    # each walk's chains (1 to the predicted 2 hops) ranked against the whole question
    chains = [t for t in out["trace"] if t["node"] == "select_chains"]
    assert [c["topic"] for c in chains] == ["Tom Hanks", "Robert Zemeckis"]
    assert all(c["hops"] == [1, 2] and c["asked_llm"] for c in chains)
    assert all(BOTH in p for p in llm.prompts if "Relation chain:" in p)
    walk = next(t for t in out["trace"] if t["node"] == "walk_topics")
    assert walk["met"] is True and walk["walks"] == {
        "Tom Hanks": [["~starred_actors"]],
        "Robert Zemeckis": [["~directed_by"]],
    }
    assert not [t for t in out["trace"] if t["node"] == "select_relations"]


def test_walks_that_do_not_meet_answer_nothing_by_default():
    _, g = _graph()
    q = {"question": "which films of [Tom Hanks] are in [French]", "topic_entities": ["Tom Hanks", "French"]}
    out = g.invoke(q, context={"hops": 1})
    walk = next(t for t in out["trace"] if t["node"] == "walk_topics")
    assert walk["met"] is False and walk["fallback"] is False and walk["tries"] == 1
    assert out["answers"] == [] and out["paths"] == []
    assert [e["type"] for e in out["errors"]] == ["NoMeeting"]
    assert not [t for t in out["trace"] if t["node"] == "reason"]


def test_walks_that_do_not_meet_fall_back_to_the_first_topics_walk_as_an_option():
    _, g = _graph()
    out = g.invoke(
        {"question": "which films of [Tom Hanks] are in [French]", "topic_entities": ["Tom Hanks", "French"]},
        context={"hops": 1, "conjunction_fallback": True},
    )
    walk = next(t for t in out["trace"] if t["node"] == "walk_topics")
    assert walk["met"] is False and walk["fallback"] is True
    assert sorted(out["answers"]) == ["Big", "Cast Away", "Forrest Gump", "Splash"]
    assert all(p.start == "Tom Hanks" and verify_path(KG, p) for p in out["paths"]) and len(out["paths"]) == 4


def test_a_chain_question_answers_its_whole_set_best_first():
    q = {"question": "what films did [Tom Hanks] act in", "topic_entities": ["Tom Hanks"]}
    _, g = _graph()
    out = g.invoke(q, context={"hops": 1})
    films = ["Splash", "Big", "Cast Away", "Forrest Gump"]
    assert sorted(out["answers"]) == sorted(films) and len(out["paths"]) == 4
    ranked = next(t for t in out["trace"] if t["node"] == "reason")
    assert out["answers"][0] == ranked["top"][0][0]  # the best first
    # the cut, and the previous answers (the best and those within answer_ratio of it)
    assert len(g.invoke(q, context={"hops": 1, "max_answers": 2})["answers"]) == 2
    assert g.invoke(q, context={"hops": 1, "whole_set": False})["answers"] == [out["answers"][0]]


def test_conjunction_off_walks_from_all_topics_together():
    _, g = _graph(conjunction=False)
    out = g.invoke(
        {"question": BOTH, "topic_entities": ["Tom Hanks", "Robert Zemeckis"]}, context={"hops": 1}
    )
    assert not [t for t in out["trace"] if t["node"] == "walk_topics"]
    assert [t for t in out["trace"] if t["node"] == "select_relations"]


@pytest.mark.integration
def test_local_model_walks_each_topic_of_a_conjunction_on_a_small_kg():
    """The embedded chat model (zero-shot) ranks each topic's chains: whatever it chooses, the answers
    are where the walks meet (none when they do not), each path verified."""
    from kg_agents.llm import resolve_chat_model

    g = create_knowledge_navigator_graph(KG, llm=resolve_chat_model("local"), adapter="none", pack="none")
    out = g.invoke(
        {"question": BOTH, "topic_entities": ["Tom Hanks", "Robert Zemeckis"]},
        context={"hops": 1, "num_variants": 0},
    )
    walk = next(t for t in out["trace"] if t["node"] == "walk_topics")
    assert set(walk["walks"]) <= {"Tom Hanks", "Robert Zemeckis"}
    assert all(verify_path(KG, p) for p in out["paths"])
    if walk["met"]:
        assert out["errors"] == [] and out["answers"]
        for a in out["answers"]:
            assert sorted(p.start for p in out["paths"] if KG.label(p.end) == a) == [
                "Robert Zemeckis",
                "Tom Hanks",
            ]
    else:
        assert out["answers"] == [] and [e["type"] for e in out["errors"]] == ["NoMeeting"]


def test_when_the_best_chains_do_not_meet_the_next_combinations_are_tried():
    prefer = {
        "Tom Hanks": ["reverse of starred actors, then directed by", "reverse of starred actors"],
        "Babaloo Mandel": ["reverse of written by", "reverse of written by, then release year"],
    }

    def scores(text: str, options: list[str]) -> list[float]:
        if "Relation chain:" not in text:
            return _in_order(text, options)
        best = next(v for k, v in prefer.items() if f"Entity: {k}" in text)
        return [-float(best.index(o)) if o in best else -9.0 for o in options]

    llm = FakeChat(logprobs=scores)
    g = create_knowledge_navigator_graph(KG, llm=llm, num_variants=0, calibrate=False)
    q = "which films starring [Tom Hanks] were written by [Babaloo Mandel]"
    out = g.invoke({"question": q, "topic_entities": ["Tom Hanks", "Babaloo Mandel"]}, context={"hops": 2})
    walk = next(t for t in out["trace"] if t["node"] == "walk_topics")
    # directors and films, then directors and years do not meet; films and films do, at the third try
    assert walk["met"] is True and walk["tries"] == 3
    assert walk["walks"] == {"Tom Hanks": [["~starred_actors"]], "Babaloo Mandel": [["~written_by"]]}
    assert out["answers"] == ["Splash"] and len(out["paths"]) == 2


def test_every_bracketed_mention_is_linked_and_walked():
    _, g = _graph()
    out = g.invoke({"question": BOTH}, context={"hops": 1})
    assert out["errors"] == [] and sorted(out["answers"]) == ["Cast Away", "Forrest Gump"]
    assert len(out["paths"]) == 4


def test_a_constraint_question_keeps_the_chains_answers_that_hold_the_value():
    _, g = _graph()
    out = g.invoke(IN_1988, context={"hops": 1})
    assert_narrowed(out, g.invoke(IN_1988, context={"hops": 1, "constraint": False}), KG)
    with pytest.raises(ConfigError, match="constraint"):
        _graph(constraint="yes")


@pytest.mark.integration
def test_local_model_narrows_a_metaqa_whole_constraint_question():
    """The embedded model with the bundled pack on "what did [Steven Spielberg] direct in 1993": the
    films its walk reached, narrowed to those of 1993, each with its verified path to the year."""
    from kg_agents import open_kg
    from kg_agents.eval.data_whole import load_metaqa_whole
    from kg_agents.llm import resolve_chat_model

    kg = open_kg("metaqa")
    q = next(q for q in load_metaqa_whole("dev").questions if q.id == "whole-k01")
    g = create_knowledge_navigator_graph(kg, llm=resolve_chat_model("local"))
    inp = {"question": q.question, "topic_entities": q.topic_entities}
    out = g.invoke(inp, context={"hops": 1, "num_variants": 0})
    assert out["errors"] == [] and all(verify_path(kg, p) for p in out["paths"])
    step = next(t for t in out["trace"] if t["node"] == "constrain")
    assert (step["value"], step["relation"]) == ("1993", "release_year")
    assert sorted(out["answers"]) == sorted(q.answers)  # Spielberg's films of 1993
    for a in out["answers"]:
        assert any(p.to_text() == f"{a} -> release_year -> 1993" for p in out["paths"])


def test_a_genre_cut_at_the_read_cap_is_checked_from_the_directors_films():
    triples = [(f"Film {i:02d}", "has_genre", "Horror") for i in range(30)]
    kg = MemoryKG([*triples, ("Film 28", "directed_by", "Tod"), ("Film 29", "directed_by", "Tod")])
    _, g = _graph(kg, hop_classifier=FakeHops(1), fanout_limit=10)
    out = g.invoke({"question": "[Tod]'s [Horror] pictures?", "topic_entities": ["Tod", "Horror"]})
    walk = next(t for t in out["trace"] if t["node"] == "walk_topics")
    assert walk["met"] is True and walk["checked_back"] == ["Horror"]
    assert sorted(out["answers"]) == ["Film 28", "Film 29"] and not out.get("errors")
    assert all(verify_path(kg, p) for p in out["paths"])
