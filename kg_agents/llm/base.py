"""Protocols of the model layer.

``ConstrainedDecoder`` is token-level generation restricted to a KG-Trie: every path it returns is
a path of the trie. Implementations: a local transformers model (a LogitsProcessor inside beam
search) and a vLLM server. A decoder never falls back to the full vocabulary: when the trie has no
continuation, the beam ends.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable


@dataclass(frozen=True)
class DecodedPath:
    """One output of constrained decoding.

    Attributes:
        text: the whole generated text (the constrained path, then any free continuation).
        path_text: the constrained part, e.g. ``"Splash -> directed_by -> Ron Howard"``.
        score: the sequence log-probability (higher is better), as the decoder ranks it.
        continuation: text generated freely after the path (a hypothesis answer), may be empty.
        meta: decoder-specific details (token counts, finished flag...).
    """

    text: str
    path_text: str
    score: float
    continuation: str = ""
    meta: dict[str, Any] = field(default_factory=dict)


@runtime_checkable
class ConstrainedDecoder(Protocol):
    """Generate the ``num_beams`` best continuations of ``prompt`` that the ``trie`` allows.

    ``trie`` is a KG-Trie (``kg_agents.trie.KGTrie``) built with this decoder's tokenizer.
    """

    def generate(self, prompt: str, trie: Any, num_beams: int = 10, **kwargs: Any) -> list[DecodedPath]: ...
