"""Model layer: chat model resolution, the embedded local model, batching and usage counting."""

from __future__ import annotations

from kg_agents.llm.chat import LocalChatModel
from kg_agents.llm.local_model import load_local_model
from kg_agents.llm.resolve import resolve_chat_model
from kg_agents.llm.usage import UsageCallback

__all__ = ["LocalChatModel", "UsageCallback", "load_local_model", "resolve_chat_model"]
