"""The chat model a graph uses: ``llm=None`` means the embedded local model, in every method."""

from __future__ import annotations

from typing import Any

from kg_agents.llm import resolve_chat_model

__all__ = ["default_llm"]


def default_llm(llm: Any) -> Any:
    """The chat model a graph uses: ``llm`` itself, a ``resolve_chat_model`` spec resolved
    (``"local"``, ``"openai:<model>"``), or the embedded local model when None."""
    if llm is None:
        return resolve_chat_model("local")
    if isinstance(llm, str):
        return resolve_chat_model(llm)
    return llm
