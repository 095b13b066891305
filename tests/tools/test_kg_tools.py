from __future__ import annotations

from typing import ClassVar

import pytest
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import BaseTool
from langchain_tests.unit_tests import ToolsUnitTests
from langgraph.prebuilt import create_react_agent

from kg_agents.errors import ConfigError
from kg_agents.kg import MemoryKG
from kg_agents.kg.testing import CONTRACT_TRIPLES
from kg_agents.methods.baselines.graph import create_graph_rag_graph
from kg_agents.tools import KGToolbox, kg_toolkit, reasoning_tool
from tests.fakes import FakeChat

KG = MemoryKG(CONTRACT_TRIPLES)


def _tool(name: str, **kw) -> BaseTool:
    return {t.name: t for t in kg_toolkit(KG, **kw)}[name]


# --------------------------------------------------------------------------- standard suites
class _KGToolSuite:
    name = ""
    example: ClassVar[dict] = {}

    @property
    def tool_constructor(self) -> BaseTool:
        return _tool(self.name)

    @property
    def tool_invoke_params_example(self) -> dict:
        return self.example


class TestRetrieveNodeStandard(_KGToolSuite, ToolsUnitTests):
    name, example = "RetrieveNode", {"keyword": "tom hanks"}


class TestNodeFeatureStandard(_KGToolSuite, ToolsUnitTests):
    name, example = "NodeFeature", {"node": "Splash", "feature": "label"}


class TestNeighborCheckStandard(_KGToolSuite, ToolsUnitTests):
    name, example = "NeighborCheck", {"node": "Tom Hanks", "neighbor_type": "~starred_actors"}


class TestNodeDegreeStandard(_KGToolSuite, ToolsUnitTests):
    name, example = "NodeDegree", {"node": "Splash", "neighbor_type": "directed_by"}


def _rag_tool() -> BaseTool:
    llm = FakeChat(replies=["Answer: Ron Howard"])
    return reasoning_tool(create_graph_rag_graph(KG, llm=llm))


class TestReasoningToolStandard(ToolsUnitTests):
    @property
    def tool_constructor(self) -> BaseTool:
        return _rag_tool()

    @property
    def tool_invoke_params_example(self) -> dict:
        return {"question": "who directed [Splash]", "topic_entities": ["Splash"]}


# --------------------------------------------------------------------------- semantics
def test_neighbor_check_both_directions():
    assert _tool("NeighborCheck").invoke({"node": "Splash", "neighbor_type": "directed_by"}) == (
        "The directed_by neighbors of Splash are ['Ron Howard']."
    )
    out = _tool("NeighborCheck").invoke({"node": "Tom Hanks", "neighbor_type": "~starred_actors"})
    assert (
        out
        == "The ~starred_actors neighbors of Tom Hanks are ['Splash', 'Big', 'Cast Away', 'Forrest Gump']."
    )


def test_neighbor_check_truncates_with_count():
    out = _tool("NeighborCheck", max_neighbors=2).invoke(
        {"node": "Tom Hanks", "neighbor_type": "~starred_actors"}
    )
    assert out == "The ~starred_actors neighbors of Tom Hanks are ['Splash', 'Big'] (the first 2 of 4)."


def test_node_degree_and_feature():
    assert _tool("NodeDegree").invoke({"node": "Ron Howard", "neighbor_type": "~directed_by"}) == (
        "Ron Howard has 2 ~directed_by neighbors."
    )
    assert (
        _tool("NodeFeature").invoke({"node": "Amélie", "feature": "name"}) == "The label of Amélie is Amélie."
    )


def test_retrieve_node_case_folded():
    assert _tool("RetrieveNode").invoke({"keyword": "  robert zemeckis "}) == (
        "The ID of the node is Robert Zemeckis."
    )


def test_bad_node_gives_close_matches_not_traceback():
    out = _tool("NeighborCheck").invoke({"node": "Tom Hank", "neighbor_type": "~starred_actors"})
    assert out.startswith("There is no node 'Tom Hank' in the graph. Closest nodes: 'Tom Hanks'")
    out = _tool("RetrieveNode").invoke({"keyword": "Robert Zemekis"})
    assert out == "No node matches 'Robert Zemekis'. Closest nodes: 'Robert Zemeckis'."


def test_bad_type_and_feature_list_the_valid_ones():
    out = _tool("NodeDegree").invoke({"node": "Splash", "neighbor_type": "produced_by"})
    assert out == (
        "Unknown neighbor type 'produced_by'. The neighbor types of Splash are: written_by, "
        "directed_by, starred_actors, release_year."
    )
    out = _tool("NodeFeature").invoke({"node": "Splash", "feature": "budget"})
    assert out == "Node Splash has no feature 'budget'. Its features are: label."


def test_tool_call_error_is_a_tool_message():
    msg = _tool("NeighborCheck").invoke(
        {
            "type": "tool_call",
            "id": "c1",
            "name": "NeighborCheck",
            "args": {"node": "Nobody", "neighbor_type": "directed_by"},
        }
    )
    assert isinstance(msg, ToolMessage) and msg.status == "error" and "no node 'Nobody'" in msg.content


