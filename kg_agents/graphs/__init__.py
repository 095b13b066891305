"""Reasoning graphs (LangGraph state machines), their shared contract, nodes and registry."""

from __future__ import annotations

from kg_agents.graphs.knowledge_navigator import KnowledgeNavigatorContext, create_knowledge_navigator_graph
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

__all__ = [
    "KnowledgeNavigatorContext",
    "MeteredKG",
    "ReasoningInput",
    "ReasoningOutput",
    "ReasoningState",
    "Usage",
    "create_graph",
    "create_knowledge_navigator_graph",
    "get_method",
    "invoke_llm",
    "list_methods",
    "metered",
    "register_method",
]
