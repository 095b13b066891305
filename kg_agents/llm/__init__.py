"""Model layer: chat model resolution, the embedded local model, usage counting, constrained decoders."""

from __future__ import annotations

import importlib
from typing import Any

from kg_agents.llm.base import ConstrainedDecoder, DecodedPath
from kg_agents.llm.chat import LocalChatModel
from kg_agents.llm.local_model import load_local_model
from kg_agents.llm.resolve import resolve_chat_model, resolve_decoder
from kg_agents.llm.usage import UsageCallback

# imported on first use (the vLLM decoder pulls httpx and the vLLM client)
_LAZY = {"VLLMConstrainedDecoder": "kg_agents.llm.vllm_constrained"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "ConstrainedDecoder",
    "DecodedPath",
    "LocalChatModel",
    "UsageCallback",
    "VLLMConstrainedDecoder",
    "load_local_model",
    "resolve_chat_model",
    "resolve_decoder",
]
