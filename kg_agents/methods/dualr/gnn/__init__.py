"""DualR's GNN explorer (torch-geometric): the exploration layer, the model, encoders and training.

Importing this package imports torch; nothing else in kg-agents does so until a method needs it.
"""

from __future__ import annotations

from kg_agents.methods.dualr.gnn.conv import DualRConv
from kg_agents.methods.dualr.gnn.encoding import LLMEmbeddingEncoder, get_text_encoder
from kg_agents.methods.dualr.gnn.explorer import (
    DualRExplorer,
    Exploration,
    ExplorationGraph,
    ExplorerConfig,
    backtrack,
)

__all__ = [
    "DualRConv",
    "DualRExplorer",
    "Exploration",
    "ExplorationGraph",
    "ExplorerConfig",
    "LLMEmbeddingEncoder",
    "backtrack",
    "get_text_encoder",
]
