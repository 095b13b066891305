"""Model layer: chat model resolution, the embedded local model, constrained decoders."""

from __future__ import annotations

from kg_agents.llm.base import ConstrainedDecoder, DecodedPath

__all__ = ["ConstrainedDecoder", "DecodedPath"]
