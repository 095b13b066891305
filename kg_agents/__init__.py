"""kg-agents: faithful LLM reasoning over knowledge graphs, as LangGraph state machines."""

from __future__ import annotations

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

__all__ = [
    "ConfigError",
    "DataFormatError",
    "EndpointError",
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
    "open_kg",
    "verify_path",
]
