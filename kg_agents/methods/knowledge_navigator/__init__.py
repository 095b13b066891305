"""KnowledgeNavigator: hop prediction, similar questions, weighted relation voting, templated knowledge.

From "KnowledgeNavigator: LLMs for Enhanced Reasoning over KGs".
"""

from __future__ import annotations

from kg_agents.methods.knowledge_navigator.graph import (
    KnowledgeNavigatorContext,
    KnowledgeNavigatorState,
    create_knowledge_navigator_graph,
)

__all__ = ["KnowledgeNavigatorContext", "KnowledgeNavigatorState", "create_knowledge_navigator_graph"]
