"""Shared scripts of the graph_cot tests: the contract KG, a question, and FakeChat rules by prompt.

Each prompt of Graph-CoT is recognised by a key only it contains (the first matching rule wins: the
merge prompt also contains chains, so it comes first), so parallel branches (``Send``) get the same
replies whatever order they run in.
"""

from __future__ import annotations

from typing import Any

from kg_agents.core.metering import MeteredKG
from kg_agents.kg import MemoryKG
from kg_agents.kg.testing import CONTRACT_TRIPLES
from kg_agents.methods.graph_cot.interaction import AGENT_PROMPTS, AgentInteraction, load_prompts
from kg_agents.tools.kg_tools import KGToolbox
from tests.fakes import FakeChat

__all__ = [
    "END_Q",
    "EXTRACT",
    "FINAL",
    "KG",
    "LOOKING",
    "MERGE",
    "PRUNE_ENT",
    "PRUNE_REL",
    "SCORE",
    "STEP",
    "THOUGHT",
    "VOTE",
    "Q",
    "agent_interaction",
    "agent_rules",
    "explore_rules",
    "text_chat",
    "trace_of",
]

KG = MemoryKG(CONTRACT_TRIPLES)
Q = {"question": "who directed [Splash]", "topic_entities": ["Splash"]}

# graph_agent's prompts (and the evaluation, merge and final prompts both methods share)
MERGE, VOTE, SCORE, FINAL, STEP = (
    "Merged Chain:",
    "Choices:",
    "Thought Chain:",
    "step budget is spent",
    "Definition of the graph",
)
# graph_explore's own prompts
THOUGHT, EXTRACT, PRUNE_REL, PRUNE_ENT, END_Q = (
    "Next Thought:",
    "Text:",
    "Head Entity:",
    "Tail Entities:",
    "Entity Attributes:",
)
LOOKING = "Thought: I need the director. Action: NeighborCheck[Splash, directed_by]"


def agent_interaction(llm: FakeChat, kg: Any = KG, **options: Any) -> AgentInteraction:
    """The agent ``create_graph_agent_graph`` builds over ``kg``, with text actions, 3 actions a step and
    the interaction options given (``relation_chain=True``, say)."""
    mkg = MeteredKG(kg)
    return AgentInteraction(
        llm,
        mkg,
        KGToolbox(mkg),
        load_prompts(None, AGENT_PROMPTS),
        40,
        None,
        action_mode="text",
        max_actions=3,
        **options,
    )


def agent_rules(
    step: Any = LOOKING,
    score: Any = "0.5",
    vote: Any = "The best choice is 1",
    merge: Any = "Thought: merging both. Action: NeighborCheck[Splash, starred_actors]",
) -> list[tuple[str, Any]]:
    """FakeChat rules for graph_agent's text actions; by default a chain that never finishes."""
    return [(MERGE, merge), (VOTE, vote), (SCORE, score), (FINAL, "Answer: Ron Howard"), (STEP, step)]


def explore_rules(
    thought: Any,
    extract: Any = "[Splash]",
    prune_rel: Any = "[directed_by]",
    prune_ent: Any = "[Ron Howard]",
    end: Any = "[Yes]",
) -> list[tuple[str, Any]]:
    """FakeChat rules for graph_explore."""
    return [
        (MERGE, "Merged thought. Finish[Ron Howard]"),
        (VOTE, "The best choice is 1"),
        (SCORE, "0.5"),
        (FINAL, "Answer: Ron Howard"),
        (THOUGHT, thought),
        (PRUNE_ENT, prune_ent),
        (PRUNE_REL, prune_rel),
        (EXTRACT, extract),
        (END_Q, end),
    ]


def trace_of(out: dict[str, Any], node: str) -> list[dict[str, Any]]:
    """The trace steps of ``node``."""
    return [t for t in out["trace"] if t.get("node") == node]


def text_chat(rules: list[tuple[str, Any]]) -> FakeChat:
    """A FakeChat without tool calling (so graph_agent writes text actions), answering by ``rules``."""
    return FakeChat(rules=rules, tools=False)
