"""DualR: a question-conditioned GNN explores the KG; its chains go to an LLM as multiple choice.

From "Dual Reasoning: A GNN-LLM Collaborative Framework for KGQA".
"""

from __future__ import annotations

from kg_agents.methods.dualr.graph import DualRContext, DualRState, create_dualr_graph

__all__ = ["DualRContext", "DualRState", "create_dualr_graph"]
