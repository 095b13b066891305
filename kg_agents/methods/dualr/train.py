"""Training DualR's explorer: cross-entropy over candidates (eq. 4), Adam, early stopping on Hits@1.

:func:`train_dualr` is the typed entry point; :func:`train_explorer` is what
``kg-agents train dualr --set KEY=VALUE ...`` calls. Training is seeded, shows a tqdm
progress bar, writes ``last.pt`` (model, optimizer, epoch, step, best score, the epoch's losses so far,
the exploration graph's entity numbering) every ``checkpoint_every`` steps and at each epoch end, keeps
the best model as ``best.pt``, and resumes from ``last.pt`` after an interruption (a kill, Ctrl-C):
the steps since the last checkpoint run again, and the resumed run computes what the uninterrupted
one would have. Both files are written to a temporary name and renamed, so a half-written one is
never loaded. It uses a GPU when one is present.

Example:
    >>> from kg_agents import open_kg
    >>> from kg_agents.eval.datasets import load_metaqa                           # doctest: +SKIP
    >>> train = load_metaqa(1, split="train", limit=2000)                        # doctest: +SKIP
    >>> val = load_metaqa(1, split="validation", limit=200)                      # doctest: +SKIP
    >>> train_dualr(open_kg("metaqa"), train, val, out_dir="runs/dualr")       # doctest: +SKIP
"""

from __future__ import annotations

import gzip
import json
import logging
import random
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path as FsPath
from typing import Any, Protocol

import numpy as np
import torch

from kg_agents.errors import ConfigError, DataFormatError
from kg_agents.eval.datasets import load_metaqa
from kg_agents.files import atomic_target, remove_temporaries
from kg_agents.kg import open_kg
from kg_agents.kg.base import KnowledgeGraph
from kg_agents.kg.text import bracketed
from kg_agents.methods.dualr.gnn.encoding import (
    MASKED_SUFFIX,
    Encoder,
    encode_cached,
    encoder_dim,
    encoder_name,
    get_text_encoder,
)
from kg_agents.methods.dualr.gnn.explorer import DualRExplorer, ExplorationGraph, ExplorerConfig

__all__ = [
    "QuestionLike",
    "TrainConfig",
    "TrainQuestion",
    "TrainResult",
    "evaluate_hits1",
    "load_training_questions",
    "read_questions",
    "set_f1",
    "train_dualr",
    "train_explorer",
]

log = logging.getLogger(__name__)


class QuestionLike(Protocol):
    """What training needs of a question (``kg_agents.eval.datasets.Question`` fits)."""

    question: str
    answers: Sequence[str]
    topic_entities: Sequence[str]


@dataclass
class TrainQuestion:
    """A training question read by :func:`read_questions`."""

    question: str
    answers: list[str]
    topic_entities: list[str]
    hops: int | None = None


@dataclass
class TrainConfig:
    """Optimisation settings (paper appendix B.4: Adam, batch 20, weight decay; we use a larger
    learning rate because we train for minutes on a CPU, not for 30 epochs on a GPU).

    Args:
        epochs: at most this many passes over the training questions.
        batch_size: questions per step.
        lr, weight_decay: Adam's.
        patience: stop after this many epochs without a better validation Hits@1.
        seed: seeds Python, NumPy and torch, and each epoch's shuffling.
        checkpoint_every: write ``last.pt`` every this many steps.
        fanout_limit: edges per entity and expansion.
        device: ``"cuda"``/``"cpu"``; None picks the GPU when present.
    """

    epochs: int = 8
    batch_size: int = 20
    lr: float = 3e-3
    weight_decay: float = 1e-5
    patience: int = 2
    seed: int = 0
    checkpoint_every: int = 200
    fanout_limit: int = 1000
    device: str | None = None


@dataclass
class TrainResult:
    """What :func:`train_dualr` did."""

    best_path: FsPath
    best_hits1: float
    best_epoch: int
    history: list[dict[str, float]] = field(default_factory=list)


