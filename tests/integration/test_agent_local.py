"""A LangChain 1.x agent (``langchain.agents.create_agent``) on the embedded model and the real MetaQA KG."""

from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage, ToolMessage

pytestmark = pytest.mark.integration

QUESTION = "who directed [Splash]"  # MetaQA 1-hop dev set; gold answer: Ron Howard


def test_create_agent_answers_a_metaqa_question_offline() -> None:
    from langchain.agents import create_agent

    from kg_agents import open_kg
    from kg_agents.llm import resolve_chat_model
    from kg_agents.tools import kg_toolkit

    kg = open_kg("metaqa")
    agent = create_agent(resolve_chat_model("local"), kg_toolkit(kg))
    out = agent.invoke({"messages": [("user", QUESTION)]}, {"recursion_limit": 12})
    msgs = out["messages"]
    calls = [c for m in msgs if isinstance(m, AIMessage) for c in m.tool_calls]
    results = [m.content for m in msgs if isinstance(m, ToolMessage)]
    for m in msgs:  # the transcript, shown with -s
        print(f"{type(m).__name__}: {m.content!r} {getattr(m, 'tool_calls', '') or ''}")
    assert calls and all(
        c["name"] in {"RetrieveNode", "NodeFeature", "NeighborCheck", "NodeDegree"} for c in calls
    )
    assert any("Ron Howard" in r for r in results)  # a tool call found the answer in the KG
    final = msgs[-1]
    assert isinstance(final, AIMessage) and not final.tool_calls and "Ron Howard" in final.content
    assert final.usage_metadata and final.usage_metadata["output_tokens"] > 0
