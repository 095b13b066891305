from __future__ import annotations

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from kg_agents.core.records import error_text
from kg_agents.errors import ConfigError
from kg_agents.kg import MemoryKG
from kg_agents.kg.testing import CONTRACT_TRIPLES
from kg_agents.methods.baselines.graph import create_text_rag_graph
from kg_agents.methods.baselines.retrieval import TripleTextIndex
from tests.fakes import FakeChat


@pytest.fixture(scope="module")
def encoder():
    """The real shared MiniLM sentence encoder."""
    from kg_agents.kg.encoder import get_sentence_encoder

    return get_sentence_encoder()


@pytest.fixture
def kg():
    return MemoryKG(CONTRACT_TRIPLES)


def test_text_rag_retrieves_relevant_triples_and_verifies_paths(kg, encoder):
    llm = FakeChat(rules={"Splash": "Answer: Ron Howard"})
    g = create_text_rag_graph(kg, llm=llm, encoder=encoder)
    out = g.invoke({"question": "who directed Splash", "topic_entities": ["Splash"]}, context={"top_k": 3})
    assert out["answers"] == ["Ron Howard"]
    assert len(out["evidence"]) == 3 and "Splash directed by Ron Howard" in out["evidence"]
    # 2-hop neighbourhood: Parenthood (via Ron Howard) is a candidate, so paths of length 1 and 2 exist
    assert "Splash -> directed_by -> Ron Howard" in [p.to_text() for p in out["paths"]]
    assert all(kg.has_triple(t.head, t.relation, t.tail) for p in out["paths"] for t in p.triples)
    assert out["usage"]["llm_calls"] == 1 and out["usage"]["kg_calls"] >= 2
    retrieve = next(t for t in out["trace"] if t["node"] == "retrieve")
    assert retrieve["candidates"] > 3 and retrieve["retrieved"] == 3
    assert "Splash directed by Ron Howard" in llm.prompts[0]


def test_text_rag_candidate_budget_and_hallucinated_answer(kg, encoder):
    llm = FakeChat(default="Answer: Steven Spielberg")
    g = create_text_rag_graph(kg, llm=llm, encoder=encoder, hops=1, max_candidates=2)
    out = g.invoke({"question": "who directed Splash", "topic_entities": ["Splash"]})
    retrieve = next(t for t in out["trace"] if t["node"] == "retrieve")
    assert retrieve["candidates"] == 2 and retrieve["candidates_truncated"] is True
    # the model names no retrieved entity: nothing is answered, and the reply is in the trace
    assert out["answers"] == [] and out["paths"] == []
    step = next(t for t in out["trace"] if t["node"] == "answer")
    assert step["matched"] is False and step["raw"] == "Answer: Steven Spielberg"
    assert [e["type"] for e in out["errors"]] == ["UngroundedAnswer"]


def test_text_rag_whole_kg_index_is_persisted(kg, encoder, tmp_path):
    llm = FakeChat(default="Answer: Penny Marshall")
    g = create_text_rag_graph(kg, llm=llm, encoder=encoder, scope="kg", index_dir=str(tmp_path))
    out = g.invoke({"question": "who directed Big", "topic_entities": ["Big"]}, context={"top_k": 2})
    assert (tmp_path / "triples.faiss").is_file() and (tmp_path / "triples.tsv").is_file()
    assert "Big directed by Penny Marshall" in out["evidence"]
    assert [p.to_text() for p in out["paths"]] == ["Big -> directed_by -> Penny Marshall"]
    again = TripleTextIndex.open(kg, encoder, str(tmp_path))
    assert len(again.triples) == len(kg)
    # whole-KG scope needs no topic entity: the linking error is noted, the question still answered
    out = g.invoke({"question": "who directed the film about a mermaid"}, context={"top_k": 2})
    assert out["answers"] == ["Penny Marshall"] and list(map(error_text, out["errors"])) == [
        "link_entities: NoEntity: no entity of the KG found in the question"
    ]


def test_text_rag_batch_stream_checkpointer_and_empty_question(kg, encoder):
    llm = FakeChat(
        rules={"who directed Splash": "Answer: Ron Howard", "who directed Big": "Answer: Penny Marshall"}
    )
    g = create_text_rag_graph(kg, llm=llm, encoder=encoder, checkpointer=InMemorySaver())
    events = list(
        g.stream(
            {"question": "who directed Big", "topic_entities": ["Big"]}, {"configurable": {"thread_id": "t"}}
        )
    )
    assert [next(iter(e)) for e in events] == ["link_entities", "retrieve", "answer", "constrain"]
    outs = create_text_rag_graph(kg, llm=llm, encoder=encoder).batch(
        [
            {"question": "who directed Splash", "topic_entities": ["Splash"]},
            {"question": "who directed Big", "topic_entities": ["Big"]},
        ]
    )
    assert [o["answers"] for o in outs] == [["Ron Howard"], ["Penny Marshall"]]
    n = len(llm.prompts)
    empty = create_text_rag_graph(kg, llm=llm, encoder=encoder).invoke({"question": "  "})
    assert empty["answers"] == [] and empty["errors"] and len(llm.prompts) == n


async def test_text_rag_ainvoke(kg, encoder):
    llm = FakeChat(default="Answer: Ron Howard")
    out = await create_text_rag_graph(kg, llm=llm, encoder=encoder).ainvoke(
        {"question": "who directed Splash", "topic_entities": ["Splash"]}
    )
    assert out["answers"] == ["Ron Howard"] and out["paths"]


def test_text_rag_bad_options(kg):
    llm = FakeChat()  # never called
    with pytest.raises(ConfigError, match="scope"):
        create_text_rag_graph(kg, llm=llm, scope="web")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match=">= 1"):
        create_text_rag_graph(kg, llm=llm, hops=0)
