from __future__ import annotations

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from kg_agents.core.answers import parse_answers
from kg_agents.kg import MemoryKG
from kg_agents.kg.testing import CONTRACT_TRIPLES
from kg_agents.methods.baselines.graph import create_graph_rag_graph, create_llm_only_graph
from tests.fakes import FakeChat


@pytest.fixture
def kg():
    return MemoryKG(CONTRACT_TRIPLES)


def test_llm_only_answers_and_usage():
    llm = FakeChat(replies=["Answer: Ron Howard"])
    g = create_llm_only_graph(None, llm=llm)
    out = g.invoke({"question": "who directed Splash"})
    assert out["answers"] == ["Ron Howard"]
    assert out["usage"]["llm_calls"] == 1
    assert out["usage"]["kg_calls"] == 0
    assert out["paths"] == []


def test_llm_only_empty_question_no_model_call():
    llm = FakeChat()  # never called
    out = create_llm_only_graph(None, llm=llm).invoke({"question": "   "})
    assert out["answers"] == [] and out["errors"]
    assert out["usage"]["llm_calls"] == 0


def test_graph_rag_paths_verified(kg):
    llm = FakeChat(replies=["Answer: Ron Howard"])
    g = create_graph_rag_graph(kg, llm=llm)
    out = g.invoke({"question": "who directed [Splash]", "topic_entities": ["Splash"]})
    assert out["answers"] == ["Ron Howard"]
    assert [p.to_text() for p in out["paths"]] == ["Splash -> directed_by -> Ron Howard"]
    assert out["usage"]["llm_calls"] == 1 and out["usage"]["kg_calls"] >= 1
    assert any("Ron Howard" in e for e in out["evidence"])


def test_graph_rag_stream_batch_checkpointer(kg):
    llm = FakeChat(replies=["Answer: Ron Howard"])
    g = create_graph_rag_graph(kg, llm=llm, checkpointer=InMemorySaver())
    cfg = {"configurable": {"thread_id": "t1"}}
    events = list(g.stream({"question": "who directed Splash", "topic_entities": ["Splash"]}, cfg))
    assert [next(iter(e)) for e in events] == ["link_entities", "retrieve", "answer", "constrain"]
    outs = create_graph_rag_graph(kg, llm=llm).batch(
        [{"question": "q1", "topic_entities": ["Splash"]}, {"question": "q2", "topic_entities": ["Big"]}]
    )
    assert len(outs) == 2 and all(o["usage"]["llm_calls"] == 1 for o in outs)


async def test_graph_rag_ainvoke(kg):
    llm = FakeChat(replies=["Answer: Ron Howard"])
    out = await create_graph_rag_graph(kg, llm=llm).ainvoke(
        {"question": "who directed Splash", "topic_entities": ["Splash"]}, context={"max_triples": 2}
    )
    assert out["answers"] == ["Ron Howard"]


@pytest.mark.parametrize(
    "text,want",
    [
        ("Answer: Ron Howard | Penny Marshall", ["Ron Howard", "Penny Marshall"]),
        ("I think...\nAnswer:\n- Big\n- Splash.", ["Big", "Splash"]),
        ("1. Tom Hanks\n2. tom hanks", ["Tom Hanks"]),
        ("", []),
        ("The answer is: Paris, France", ["Paris, France"]),
    ],
)
def test_parse_answers(text, want):
    assert parse_answers(text) == want


def test_graph_rag_supporting_path_for_a_sentence_answer(kg):
    llm = FakeChat(replies=["Answer: Splash was directed by Ron Howard"])
    out = create_graph_rag_graph(kg, llm=llm).invoke(
        {"question": "who directed [Splash]", "topic_entities": ["Splash"]}
    )
    assert [p.to_text() for p in out["paths"]] == ["Splash -> directed_by -> Ron Howard"]
