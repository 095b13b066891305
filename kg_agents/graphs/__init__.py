"""Reasoning graphs (LangGraph state machines), their shared contract, nodes and registry.

The method factories are imported lazily (``kg_agents.graphs.create_gcr_graph`` imports torch and
transformers only when first used), so listing methods stays cheap.
"""

from __future__ import annotations

import importlib
from typing import Any

from kg_agents.graphs.registry import create_graph, get_method, list_methods, register_method
from kg_agents.graphs.state import (
    MeteredKG,
    ReasoningInput,
    ReasoningOutput,
    ReasoningState,
    Usage,
    invoke_llm,
    metered,
)

_LAZY = {
    "create_llm_only_graph": "kg_agents.graphs.baselines",
    "create_graph_rag_graph": "kg_agents.graphs.baselines",
    "create_text_rag_graph": "kg_agents.graphs.baselines",
    "create_dualr_graph": "kg_agents.graphs.dualr",
    "create_gcr_graph": "kg_agents.graphs.gcr",
    "create_graph_agent_graph": "kg_agents.graphs.graph_cot",
    "create_graph_explore_graph": "kg_agents.graphs.graph_cot",
    "create_knowledge_navigator_graph": "kg_agents.graphs.knowledge_navigator",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "MeteredKG",
    "ReasoningInput",
    "ReasoningOutput",
    "ReasoningState",
    "Usage",
    "create_dualr_graph",
    "create_gcr_graph",
    "create_graph",
    "create_graph_agent_graph",
    "create_graph_explore_graph",
    "create_graph_rag_graph",
    "create_knowledge_navigator_graph",
    "create_llm_only_graph",
    "create_text_rag_graph",
    "get_method",
    "invoke_llm",
    "list_methods",
    "metered",
    "register_method",
]
