"""LangChain tools: Graph-CoT's KG actions for chat agents, and any reasoning graph as one tool."""

from __future__ import annotations

from kg_agents.tools.kg_tools import KGToolbox, kg_toolkit, reasoning_tool

__all__ = ["KGToolbox", "kg_toolkit", "reasoning_tool"]
