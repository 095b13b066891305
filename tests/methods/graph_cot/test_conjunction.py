"""graph_explore and graph_agent with several topic entities: one walk from each, the answers where the
walks meet (each with a verified path from each topic entity), none when they do not; the scripted
chat model."""

from __future__ import annotations

import pytest

from kg_agents.errors import ConfigError
from kg_agents.kg import MemoryKG
from kg_agents.kg.base import verify_path
from kg_agents.kg.testing import CONTRACT_TRIPLES
from kg_agents.methods.graph_cot.conjunction import route_prepare
from kg_agents.methods.graph_cot.graph import create_graph_agent_graph, create_graph_explore_graph
from tests.fakes import FakeChat
from tests.methods.meeting import assert_answered_where_they_meet

KG = MemoryKG(CONTRACT_TRIPLES)
BOTH = {
    "question": "which films starring [Tom Hanks] did [Robert Zemeckis] direct",
    "topic_entities": ["Tom Hanks", "Robert Zemeckis"],
}
FACTORIES = [create_graph_explore_graph, create_graph_agent_graph]


def _in_order(text: str, options: list[str]) -> list[float]:
    """Options scored in the order offered (the first is the likeliest)."""
    return [float(-i) for i in range(len(options))]


@pytest.mark.parametrize("factory", FACTORIES, ids=["explore", "agent"])
def test_two_topics_are_walked_each_and_answered_where_they_meet(factory):
    llm = FakeChat(logprobs=_in_order)
    out = factory(KG, llm=llm, hops=2).invoke(BOTH)
    assert_answered_where_they_meet(out, KG)
    # each topic's chains of 1 and 2 hops ranked against the whole question
    ranked = [t for t in out["trace"] if t["node"] == "rank_chains"]
    assert [r["topic"] for r in ranked] == ["Tom Hanks", "Robert Zemeckis"]
    assert all(r["hops"] == [1, 2] and r["chains"] > 1 for r in ranked)
    asked = [p for p in llm.prompts if "Relation chain:" in p and BOTH["question"] in p]
    assert [t for t in ("Tom Hanks", "Robert Zemeckis") if any(f"Entity: {t}" in p for p in asked)] == [
        "Tom Hanks",
        "Robert Zemeckis",
    ]
    walk = next(t for t in out["trace"] if t["node"] == "walk_topics")
    assert walk["met"] is True and walk["tries"] == 1
    assert walk["walks"] == {"Tom Hanks": [["~starred_actors"]], "Robert Zemeckis": [["~directed_by"]]}
    # the whole set ranked best first, no chain of thoughts
    assert out["answers"] == [o for o, _ in walk["ranking"]["top"]]
    assert not [t for t in out["trace"] if t["node"] == "expand"]


def test_the_next_combinations_are_tried_until_the_walks_meet():
    prefer = {"Tom Hanks": "reverse of starred actors, then directed by"}

    def scores(text: str, options: list[str]) -> list[float]:
        # the whole question (not the calibration's baseline, the entity alone) prefers Tom Hanks's directors
        asked = BOTH["question"] in text and "Relation chain:" in text
        best = next((v for k, v in prefer.items() if asked and f"Entity: {k}" in text), None)
        return [0.0 if o == best else -1.0 - i for i, o in enumerate(options)]

    out = create_graph_explore_graph(KG, llm=FakeChat(logprobs=scores), hops=2).invoke(BOTH)
    walk = next(t for t in out["trace"] if t["node"] == "walk_topics")
    # Tom Hanks's directors and Robert Zemeckis's films do not meet; his films and the films do
    assert walk["met"] is True and walk["tries"] > 1
    assert walk["walks"]["Tom Hanks"] == [["~starred_actors"]]
    assert sorted(out["answers"]) == ["Cast Away", "Forrest Gump"] and len(out["paths"]) == 4


@pytest.mark.parametrize("factory", FACTORIES, ids=["explore", "agent"])
def test_walks_that_do_not_meet_answer_nothing(factory):
    q = {"question": "which films of [Tom Hanks] are in [French]", "topic_entities": ["Tom Hanks", "French"]}
    out = factory(KG, llm=FakeChat(logprobs=_in_order), hops=1).invoke(q)
    walk = next(t for t in out["trace"] if t["node"] == "walk_topics")
    assert walk["met"] is False and walk["tries"] == 1
    assert out["answers"] == [] and out["paths"] == []
    assert [e["type"] for e in out["errors"]] == ["NoMeeting"]


