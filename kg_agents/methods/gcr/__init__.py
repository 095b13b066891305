"""GCR, graph-constrained reasoning: KG-Trie-constrained path decoding, then a general LLM reasons.

From "Graph-Constrained Reasoning: Faithful Reasoning on Knowledge Graphs with LLMs".
"""

from __future__ import annotations

from kg_agents.methods.gcr.graph import GCRContext, GCRState, create_gcr_graph

__all__ = ["GCRContext", "GCRState", "create_gcr_graph"]
