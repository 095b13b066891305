"""KnowledgeNavigator's hop classifier (eq. 1-2): it lives in :mod:`kg_agents.core.hops`, since graph_agent
and graph_explore use it too (the walk's length); this module keeps its old import path.

Example:
    >>> from kg_agents.methods.knowledge_navigator.hops import HopClassifier, load_hop_classifier
    >>> HopClassifier.__module__
    'kg_agents.core.hops'
"""

from __future__ import annotations

from kg_agents.core.hops import (
    CHECKPOINT_DIR,
    ENTITY_MASK,
    HopClassifier,
    default_encoder,
    encode,
    forget_loaded,
    load_hop_classifier,
    mask_entities,
    softmax,
)

__all__ = [
    "CHECKPOINT_DIR",
    "ENTITY_MASK",
    "HopClassifier",
    "default_encoder",
    "encode",
    "forget_loaded",
    "load_hop_classifier",
    "mask_entities",
    "softmax",
]
