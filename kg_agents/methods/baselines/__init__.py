"""Baselines: ``llm_only`` (no KG), ``graph_rag`` (1-hop neighbourhood), ``text_rag`` (retrieved triples).

The package exports what :mod:`kg_agents.methods.baselines.graph` does (its ``__all__``).
"""

from __future__ import annotations

from kg_agents.methods.baselines import graph
from kg_agents.methods.baselines.graph import *  # noqa: F403

__all__ = graph.__all__
