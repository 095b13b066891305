"""The reasoning methods, one package each: ``kg_agents.methods.<name>``.

Each package holds its graph, its nodes, its model parts, its training, prompts and checkpoints, and
exports its factory, context and state. The factories are imported lazily here (the GCR factory
imports torch and transformers only when first used), so listing methods stays cheap.

Example:
    >>> from kg_agents.methods import create_dualr_graph     # doctest: +SKIP
"""

from __future__ import annotations

from kg_agents._lazy import lazy_attributes

_LAZY = {
    "create_llm_only_graph": "kg_agents.methods.baselines",
    "create_graph_rag_graph": "kg_agents.methods.baselines",
    "create_text_rag_graph": "kg_agents.methods.baselines",
    "create_dualr_graph": "kg_agents.methods.dualr",
    "create_gcr_graph": "kg_agents.methods.gcr",
    "create_graph_agent_graph": "kg_agents.methods.graph_cot",
    "create_graph_explore_graph": "kg_agents.methods.graph_cot",
    "create_knowledge_navigator_graph": "kg_agents.methods.knowledge_navigator",
}


__getattr__ = lazy_attributes(__name__, _LAZY)


__all__ = sorted(_LAZY)
