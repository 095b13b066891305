"""KnowledgeNavigator's hop classifier (eq. 1-2): it lives in :mod:`kg_agents.core.hops`, since graph_agent
and graph_explore use it too (the walk's length); this module keeps its old import path and exports what
that module does (its ``__all__``).

Example:
    >>> from kg_agents.methods.knowledge_navigator.hops import HopClassifier, load_hop_classifier
    >>> HopClassifier.__module__
    'kg_agents.core.hops'
"""

from __future__ import annotations

from kg_agents.core import hops
from kg_agents.core.hops import *  # noqa: F403

__all__ = hops.__all__
