"""graph_rag and text_rag with several topic entities: retrieval around each, the answers reached from
every one of them (each with its path from each), no answer when none is; the scripted chat model."""

from __future__ import annotations

import pytest

from kg_agents.errors import ConfigError
from kg_agents.kg import MemoryKG
from kg_agents.kg.base import verify_path
from kg_agents.kg.testing import CONTRACT_TRIPLES
from kg_agents.methods.baselines.graph import create_graph_rag_graph, create_text_rag_graph
from kg_agents.methods.baselines.retrieval import topic_neighbourhoods
from tests.fakes import FakeChat
from tests.methods.constrained import IN_1988, assert_narrowed

KG = MemoryKG(CONTRACT_TRIPLES)
BOTH = {
    "question": "which films starring [Tom Hanks] did [Robert Zemeckis] direct",
    "topic_entities": ["Tom Hanks", "Robert Zemeckis"],
}
APART = {"question": "which films of [Tom Hanks] are in [French]", "topic_entities": ["Tom Hanks", "French"]}
MET = ["Cast Away", "Forrest Gump"]


def _in_order(text: str, options: list[str]) -> list[float]:
    """Options scored in the order offered (the first is the likeliest)."""
    return [float(-i) for i in range(len(options))]


def _one_path_per_topic(out: dict) -> None:
    for a in out["answers"]:
        starts = sorted(p.start for p in out["paths"] if p.end == a)
        assert starts == ["Robert Zemeckis", "Tom Hanks"], a
    assert len(out["paths"]) == 2 * len(out["answers"])
    assert all(verify_path(KG, p) for p in out["paths"])


@pytest.fixture(scope="module")
def encoder():
    """The real shared MiniLM sentence encoder."""
    from kg_agents.kg.encoder import get_sentence_encoder

    return get_sentence_encoder()


def test_graph_rag_answers_where_the_topics_meet_with_a_path_from_each():
    llm = FakeChat(logprobs=_in_order)
    g = create_graph_rag_graph(KG, llm=llm, answer_hops="none")
    out = g.invoke(BOTH)
    assert out["errors"] == []
    # the whole set where the neighbourhoods meet (Splash and Big are Tom Hanks's alone), best first
    assert out["answers"] == MET
    _one_path_per_topic(out)
    step = next(t for t in out["trace"] if t["node"] == "answer")
    assert step["conjunction"] is True and step["met"] == 2 and step["candidates"] == 4


def test_graph_rag_neighbourhoods_that_do_not_meet_give_no_answer():
    llm = FakeChat(logprobs=_in_order)
    g = create_graph_rag_graph(KG, llm=llm, answer_hops="none")
    out = g.invoke(APART)
    assert out["answers"] == [] and out["paths"] == []
    assert [e["type"] for e in out["errors"]] == ["NoMeeting"]
    assert llm.calls == {}  # nothing to rank
    off = g.invoke(APART, context={"conjunction": False})
    assert off["answers"] and off["errors"] == []


def test_graph_rag_prompt_keeps_triples_of_every_topic():
    llm = FakeChat(logprobs=_in_order)
    g = create_graph_rag_graph(KG, llm=llm, answer_hops="none")
    out = g.invoke(BOTH, context={"max_triples": 2})  # one of each topic's, not two of Tom Hanks's
    assert len(out["evidence"]) == 2
    assert any("Tom Hanks" in e for e in out["evidence"]) and any("Zemeckis" in e for e in out["evidence"])


def test_graph_rag_links_a_hub_topic_to_the_other_topics_neighbours():
    llm = FakeChat(logprobs=_in_order)
    g = create_graph_rag_graph(KG, llm=llm, answer_hops="none", fanout_limit=3)
    # Tom Hanks's four films are cut at three; Robert Zemeckis's two are linked back to him
    out = g.invoke(BOTH)
    assert sorted(out["answers"]) == MET and out["errors"] == []
    _one_path_per_topic(out)
    step = next(t for t in out["trace"] if t["node"] == "retrieve")
    assert step["fanout_truncated"] == ["Tom Hanks"] and step["hub_links"] == 2


def test_graph_rag_two_hop_neighbourhoods_share_the_budget_and_meet_nearest():
    per_topic, cut = topic_neighbourhoods(KG, ["Tom Hanks", "Robert Zemeckis"], 2, 30, 6)
    assert [len(x) for x in per_topic] == [3, 3] and cut
    llm = FakeChat(logprobs=_in_order)
    g = create_graph_rag_graph(KG, llm=llm, answer_hops=2)
    q = "which film starring [Tom Hanks] did [Ron Howard] direct"
    out = g.invoke({"question": q, "topic_entities": ["Tom Hanks", "Ron Howard"]})
    # both neighbourhoods reach Splash's writer and year too (two hops from each), but the film itself
    # is nearest: one hop from each, whatever the answer distance
    assert out["answers"] == ["Splash"] and out["errors"] == []
    assert sorted(p.to_text() for p in out["paths"]) == [
        "Ron Howard -> ~directed_by -> Splash",
        "Tom Hanks -> ~starred_actors -> Splash",
    ]
    step = next(t for t in out["trace"] if t["node"] == "answer")
    assert step["met"] == 1 and step["met_hops"] == 2 and step["candidates"] > 3


def test_text_rag_retrieves_around_each_topic_and_answers_where_they_meet(encoder):
    llm = FakeChat(logprobs=_in_order)
    g = create_text_rag_graph(KG, llm=llm, encoder=encoder, hops=1, answer_hops="none")
    out = g.invoke(BOTH, context={"top_k": 20})
    assert out["errors"] == []
    assert sorted(out["answers"]) == MET
    _one_path_per_topic(out)
    # the nearest triples are shared between the topic entities: each has one of two
    two = g.invoke(BOTH, context={"top_k": 2})
    assert any("Tom Hanks" in e for e in two["evidence"]) and any("Zemeckis" in e for e in two["evidence"])
    apart = g.invoke(APART, context={"top_k": 20})
    assert apart["answers"] == [] and [e["type"] for e in apart["errors"]] == ["NoMeeting"]


@pytest.mark.integration
def test_local_model_graph_rag_and_text_rag_on_a_conjunction(encoder):
    """The embedded chat model (zero-shot) ranks the entities where the topics meet: whatever its order,
    the answers are exactly those, each with a verified path from each topic entity."""
    from kg_agents.llm import resolve_chat_model

    llm = resolve_chat_model("local")
    for g in (
        create_graph_rag_graph(KG, llm=llm, pack="none", answer_hops="none"),
        create_text_rag_graph(KG, llm=llm, pack="none", encoder=encoder, hops=1, answer_hops="none"),
    ):
        out = g.invoke(BOTH)
        assert out["errors"] == [] and sorted(out["answers"]) == MET
        _one_path_per_topic(out)


def _flat(text: str, options: list[str]) -> list[float]:
    """Every option alike: each is an answer."""
    return [0.0] * len(options)


def test_graph_rag_and_text_rag_narrow_a_constraint_questions_answers(encoder):
    for g in (
        create_graph_rag_graph(KG, llm=FakeChat(logprobs=_flat), answer_hops="none"),
        create_text_rag_graph(KG, llm=FakeChat(logprobs=_flat), encoder=encoder, hops=1, answer_hops="none"),
    ):
        assert_narrowed(g.invoke(IN_1988), g.invoke(IN_1988, context={"constraint": False}), KG)
    for factory in (create_graph_rag_graph, create_text_rag_graph):
        with pytest.raises(ConfigError, match="constraint"):
            factory(KG, llm=FakeChat(), constraint=1)
