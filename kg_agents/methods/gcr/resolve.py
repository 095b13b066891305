"""``resolve_decoder``: a constrained-decoder spec (``"local"``, ``"vllm:URL"``) or instance, as a decoder.

Example:
    >>> resolve_decoder("vllm:http://127.0.0.1:8000/v1", route="beam")  # doctest: +SKIP
    VLLMConstrainedDecoder('http://127.0.0.1:8000/v1', model=None, route='beam')
"""

from __future__ import annotations

from typing import Any

from kg_agents.errors import ConfigError
from kg_agents.methods.gcr.local_decoder import LocalConstrainedDecoder
from kg_agents.methods.gcr.vllm_decoder import VLLMConstrainedDecoder

__all__ = ["DECODER_FORMS", "resolve_decoder"]

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
        return LocalConstrainedDecoder(**kwargs)
    if kind == "vllm" and rest:
        return VLLMConstrainedDecoder(rest, **kwargs)
    raise ConfigError(f"unknown decoder spec {spec!r}; valid forms: {DECODER_FORMS}")
