"""Graph-CoT: an LLM agent over graph tools (``graph_agent``) or automatic exploration (``graph_explore``),
each searched as a chain, tree or graph of thoughts.

From "Grounding LLM Reasoning with Knowledge Graphs". Modules: ``graph`` (factories and wiring),
``nodes`` (the graph's nodes over ``GraphCoTDeps``), ``interaction`` (what one step does: agent or
explorer), ``parsing`` (model output parsers), ``state`` (context, state, settings).
"""

from __future__ import annotations

from kg_agents.methods.graph_cot.graph import (
    GraphCoTContext,
    GraphCoTState,
    create_graph_agent_graph,
    create_graph_explore_graph,
)

__all__ = ["GraphCoTContext", "GraphCoTState", "create_graph_agent_graph", "create_graph_explore_graph"]
