"""kg-agents: faithful LLM reasoning over knowledge graphs, as LangGraph state machines.

The short public API::

    from kg_agents import open_kg, create_graph, resolve_chat_model
    kg = open_kg("metaqa")
    graph = create_graph("dualr", kg, llm=resolve_chat_model("local"))
    graph.invoke({"question": "who directed [Splash]"})

Heavier names (graph factories, models, the entity index) are imported on first use.
"""

from __future__ import annotations

from kg_agents._lazy import lazy_attributes
from kg_agents.errors import (
    ConfigError,
    DataFormatError,
    EndpointError,
    EntityNotFound,
    InvalidTermError,
    KGAgentsError,
    KGError,
    ModelError,
)
from kg_agents.kg import KnowledgeGraph, MemoryKG, Path, Triple, open_kg, verify_path

__version__ = "0.1.0"

_LAZY = {
    "EntityIndex": "kg_agents.kg.index",
    "create_graph": "kg_agents.core.registry",
    "list_methods": "kg_agents.core.registry",
    "resolve_chat_model": "kg_agents.llm.resolve",
    "kg_toolkit": "kg_agents.tools",
    "reasoning_tool": "kg_agents.tools",
}


__getattr__ = lazy_attributes(__name__, _LAZY)


__all__ = [
    "ConfigError",
    "DataFormatError",
    "EndpointError",
    "EntityIndex",
    "EntityNotFound",
    "InvalidTermError",
    "KGAgentsError",
    "KGError",
    "KnowledgeGraph",
    "MemoryKG",
    "ModelError",
    "Path",
    "Triple",
    "__version__",
    "create_graph",
    "kg_toolkit",
    "list_methods",
    "open_kg",
    "reasoning_tool",
    "resolve_chat_model",
    "verify_path",
]