def test_one_topic_or_the_option_off_keeps_the_chain_of_thoughts():
    settings = {"decide": "rank", "conjunction": True, "levels": 3, "k_eff": 1}
    frontier = [{"id": "r", "done": False}]
    two = {"question": "q", "topic_entities": ["A", "B"], "frontier": frontier, "level": 0}
    assert route_prepare({**two, "settings": settings}) == "walk_topics"
    for state in (
        {**two, "settings": {**settings, "conjunction": False}},
        {**two, "settings": {**settings, "decide": "generate"}},
        {**two, "topic_entities": ["A"], "settings": settings},
    ):
        assert [s.node for s in route_prepare(state)] == ["expand"]


@pytest.mark.integration
@pytest.mark.parametrize("factory", FACTORIES, ids=["explore", "agent"])
def test_local_model_walks_each_topic_of_a_conjunction_on_a_small_kg(factory):
    """The embedded chat model (zero-shot) ranks each topic's chains: whatever it chooses, the answers
    are where the walks meet (none when they do not), each with a verified path from each topic."""
    from kg_agents.llm import resolve_chat_model

    g = factory(KG, llm=resolve_chat_model("local"), adapter="none", pack="none", hops=1)
    out = g.invoke(BOTH)
    walk = next(t for t in out["trace"] if t["node"] == "walk_topics")
    assert all(verify_path(KG, p) for p in out["paths"])
    if walk["met"]:
        assert out["errors"] == [] and out["answers"]
        for a in out["answers"]:
            assert sorted(p.start for p in out["paths"] if p.end == a) == ["Robert Zemeckis", "Tom Hanks"]
    else:
        assert out["answers"] == [] and [e["type"] for e in out["errors"]] == ["NoMeeting"]


@pytest.mark.parametrize("factory", FACTORIES, ids=["explore", "agent"])
def test_a_conjunction_with_a_constraint_keeps_the_meetings_answers_that_hold_the_value(factory):
    kg = MemoryKG(
        [*CONTRACT_TRIPLES, ("Cast Away", "release_year", "2000"), ("Forrest Gump", "release_year", "1994")]
    )
    q = {**BOTH, "question": BOTH["question"] + " in 1994"}
    g = factory(kg, llm=FakeChat(logprobs=_in_order), hops=1)
    out = g.invoke(q)
    assert out["answers"] == ["Forrest Gump"] and out["errors"] == []
    assert sorted(p.to_text() for p in out["paths"]) == [
        "Forrest Gump -> release_year -> 1994",
        "Robert Zemeckis -> ~directed_by -> Forrest Gump",
        "Tom Hanks -> ~starred_actors -> Forrest Gump",
    ]
    assert all(verify_path(kg, p) for p in out["paths"])
    step = next(t for t in out["trace"] if t["node"] == "constrain")
    assert (step["value"], step["kept"], step["dropped"]) == ("1994", 1, 1)
    off = g.invoke(q, context={"constraint": False})
    assert sorted(off["answers"]) == ["Cast Away", "Forrest Gump"] and len(off["paths"]) == 4
    with pytest.raises(ConfigError, match="constraint"):
        factory(kg, llm=FakeChat(), constraint="on")


def _genre_kg() -> MemoryKG:
    """A genre with 130 films, a director's 2 horror films the last of them: past graph_agent's read cap
    of 100 (graph_explore's is an option, 50 by default)."""
    triples = [(f"Film {i:03d}", "has_genre", "Horror") for i in range(130)]
    triples += [
        ("Film 128", "directed_by", "Tod"),
        ("Film 129", "directed_by", "Tod"),
        ("Other", "directed_by", "Tod"),
    ]
    return MemoryKG(triples)


@pytest.mark.parametrize("factory", FACTORIES, ids=["explore", "agent"])
def test_a_genre_cut_at_the_read_cap_is_checked_from_the_directors_films(factory):
    kg = _genre_kg()
    q = {"question": "[Tod]'s [Horror] pictures?", "topic_entities": ["Tod", "Horror"]}
    out = factory(kg, llm=FakeChat(logprobs=_in_order), hops=1).invoke(q)
    walk = next(t for t in out["trace"] if t["node"] == "walk_topics")
    assert walk["met"] is True and walk["checked_back"] == ["Horror"]
    assert sorted(out["answers"]) == ["Film 128", "Film 129"] and not out.get("errors")
    assert all(verify_path(kg, p) for p in out["paths"]) and len(out["paths"]) == 4
