"""Hop-count prediction for KnowledgeNavigator (question analysis, eq. 1-2 of the paper).

``h_Q = argmax_h P(h | PLM(Q))``: a frozen sentence encoder (all-MiniLM-L6-v2, the shared encoder of
:mod:`kg_agents.kg.encoder`) embeds the question and a small softmax-regression head, trained on the
hop labels of the MetaQA dev-train split, predicts the number of hops ``1..H``. The paper fine-tunes
BERT; here only the head is trained, so the checkpoint is a few kilobytes and ships in the package
(``kg_agents/checkpoints/hops/``).

The topic entity is masked before encoding (MetaQA marks it ``[in brackets]``; for other questions the
linked entity labels are masked), so the head learns the question's relational shape, not its names.

Example:
    >>> from kg_agents.hops import load_hop_classifier
    >>> clf = load_hop_classifier()                                  # doctest: +SKIP
    >>> clf.predict(["who directed the films written by [Babaloo Mandel]"])  # doctest: +SKIP
    [2]
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from kg_agents.errors import ConfigError, ModelError

CHECKPOINT_DIR = Path(__file__).resolve().parent / "checkpoints" / "hops"
ENTITY_MASK = "ENTITY"
_BRACKETS = re.compile(r"\[[^\[\]]*\]")
_LOCK = threading.Lock()
_LOADED: dict[str, HopClassifier] = {}


def mask_entities(question: str, entities: Iterable[str] = ()) -> str:
    """The question with its topic entity replaced by ``ENTITY``.

    Bracketed spans (MetaQA's ``[Tom Hanks]``) are masked; so is every given entity label found in the
    question (case-insensitively, longest first).

    Args:
        question: the question text.
        entities: labels of the question's topic entities (optional).

    Example:
        >>> mask_entities("what films did [Tom Hanks] star in")
        'what films did ENTITY star in'
        >>> mask_entities("who directed Big", ["Big"])
        'who directed ENTITY'
    """
    text = _BRACKETS.sub(ENTITY_MASK, question)
    for label in sorted({e for e in entities if e and e.strip()}, key=len, reverse=True):
        text = re.sub(rf"(?<!\w){re.escape(label)}(?!\w)", ENTITY_MASK, text, flags=re.IGNORECASE)
    return " ".join(text.split())


def default_encoder() -> Any:
    """The shared sentence encoder: all-MiniLM-L6-v2, offline (``kg.encoder.get_sentence_encoder``)."""
    from kg_agents.kg.encoder import get_sentence_encoder

    return get_sentence_encoder()


def encode(encoder: Any, texts: Sequence[str]) -> np.ndarray:
    """Float32 embeddings of ``texts``, shape ``(len(texts), dim)``.

    ``encoder`` is a kg-agents encoder (a callable ``texts -> array``, see :mod:`kg_agents.kg.encoder`)
    or a sentence-transformers model (its ``encode`` is used, unit-normalised).
    """
    if callable(encoder) and not hasattr(encoder, "encode"):
        vecs = encoder(list(texts))
    else:
        vecs = encoder.encode(
            list(texts), convert_to_numpy=True, normalize_embeddings=True, show_progress_bar=False
        )
    return np.asarray(vecs, dtype=np.float32)


@dataclass
class HopClassifier:
    """A frozen sentence encoder plus a linear softmax head over hop counts.

    Args:
        weight: the head's weights, shape ``(dim, n_classes)``.
        bias: shape ``(n_classes,)``.
        classes: the hop count of each output, e.g. ``[1, 2, 3]``.
        encoder: an encoder (a callable ``texts -> array`` or a sentence-transformers model); None for
            the shared all-MiniLM-L6-v2, loaded on first use.
        meta: what the checkpoint says about its training (data, seed, accuracy).

    Shapes:
        input: ``n`` question strings; output: ``n`` hop counts / an ``(n, n_classes)`` probability array.
    """

    weight: np.ndarray
    bias: np.ndarray
    classes: list[int]
    encoder: Any = None
    meta: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.weight = np.asarray(self.weight, dtype=np.float32)
        self.bias = np.asarray(self.bias, dtype=np.float32)
        if (
            self.weight.ndim != 2
            or self.weight.shape[1] != len(self.classes)
            or self.bias.shape != (len(self.classes),)
        ):
            raise ConfigError(
                f"hop head shapes do not match: weight {self.weight.shape}, bias {self.bias.shape}, "
                f"{len(self.classes)} classes"
            )

    def __repr__(self) -> str:
        return f"HopClassifier(dim={self.weight.shape[0]}, classes={self.classes})"

    def _embed(self, questions: Sequence[str], entities: Sequence[Iterable[str]] | None) -> np.ndarray:
        if self.encoder is None:
            self.encoder = default_encoder()
        ents = entities if entities is not None else [()] * len(questions)
        texts = [mask_entities(q, e) for q, e in zip(questions, ents, strict=True)]
        return encode(self.encoder, texts)

    def predict_proba(
        self, questions: Sequence[str], entities: Sequence[Iterable[str]] | None = None
    ) -> np.ndarray:
        """``P(h | question)`` for each question, shape ``(n, n_classes)``.

        Args:
            questions: question texts.
            entities: per question, the topic-entity labels to mask (optional).
        """
        if not questions:
            return np.zeros((0, len(self.classes)), dtype=np.float32)
        return softmax(self._embed(questions, entities) @ self.weight + self.bias)

    def predict(self, questions: Sequence[str], entities: Sequence[Iterable[str]] | None = None) -> list[int]:
        """The most likely hop count of each question (eq. 2)."""
        probs = self.predict_proba(questions, entities)
        return [self.classes[i] for i in probs.argmax(axis=1)]

    def save(self, directory: str | Path) -> Path:
        """Write ``head.npz`` and ``meta.json`` into ``directory``."""
        d = Path(directory)
        d.mkdir(parents=True, exist_ok=True)
        np.savez(d / "head.npz", weight=self.weight, bias=self.bias)
        meta = {**self.meta, "classes": list(self.classes)}
        (d / "meta.json").write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        return d

    @classmethod
    def load(cls, directory: str | Path, encoder: Any = None) -> HopClassifier:
        """Read a checkpoint written by :meth:`save`.

        Raises:
            ModelError: the directory has no checkpoint or it cannot be read.
        """
        d = Path(directory)
        try:
            meta = json.loads((d / "meta.json").read_text(encoding="utf-8"))
            with np.load(d / "head.npz") as z:
                weight, bias = z["weight"], z["bias"]
        except (OSError, ValueError, KeyError) as exc:
            raise ModelError(
                f"no readable hop-classifier checkpoint in {d}; train one with `kg-agents train hops`"
            ) from exc
        return cls(weight, bias, [int(c) for c in meta["classes"]], encoder=encoder, meta=meta)


def softmax(z: np.ndarray) -> np.ndarray:
    """Row-wise softmax."""
    z = z - z.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)  # type: ignore[no-any-return]


def load_hop_classifier(directory: str | Path | None = None) -> HopClassifier:
    """The bundled hop classifier (or the one in ``directory``), loaded once per process."""
    d = Path(directory) if directory is not None else CHECKPOINT_DIR
    key = str(d.resolve())
    with _LOCK:
        if key not in _LOADED:
            _LOADED[key] = HopClassifier.load(d)
        return _LOADED[key]


# --------------------------------------------------------------------------- training
def fit_softmax_head(
    x: np.ndarray,
    y: np.ndarray,
    n_classes: int,
    *,
    l2: float = 1e-4,
    epochs: int = 300,
    lr: float = 0.1,
    seed: int = 0,
) -> tuple[np.ndarray, np.ndarray]:
    """Multinomial logistic regression by full-batch gradient descent with Adam (numpy, seeded).

    Args:
        x: features, shape ``(n, dim)``.
        y: class indices ``0..n_classes-1``, shape ``(n,)``.
        n_classes: number of classes.
        l2: weight decay on the weights.
        epochs: gradient steps.
        lr: Adam step size.
        seed: seeds the initial weights.

    Returns:
        ``(weight (dim, n_classes), bias (n_classes,))``.
    """
    if x.ndim != 2 or len(x) != len(y) or len(x) == 0:
        raise ConfigError(f"bad training data: x {x.shape}, y {y.shape}")
    rng = np.random.default_rng(seed)
    n, dim = x.shape
    w = (rng.standard_normal((dim, n_classes)) * 0.01).astype(np.float64)
    b = np.zeros(n_classes)
    onehot = np.eye(n_classes)[y]
    xd = x.astype(np.float64)
    m = [np.zeros_like(w), np.zeros_like(b)]
    v = [np.zeros_like(w), np.zeros_like(b)]
    b1, b2, eps = 0.9, 0.999, 1e-8
    for t in range(1, epochs + 1):
        p = softmax(xd @ w + b)
        g = (p - onehot) / n
        grads = [xd.T @ g + l2 * w, g.sum(axis=0)]
        for i, (param, grad) in enumerate(zip((w, b), grads, strict=True)):
            m[i] = b1 * m[i] + (1 - b1) * grad
            v[i] = b2 * v[i] + (1 - b2) * grad * grad
            param -= lr * (m[i] / (1 - b1**t)) / (np.sqrt(v[i] / (1 - b2**t)) + eps)
    return w.astype(np.float32), b.astype(np.float32)


def train_hop_classifier(
    *,
    out_dir: str | Path | None = None,
    hops: tuple[int, ...] = (1, 2, 3),
    seed: int = 0,
    limit_per_hop: int | None = 1500,
    val_limit_per_hop: int | None = 1000,
    epochs: int = 300,
    encoder: Any = None,
) -> dict[str, Any]:
    """Train the hop head on the MetaQA dev-train split and report accuracy on dev-validation.

    This is the ``kg-agents train hops`` trainer. Questions come from
    ``kg_agents.eval.datasets.load_metaqa(h, split=...)`` (the seeded 80/20 split of the MetaQA dev
    files); the hop label is ``h``.

    Args:
        out_dir: where to write the checkpoint (default: the bundled ``kg_agents/checkpoints/hops``).
        hops: the hop counts (classes).
        seed: seeds the data split, the sub-sample and the head's initialisation.
        limit_per_hop: at most this many training questions per hop (the first of the seeded split);
            None for all.
        val_limit_per_hop: at most this many validation questions per hop; None for all.
        epochs: gradient steps of the head.
        encoder: a sentence encoder (default: the shared all-MiniLM-L6-v2).

    Returns:
        metrics: ``train_accuracy``, ``validation_accuracy``, per-hop validation accuracy, sizes, ``out_dir``.
    """
    from kg_agents.eval.datasets import load_metaqa

    classes = sorted(int(h) for h in hops)
    enc = encoder if encoder is not None else default_encoder()
    data: dict[str, tuple[list[str], list[int]]] = {}
    for split in ("train", "validation"):
        texts: list[str] = []
        labels: list[int] = []
        for h in classes:
            limit = limit_per_hop if split == "train" else val_limit_per_hop
            qs = list(load_metaqa(h, split=split, seed=seed, limit=limit))
            texts += [mask_entities(q.question) for q in qs]
            labels += [classes.index(h)] * len(qs)
        data[split] = (texts, labels)
    x_train = encode(enc, data["train"][0])
    y_train = np.asarray(data["train"][1])
    w, b = fit_softmax_head(x_train, y_train, len(classes), epochs=epochs, seed=seed)
    x_val = encode(enc, data["validation"][0])
    y_val = np.asarray(data["validation"][1])
    pred_train = (x_train @ w + b).argmax(axis=1)
    pred_val = (x_val @ w + b).argmax(axis=1)
    per_hop = {
        str(h): float((pred_val[y_val == i] == i).mean()) for i, h in enumerate(classes) if (y_val == i).any()
    }
    metrics = {
        "train_accuracy": float((pred_train == y_train).mean()),
        "validation_accuracy": float((pred_val == y_val).mean()),
        "validation_accuracy_per_hop": per_hop,
        "n_train": len(y_train),
        "n_validation": len(y_val),
    }
    meta = {
        "encoder": "sentence-transformers/all-MiniLM-L6-v2 (frozen, normalised)",
        "dataset": "metaqa dev, kg_agents.eval.datasets.load_metaqa split='train' (80/20 seeded)",
        "seed": seed,
        "limit_per_hop": limit_per_hop,
        "val_limit_per_hop": val_limit_per_hop,
        "epochs": epochs,
        "entity_mask": ENTITY_MASK,
        **metrics,
    }
    target = Path(out_dir) if out_dir is not None else CHECKPOINT_DIR
    HopClassifier(w, b, classes, meta=meta).save(target)
    with _LOCK:
        _LOADED.pop(str(target.resolve()), None)
    return {**metrics, "out_dir": str(target)}
