"""Training KnowledgeNavigator's hop classifier (``kg-agents train hops``): a softmax head over frozen
MiniLM question embeddings, on the hop labels of the seeded MetaQA dev-train split."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from kg_agents.errors import ConfigError
from kg_agents.eval.datasets import load_metaqa
from kg_agents.methods.knowledge_navigator.hops import (
    CHECKPOINT_DIR,
    ENTITY_MASK,
    HopClassifier,
    default_encoder,
    encode,
    forget_loaded,
    mask_entities,
    softmax,
)

__all__ = ["fit_softmax_head", "train_hop_classifier"]


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
    questions: str | None = None,
    val_questions: str | None = None,
) -> dict[str, Any]:
    """Train the hop head on the MetaQA dev-train split (or your own questions) and report accuracy on
    the validation questions.

    This is the ``kg-agents train hops`` trainer. Questions come from
    ``kg_agents.eval.datasets.load_metaqa(h, split=...)`` (the seeded 80/20 split of the MetaQA dev
    files; the hop label is ``h``), or from ``questions``: a JSONL file whose records give ``hops``, such
    as the ``train.jsonl`` that ``kg-agents synth`` writes (its hop labels are exact: each question was
    made from a relation path of that length).

    Args:
        out_dir: where to write the checkpoint (default: the bundled checkpoint).
        hops: the hop counts (classes).
        seed: seeds the data split, the sub-sample and the head's initialisation.
        limit_per_hop: at most this many training questions per hop (the first of the seeded split);
            None for all.
        val_limit_per_hop: at most this many validation questions per hop; None for all.
        epochs: gradient steps of the head.
        encoder: a sentence encoder (default: the shared all-MiniLM-L6-v2).
        questions: a JSONL questions file with ``hops`` on every record, instead of MetaQA; ``hops`` then
            lists the classes (questions of other hop counts are left out).
        val_questions: the validation questions for ``questions`` (default: a seeded 20% of them).

    Returns:
        metrics: ``train_accuracy``, ``validation_accuracy``, per-hop validation accuracy, sizes, ``out_dir``.
    """
    classes = sorted(int(h) for h in hops)
    if val_questions is not None and questions is None:
        raise ConfigError("val_questions= needs questions= (your own training questions)")
    enc = encoder if encoder is not None else default_encoder()
    if questions is not None:
        data = _file_data(questions, val_questions, classes, seed, limit_per_hop, val_limit_per_hop)
    else:
        data = {}
        for split in ("train", "validation"):
            texts: list[str] = []
            labels: list[int] = []
            for h in classes:
                limit = limit_per_hop if split == "train" else val_limit_per_hop
                qs = list(load_metaqa(h, split=split, seed=seed, limit=limit))
                texts += [mask_entities(q.question) for q in qs]
                labels += [classes.index(h)] * len(qs)
            data[split] = (texts, labels)
    for split in ("train", "validation"):
        if not data[split][0]:
            raise ConfigError(f"no {split} question with a hop count in {classes}")
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
        "dataset": (
            "metaqa dev, kg_agents.eval.datasets.load_metaqa split='train' (80/20 seeded)"
            if questions is None
            else {"questions": str(questions), "val_questions": val_questions}
        ),
        "seed": seed,
        "limit_per_hop": limit_per_hop,
        "val_limit_per_hop": val_limit_per_hop,
        "epochs": epochs,
        "entity_mask": ENTITY_MASK,
        **metrics,
    }
    target = Path(out_dir) if out_dir is not None else CHECKPOINT_DIR
    HopClassifier(w, b, classes, meta=meta).save(target)
    forget_loaded(target)
    return {**metrics, "out_dir": str(target)}


def _file_data(
    questions: str,
    val_questions: str | None,
    classes: list[int],
    seed: int,
    limit_per_hop: int | None,
    val_limit_per_hop: int | None,
) -> dict[str, tuple[list[str], list[int]]]:
    """Masked texts and class indices of a JSONL questions file's train and validation questions (a
    seeded 80/20 split of ``questions`` unless ``val_questions`` is given), at most the limit per hop."""
    from kg_agents.eval.datasets import load_jsonl_questions

    if val_questions is None:
        splits = {
            s: list(load_jsonl_questions(questions, kg=None, split=s, seed=seed))
            for s in ("train", "validation")
        }
    else:
        splits = {
            "train": list(load_jsonl_questions(questions, kg=None, split="dev")),
            "validation": list(load_jsonl_questions(val_questions, kg=None, split="dev")),
        }
    out: dict[str, tuple[list[str], list[int]]] = {}
    for split, qs in splits.items():
        limit = limit_per_hop if split == "train" else val_limit_per_hop
        texts: list[str] = []
        labels: list[int] = []
        for h in classes:
            of_h = [q for q in qs if q.hops == h][: limit if limit is not None else None]
            texts += [mask_entities(q.question) for q in of_h]
            labels += [classes.index(h)] * len(of_h)
        out[split] = (texts, labels)
    missing = [q.id for qs in splits.values() for q in qs if q.hops is None]
    if missing:
        raise ConfigError(
            f"{len(missing)} questions have no 'hops' (first: {missing[0]!r}); the hop head needs them"
        )
    return out
