"""GCR's constrained decoders: the protocol, what they return, and ``resolve_decoder``.

``ConstrainedDecoder`` is token-level generation restricted to a KG-Trie: every path it returns is
a path of the trie. Implementations: a local transformers model (a LogitsProcessor inside beam
search) and a vLLM server. A decoder never falls back to the full vocabulary: when the trie has no
continuation, the beam ends.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from kg_agents.errors import ConfigError


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

    ``trie`` is a KG-Trie (``kg_agents.methods.gcr.trie.KGTrie``) built with this decoder's tokenizer.
    """

    def generate(self, prompt: str, trie: Any, num_beams: int = 10, **kwargs: Any) -> list[DecodedPath]: ...


DECODER_FORMS = (
    "'local' (LocalConstrainedDecoder over the bundled SmolLM2), 'vllm:http://HOST:PORT/v1' "
    "(VLLMConstrainedDecoder against a vLLM server), or a ConstrainedDecoder instance"
)


def resolve_decoder(spec: Any = "local", **kwargs: Any) -> Any:
    """Turn a constrained-decoder spec into a ``ConstrainedDecoder`` (what ``gcr``'s ``decoder=`` takes).

    Args:
        spec: ``"local"`` / None (:class:`~kg_agents.methods.gcr.local_decoder.LocalConstrainedDecoder`),
            ``"vllm:<base_url>"`` (:class:`~kg_agents.methods.gcr.vllm_decoder.VLLMConstrainedDecoder`; the
            served model is found through ``/models``), or an object with a ``generate`` method.
        **kwargs: options of the decoder class (e.g. ``route="beam"``, ``model="smollm2"``).

    Raises:
        ConfigError: an unknown spec (the message lists the valid forms), or options for an instance.

    Examples:
        >>> dec = resolve_decoder("vllm:http://127.0.0.1:8000/v1", route="beam")  # doctest: +SKIP
    """
    if spec is None:
        spec = "local"
    if not isinstance(spec, str):
        if not callable(getattr(spec, "generate", None)):
            raise ConfigError(f"a decoder must have a generate() method; valid forms: {DECODER_FORMS}")
        if kwargs:
            raise ConfigError("options cannot be applied to a decoder instance; configure it yourself")
        return spec
    kind, sep, rest = spec.partition(":")
    if kind == "local" and not sep:
        from kg_agents.methods.gcr.local_decoder import LocalConstrainedDecoder

        return LocalConstrainedDecoder(**kwargs)
    if kind == "vllm" and rest:
        from kg_agents.methods.gcr.vllm_decoder import VLLMConstrainedDecoder

        return VLLMConstrainedDecoder(rest, **kwargs)
    raise ConfigError(f"unknown decoder spec {spec!r}; valid forms: {DECODER_FORMS}")
