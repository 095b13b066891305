"""How one step of a Graph-CoT chain talks to the KG: the ReAct agent or the automatic explorer.

An :class:`Interaction` is the strategy object the graph's nodes hold (sec. 4.2 of the paper):
``think`` makes the step's LLM call from a branch (a chain state), ``ground`` turns the output into
the new step (observations, triples seen, entities reached, answers). :class:`AgentInteraction`
runs Graph-CoT's four tools (bound as tools, or parsed from text actions); :class:`ExploreInteraction`
extracts and links entities, then prunes relations and neighbours level by level (algorithm 1).

One module per strategy: :mod:`.base` (the shared :class:`Interaction`, the prompts, labels and triples
as text), :mod:`.agent` (``graph_agent``) and :mod:`.explore` (``graph_explore``).
"""

from __future__ import annotations

from kg_agents.methods.graph_cot.interaction.agent import (
    ActionMode,
    AgentInteraction,
    Finish,
    action_key,
    agent_frontier,
    finish_on_raw_scores,
    render_actions,
    render_agent_steps,
    walk_depth,
)
from kg_agents.methods.graph_cot.interaction.base import (
    AGENT_PROMPTS,
    COMMON_PROMPTS,
    EXPLORE_PROMPTS,
    PATH_HOPS,
    PROMPT_DIR,
    Interaction,
    entity_label,
    graph_definition,
    load_prompts,
    toolbox_relation,
    triple_text,
)
from kg_agents.methods.graph_cot.interaction.explore import KEEP_RATIO, THOUGHT_MAX_TOKENS, ExploreInteraction

__all__ = [
    "AGENT_PROMPTS",
    "COMMON_PROMPTS",
    "EXPLORE_PROMPTS",
    "KEEP_RATIO",
    "PATH_HOPS",
    "PROMPT_DIR",
    "THOUGHT_MAX_TOKENS",
    "ActionMode",
    "AgentInteraction",
    "ExploreInteraction",
    "Finish",
    "Interaction",
    "action_key",
    "agent_frontier",
    "entity_label",
    "finish_on_raw_scores",
    "graph_definition",
    "load_prompts",
    "render_actions",
    "render_agent_steps",
    "toolbox_relation",
    "triple_text",
    "walk_depth",
]