def _seed_all(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def _usable(questions: Sequence[QuestionLike], kg: KnowledgeGraph) -> list[QuestionLike]:
    return [q for q in questions if q.answers and any(kg.has_entity(t) for t in q.topic_entities)]


@torch.no_grad()
def evaluate_hits1(
    model: DualRExplorer,
    graph: ExplorationGraph,
    questions: Sequence[QuestionLike],
    q_enc: np.ndarray,
    *,
    batch_size: int = 50,
    top_k: Sequence[int] | None = None,
    answer_sets: Sequence[tuple[int, float]] = (),
) -> dict[str, float]:
    """Hits@1 of the explorer alone (the paper's w.o.-AD), and the share of questions with an answer
    among the candidates (``answer_recall``).

    Args:
        answer_sets: ``(N, ratio)`` pairs: also report ``f1@N,ratio``, the mean F1 of the answer set
            the graph's GNN-only mode returns with ``num_candidates=N`` and ``answer_ratio=ratio`` (every
            top-N candidate with at least ``ratio`` of the best probability) against the gold entities.
    """
    model.eval()
    hits = reach = 0
    f1 = dict.fromkeys(answer_sets, 0.0)
    device = model.lin_text.weight.device
    for i in range(0, len(questions), batch_size):
        qs = questions[i : i + batch_size]
        enc = torch.from_numpy(q_enc[i : i + batch_size]).to(device)
        ex = model.explore(enc, [q.topic_entities for q in qs], graph, top_k=top_k)
        for b, q in enumerate(qs):
            ans = set(q.answers)
            top = ex.top_candidates(b, max([1, *(n for n, _ in answer_sets)]))
            hits += bool(top) and graph.id2ent[top[0][0]] in ans
            cands = {graph.id2ent[int(e)] for e in ex.entity[ex.batch == b]}
            reach += bool(cands & ans)
            for n, ratio in answer_sets:
                chosen = {graph.id2ent[e] for e, p in top[:n] if p >= ratio * top[0][1]}
                f1[(n, ratio)] += set_f1(chosen, ans)
    n = max(len(questions), 1)
    out = {"hits1": hits / n, "answer_recall": reach / n, "n": float(len(questions))}
    out.update({f"f1@{k},{r:g}": v / n for (k, r), v in f1.items()})
    return out


def set_f1(predicted: set[str], gold: set[str]) -> float:
    """F1 of a predicted answer set against the gold set (0 when either is empty).

    Example:
        >>> set_f1({"a", "b"}, {"a", "c", "d"})
        0.4
    """
    both = len(predicted & gold)
    if not both:
        return 0.0
    p, r = both / len(predicted), both / len(gold)
    return 2 * p * r / (p + r)


def train_dualr(
    kg: KnowledgeGraph,
    train: Sequence[QuestionLike],
    val: Sequence[QuestionLike],
    *,
    out_dir: str | FsPath,
    model_config: ExplorerConfig | None = None,
    config: TrainConfig | None = None,
    encoder: Encoder | None = None,
    init: str | FsPath | None = None,
    resume: bool = True,
    progress: bool = True,
) -> TrainResult:
    """Train a :class:`DualRExplorer` on ``train``, early-stopping on ``val`` Hits@1.

    Args:
        kg: the knowledge graph the questions are about.
        train, val: questions with ``question``, ``answers`` (entity ids) and ``topic_entities``.
        out_dir: where ``last.pt`` (resumable state) and ``best.pt`` (the best model) go.
        model_config: the architecture (default :class:`ExplorerConfig`).
        config: the optimisation settings (default :class:`TrainConfig`).
        encoder: the frozen text encoder (default: all-MiniLM-L6-v2).
        init: start from this checkpoint's weights (same architecture and encoder) instead of a random
            initialisation; ignored when resuming.
        resume: continue from ``out_dir/last.pt`` when it exists.
        progress: show a tqdm progress bar.

    Returns:
        A :class:`TrainResult` with the best checkpoint's path and validation Hits@1.
    """
    from tqdm.auto import tqdm

    cfg = config or TrainConfig()
    if cfg.checkpoint_every < 1:
        raise ConfigError(f"checkpoint_every must be >= 1, got {cfg.checkpoint_every}")
    encoder = encoder or get_text_encoder()
    dim = encoder_dim(encoder)
    mcfg = model_config or ExplorerConfig()
    mcfg.encoder, mcfg.encoder_dim = encoder_name(encoder), dim
    train_q, val_q = _usable(train, kg), _usable(val, kg)
    if not train_q or not val_q:
        raise ConfigError(
            f"no usable questions (train {len(train_q)}, validation {len(val_q)}): each needs "
            "an answer and a topic entity that is in the KG"
        )
    out = FsPath(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    remove_temporaries(out, "*.pt")  # what a killed run left half-written
    device = torch.device(cfg.device or ("cuda" if torch.cuda.is_available() else "cpu"))
    _seed_all(cfg.seed)
    t0 = time.perf_counter()
    train_enc = encode_cached(encoder, [q.question for q in train_q], tag="questions")
    val_enc = encode_cached(encoder, [q.question for q in val_q], tag="questions")
    log.info("encoded %d + %d questions in %.1fs", len(train_q), len(val_q), time.perf_counter() - t0)
    graph = ExplorationGraph(kg, encoder, fanout_limit=cfg.fanout_limit)
    graph.warm_relations()
    model = DualRExplorer(mcfg).to(device)
    if init is not None:
        start = DualRExplorer.load(init)
        if _cfg_dict(start.config) != _cfg_dict(mcfg):
            raise ConfigError(f"{init} has another model config ({start.config}) than {mcfg}")
        model.load_state_dict(start.state_dict())
    opt = torch.optim.Adam(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    start_epoch, start_step, best, best_epoch, bad, history = 0, 0, -1.0, -1, 0, []
    start_losses: list[float] = []
    last = out / "last.pt"
    if resume and last.is_file():
        state = torch.load(last, map_location=device, weights_only=False)
        if state.get("model_config") != _cfg_dict(mcfg):
            raise ConfigError(
                f"{last} was written with another model config; use a new out_dir or resume=False"
            )
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["optimizer"])
        start_epoch, start_step = state["epoch"], state["step"]
        best, best_epoch, bad, history = state["best"], state["best_epoch"], state["bad"], state["history"]
        start_losses = list(state.get("epoch_losses") or [])
        for name in state.get("entities") or []:  # the numbering the run had: the same float sums
            graph.entity_id(name)
        log.info("resumed from %s at epoch %d step %d", last, start_epoch, start_step)

    def save_last(epoch: int, step: int, epoch_losses: list[float]) -> None:
        with atomic_target(last, suffix=".pt") as tmp:
            torch.save(
                {
                    "model": model.state_dict(),
                    "optimizer": opt.state_dict(),
                    "epoch": epoch,
                    "step": step,
                    "best": best,
                    "best_epoch": best_epoch,
                    "bad": bad,
                    "history": history,
                    "epoch_losses": epoch_losses,
                    "entities": list(graph.id2ent),
                    "model_config": _cfg_dict(mcfg),
                    "train_config": asdict(cfg),
                },
                tmp,
            )

    n_steps = (len(train_q) + cfg.batch_size - 1) // cfg.batch_size
    for epoch in range(start_epoch, cfg.epochs):
        if bad >= cfg.patience:
            break
        perm = np.random.default_rng(cfg.seed + epoch).permutation(len(train_q))
        model.train()
        t_epoch = time.perf_counter()
        first = start_step if epoch == start_epoch else 0
        losses: list[float] = list(start_losses) if epoch == start_epoch else []
        bar = tqdm(
            range(first, n_steps),
            desc=f"dualr epoch {epoch + 1}/{cfg.epochs}",
            disable=not progress,
            initial=first,
            total=n_steps,
        )
        for step in bar:
            idx = perm[step * cfg.batch_size : (step + 1) * cfg.batch_size]
            qs = [train_q[i] for i in idx]
            enc = torch.from_numpy(train_enc[idx]).to(device)
            ex = model.explore(enc, [q.topic_entities for q in qs], graph)
            loss, n_sup = model.loss(ex, [q.answers for q in qs])
            if n_sup:
                opt.zero_grad()
                loss.backward()
                opt.step()
                losses.append(float(loss.detach()))
                bar.set_postfix(loss=f"{np.mean(losses[-50:]):.3f}")
            if (step + 1) % cfg.checkpoint_every == 0:
                save_last(epoch, step + 1, losses)
        train_s = time.perf_counter() - t_epoch
        scores = evaluate_hits1(model, graph, val_q, val_enc)
        rec = {
            "epoch": epoch + 1,
            "loss": float(np.mean(losses)) if losses else float("nan"),
            "train_seconds": train_s,
            **{f"val_{k}": v for k, v in scores.items()},
        }
        history.append(rec)
        log.info("epoch %d: %s", epoch + 1, rec)
        if progress:
            tqdm.write(
                f"epoch {epoch + 1}: loss {rec['loss']:.4f}  val hits@1 {scores['hits1']:.4f}  "
                f"answer recall {scores['answer_recall']:.4f}  ({train_s:.0f}s)"
            )
        if scores["hits1"] > best:
            best, best_epoch, bad = scores["hits1"], epoch + 1, 0
            model.save(
                out / "best.pt",
                val_hits1=best,
                epoch=best_epoch,
                seed=cfg.seed,
                train_questions=len(train_q),
                init=str(init) if init is not None else None,
                val_questions=len(val_q),
            )
        else:
            bad += 1
        save_last(epoch + 1, 0, [])
    return TrainResult(out / "best.pt", best, best_epoch, history)


def _cfg_dict(c: ExplorerConfig) -> dict[str, Any]:
    d = asdict(c)
    d["top_k"] = list(c.top_k)
    return d


# --------------------------------------------------------------------------- question files
def read_questions(path: str | FsPath) -> list[TrainQuestion]:
    """Questions from a MetaQA-format file (``question with [topic]<TAB>a1|a2``) or JSONL
    (``{"question", "answers", "topic_entities"}``); ``.gz`` allowed."""
    p = FsPath(path)
    if not p.is_file():
        raise ConfigError(f"no question file at {p}")
    opener: Any = gzip.open if p.suffix == ".gz" else open
    out: list[TrainQuestion] = []
    with opener(p, "rt", encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            line = line.rstrip("\n")
            if not line.strip():
                continue
            if line.lstrip().startswith("{"):
                try:
                    obj = json.loads(line)
                    out.append(
                        TrainQuestion(obj["question"], list(obj["answers"]), list(obj["topic_entities"]))
                    )
                except (json.JSONDecodeError, KeyError, TypeError) as exc:
                    raise DataFormatError(str(p), n, f"bad JSONL question ({exc})") from exc
                continue
            q, sep, ans = line.partition("\t")
            topics = bracketed(q)
            if not sep or not topics:
                raise DataFormatError(str(p), n, "expected 'question with [topic]<TAB>answer|answer'")
            out.append(TrainQuestion(q, [a for a in ans.split("|") if a], topics))
    return out


def train_explorer(
    *,
    kg: str = "metaqa",
    questions: str = "metaqa",
    val: str | None = None,
    hops: str = "1,2,3",
    limit: int | None = None,
    val_limit: int | None = None,
    out: str = "runs/dualr",
    hidden: int = 64,
    layers: int = 3,
    top_k: list[int] | None = None,
    encoder: str | None = None,
    mask_topics: bool = True,
    epochs: int = 8,
    batch_size: int = 20,
    lr: float = 3e-3,
    weight_decay: float = 1e-5,
    patience: int = 2,
    seed: int = 0,
    device: str | None = None,
    checkpoint_every: int = 200,
    threads: int | None = None,
    init: str | None = None,
    resume: bool = True,
    progress: bool = True,
) -> dict[str, Any]:
    """``kg-agents train dualr --set KEY=VALUE ...``: train the explorer and return what it wrote.

    Args:
        kg: KG spec for :func:`kg_agents.kg.open_kg`.
        questions: ``"metaqa"`` (the seeded MetaQA dev-train split of each hop in ``hops``, validated on
            the dev-validation split) or a question file (MetaQA format or JSONL).
        val: a validation question file (default: a seeded 20% of ``questions``).
        hops: MetaQA hops trained together (the paper's pre-training over datasets, here over hops).
        limit, val_limit: at most this many training / validation questions per hop (a seeded sample).
        out: output folder (``best.pt``, ``last.pt``).
        hidden, layers, top_k: the architecture (:class:`ExplorerConfig`; ``top_k`` one value or one per
            layer, default 100).
        encoder: the frozen text encoder's name for :func:`~.gnn.encoding.get_text_encoder` (None:
            all-MiniLM-L6-v2; ``"llm"``: the mean of the embedded local model's first and last layers).
        mask_topics: encode questions with their ``[topic entity]`` mentions masked
            (:class:`~.gnn.encoding.TopicMaskedEncoder`; the checkpoint names the masked encoder, so the
            graph masks too).
        epochs, batch_size, lr, weight_decay, patience, seed, device, checkpoint_every: see
            :class:`TrainConfig`.
        threads: torch CPU threads (None: torch's default).
        init: a checkpoint to start from (same architecture and encoder), e.g. a run on fewer questions.
        resume: continue from ``out/last.pt`` when present.
        progress: show a progress bar.

    Example:
        ``kg-agents train dualr --set limit=3000 --set val_limit=500 --set epochs=4``
    """
    if threads:
        torch.set_num_threads(threads)
    graph_kg = open_kg(kg)
    train, valq = load_training_questions(
        questions, val, hops=hops, limit=limit, val_limit=val_limit, seed=seed
    )
    mcfg = ExplorerConfig(hidden=hidden, layers=layers, top_k=tuple(top_k or [100]))
    cfg = TrainConfig(
        epochs=epochs,
        batch_size=batch_size,
        lr=lr,
        weight_decay=weight_decay,
        patience=patience,
        seed=seed,
        device=device,
        checkpoint_every=checkpoint_every,
    )
    name = encoder or None
    if mask_topics and not (name or "").endswith(MASKED_SUFFIX):
        name = (name or "") + MASKED_SUFFIX
    t0 = time.perf_counter()
    res = train_dualr(
        graph_kg,
        train,
        valq,
        out_dir=out,
        model_config=mcfg,
        config=cfg,
        encoder=get_text_encoder(name),
        init=init,
        resume=resume,
        progress=progress,
    )
    return {
        "best": str(res.best_path),
        "val_hits1": res.best_hits1,
        "best_epoch": res.best_epoch,
        "train_questions": len(train),
        "val_questions": len(valq),
        "seconds": round(time.perf_counter() - t0, 1),
        "history": res.history,
    }


def load_training_questions(
    questions: str,
    val: str | None = None,
    *,
    hops: str = "1,2,3",
    limit: int | None = None,
    val_limit: int | None = None,
    seed: int = 0,
) -> tuple[list[Any], list[Any]]:
    """Train and validation questions: ``"metaqa"`` = the seeded MetaQA dev split of each hop in ``hops``;
    otherwise a question file (80/20 seeded split unless ``val`` is given)."""
    if questions == "metaqa":
        hop_list = [int(h) for h in str(hops).split(",") if h.strip()]
        train: list[Any] = []
        valq: list[Any] = []
        for h in hop_list:
            train += list(load_metaqa(h, split="train", limit=limit))
            valq += list(load_metaqa(h, split="validation", limit=val_limit))
        return train, valq
    qs = read_questions(questions)
    if val is not None:
        vq = read_questions(val)
        return (qs[:limit] if limit else qs), (vq[:val_limit] if val_limit else vq)
    perm = np.random.default_rng(seed).permutation(len(qs))
    cut = int(0.8 * len(qs))
    tr, va = [qs[i] for i in perm[:cut]], [qs[i] for i in perm[cut:]]
    return (tr[:limit] if limit else tr), (va[:val_limit] if val_limit else va)
