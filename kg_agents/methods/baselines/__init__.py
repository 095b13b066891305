"""Baselines: ``llm_only`` (no KG), ``graph_rag`` (1-hop neighbourhood), ``text_rag`` (retrieved triples)."""

from __future__ import annotations

from kg_agents.methods.baselines.graph import (
    GraphRAGContext,
    GraphRAGState,
    LLMOnlyContext,
    TextRAGContext,
    TextRAGState,
    create_graph_rag_graph,
    create_llm_only_graph,
    create_text_rag_graph,
)

__all__ = [
    "GraphRAGContext",
    "GraphRAGState",
    "LLMOnlyContext",
    "TextRAGContext",
    "TextRAGState",
    "create_graph_rag_graph",
    "create_llm_only_graph",
    "create_text_rag_graph",
]