def test_toolbox_run_text_actions():
    box = KGToolbox(KG)
    obs, triples = box.run("NeighbourCheck", ["Big", "directed_by"])
    assert obs == "The directed_by neighbors of Big are ['Penny Marshall']."
    assert [(t.head, t.relation, t.tail) for t in triples] == [("Big", "directed_by", "Penny Marshall")]
    from langchain_core.tools import ToolException

    with pytest.raises(ToolException, match="Unknown action 'Search'"):
        box.run("Search", ["x"])
    with pytest.raises(ToolException, match="takes 2 arguments"):
        box.run("NodeDegree", ["Big"])


def test_reasoning_tool_text_and_artifact():
    tool = _rag_tool()
    msg = tool.invoke(
        {
            "type": "tool_call",
            "id": "c1",
            "name": tool.name,
            "args": {"question": "who directed [Splash]", "topic_entities": ["Splash"]},
        }
    )
    assert msg.content == "Answers: Ron Howard\nPaths:\nSplash -> directed_by -> Ron Howard"
    assert msg.artifact["usage"]["llm_calls"] == 1


def test_reasoning_tool_no_entity_is_a_tool_error():
    out = _rag_tool().invoke({"question": "who directed it", "topic_entities": ["No Such Film"]})
    assert out.startswith("The reasoning graph found no answer:")


# --------------------------------------------------------------------------- a chat agent
def _neighbor_check(call_id: str, node: str, relation: str) -> AIMessage:
    """A scripted model turn that calls ``NeighborCheck`` on ``node`` along ``relation``."""
    args = {"node": node, "neighbor_type": relation}
    return AIMessage(content="", tool_calls=[{"name": "NeighborCheck", "id": call_id, "args": args}])


# LangGraph's prebuilt agent (deprecated in LangGraph 1.x) stays tested for older code
@pytest.mark.filterwarnings("ignore:create_react_agent has been moved")
def test_create_react_agent_with_kg_tools():
    script = [
        _neighbor_check("1", "Tom Hanks", "~starred_actors"),
        _neighbor_check("2", "Big", "directed_by"),
        AIMessage(content="Penny Marshall directed Big."),
    ]
    model = FakeChat(replies=script, cycle=False)
    agent = create_react_agent(model, kg_toolkit(KG))
    out = agent.invoke({"messages": [("user", "Who directed the Tom Hanks movie Big?")]})
    tool_msgs = [m for m in out["messages"] if isinstance(m, ToolMessage)]
    assert [m.content for m in tool_msgs] == [
        "The ~starred_actors neighbors of Tom Hanks are ['Splash', 'Big', 'Cast Away', 'Forrest Gump'].",
        "The directed_by neighbors of Big are ['Penny Marshall'].",
    ]
    assert out["messages"][-1].content == "Penny Marshall directed Big."


def test_create_agent_gets_close_matches_for_an_unknown_node():
    """LangChain 1.x ``create_agent``: a misspelt node comes back as a tool message naming close matches, the
    agent goes on and fixes the call."""
    from langchain.agents import create_agent

    script = [
        _neighbor_check("1", "Tom Hank", "~starred_actors"),  # misspelt
        _neighbor_check("2", "Tom Hanks", "~starred_actors"),
        AIMessage(content="Splash, Big, Cast Away and Forrest Gump."),
    ]
    agent = create_agent(FakeChat(replies=script, cycle=False), kg_toolkit(KG))
    out = agent.invoke({"messages": [("user", "Which movies did Tom Hanks star in?")]})
    first, second = [m for m in out["messages"] if isinstance(m, ToolMessage)]
    assert first.status == "error" and first.content.startswith(
        "There is no node 'Tom Hank' in the graph. Closest nodes: 'Tom Hanks'"
    )
    assert second.status == "success" and "'Cast Away'" in second.content
    assert out["messages"][-1].content == "Splash, Big, Cast Away and Forrest Gump."


# LangGraph's prebuilt agent (deprecated in LangGraph 1.x) stays tested for older code
@pytest.mark.filterwarnings("ignore:create_react_agent has been moved")
def test_create_react_agent_with_reasoning_tool():
    script = [
        AIMessage(
            content="",
            tool_calls=[{"name": "kg_reasoning", "id": "1", "args": {"question": "who directed [Splash]"}}],
        ),
        AIMessage(content="Ron Howard."),
    ]
    agent = create_react_agent(FakeChat(replies=script, cycle=False), [_rag_tool()])
    out = agent.invoke({"messages": [("user", "Who directed Splash?")]})
    tool_msg = next(m for m in out["messages"] if isinstance(m, ToolMessage))
    assert tool_msg.content == "Answers: Ron Howard\nPaths:\nSplash -> directed_by -> Ron Howard"


def test_reasoning_tool_from_a_method_name():
    llm = FakeChat(
        replies=["Action: NeighborCheck[Splash, directed_by]", "Thought: known.\nAction: Finish[Ron Howard]"],
        tools=False,
    )
    tool = reasoning_tool("graph_agent", kg=KG, llm=llm, strategy="cot", max_steps=2, decide="generate")
    assert tool.invoke({"question": "who directed [Splash]"}) == (
        "Answers: Ron Howard\nPaths:\nSplash -> directed_by -> Ron Howard"
    )
    with pytest.raises(ConfigError, match="needs kg"):
        reasoning_tool("graph_agent")
    with pytest.raises(ConfigError, match="unknown option"):
        reasoning_tool("graph_agent", kg=KG, llm=llm, beam=3)
