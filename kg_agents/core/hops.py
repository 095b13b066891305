"""Hop-count prediction for KnowledgeNavigator (question analysis, eq. 1-2 of the paper).

``h_Q = argmax_h P(h | PLM(Q))``: a frozen sentence encoder (all-MiniLM-L6-v2, the shared encoder of
:mod:`kg_agents.kg.encoder`) embeds the question and a small softmax-regression head, trained on the
hop labels of the MetaQA dev-train split, predicts the number of hops ``1..H``. The paper fine-tunes
BERT; here only the head is trained, so the checkpoint is a few kilobytes and ships in the package
(``kg_agents/methods/knowledge_navigator/checkpoints/``).

The topic entity is masked before encoding (MetaQA marks it ``[in brackets]``; for other questions the
linked entity labels are masked), so the head learns the question's relational shape, not its names.

Example:
    >>> from kg_agents.core.hops import load_hop_classifier
    >>> clf = load_hop_classifier()                                  # doctest: +SKIP
    >>> clf.predict(["who directed the films written by [Babaloo Mandel]"])  # doctest: +SKIP
    [2]
"""

from __future__ import annotations

import hashlib
import io
import json
import re
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from kg_agents.errors import ConfigError, ModelError
from kg_agents.files import atomic_write
from kg_agents.kg.encoder import get_sentence_encoder
from kg_agents.kg.text import BRACKETED
from kg_agents.packs import CHAIN, HOP_CLASSIFIER, Pack

__all__ = [
    "CHECKPOINT_DIR",
    "ENTITY_MASK",
    "HOPS_MODES",
    "HopClassifier",
    "chain_hops",
    "check_hops",
    "default_encoder",
    "encode",
    "forget_loaded",
    "load_hop_classifier",
    "mask_entities",
    "pack_hops",
    "question_hops",
    "softmax",
]

#: The bundled checkpoint, shipped with knowledge_navigator (graph_agent and graph_explore use it too): the
#: bundled MetaQA pack's ``hop_classifier``, and the classifier of ``"predict"`` where no pack has one.
CHECKPOINT_DIR = Path(__file__).resolve().parent.parent / "methods" / "knowledge_navigator" / "checkpoints"
ENTITY_MASK = "ENTITY"
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
    text = BRACKETED.sub(ENTITY_MASK, question)
    for label in sorted({e for e in entities if e and e.strip()}, key=lambda e: (-len(e), e)):
        text = re.sub(rf"(?<!\w){re.escape(label)}(?!\w)", ENTITY_MASK, text, flags=re.IGNORECASE)
    return " ".join(text.split())


def default_encoder() -> Any:
    """The shared sentence encoder: all-MiniLM-L6-v2, offline (``kg.encoder.get_sentence_encoder``)."""
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
        """Write ``head.npz`` and ``meta.json`` into ``directory``.

        Each file is written whole or not at all (:func:`~kg_agents.files.atomic_write`), the head
        first; ``meta.json`` holds the head's SHA-256, so a save cut between the two files leaves a
        checkpoint that :meth:`load` refuses instead of one whose parts come from two runs.
        """
        d = Path(directory)
        buf = io.BytesIO()
        np.savez(buf, weight=self.weight, bias=self.bias)
        head = buf.getvalue()
        meta = {**self.meta, "classes": list(self.classes), "head_sha256": hashlib.sha256(head).hexdigest()}
        atomic_write(d / "head.npz", head)
        atomic_write(d / "meta.json", json.dumps(meta, indent=2, sort_keys=True) + "\n")
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
            head = (d / "head.npz").read_bytes()
            with np.load(io.BytesIO(head)) as z:
                weight, bias = z["weight"], z["bias"]
        except (OSError, ValueError, KeyError) as exc:
            raise ModelError(
                f"no readable hop-classifier checkpoint in {d}; train one with `kg-agents train hops`"
            ) from exc
        if meta.get("head_sha256") not in (None, hashlib.sha256(head).hexdigest()):
            raise ModelError(
                f"the hop-classifier checkpoint in {d} is incomplete (its head.npz and meta.json come "
                "from different saves: an interrupted `kg-agents train hops`); train it again"
            )
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


def forget_loaded(directory: str | Path) -> None:
    """Drop the cached classifier of ``directory`` (after a trainer rewrote it)."""
    with _LOCK:
        _LOADED.pop(str(Path(directory).resolve()), None)


#: The ``hops`` settings of the methods that follow the question's hop count, besides a positive integer.
HOPS_MODES = ("auto", "predict", CHAIN, "none")
#: The longest relation chain :func:`chain_hops` reads.
CHAIN_MAX_HOPS = 3


def chain_hops(
    kg: Any,
    question: str,
    topics: Sequence[str],
    *,
    max_hops: int = CHAIN_MAX_HOPS,
    encoder: Any = None,
    revisit: bool = False,
) -> int | None:
    """The length of the relation chain from ``topics`` whose words are closest to ``question``: the
    graph's chains of 1..``max_hops`` hops (:func:`~kg_agents.core.chains.relation_chains`, written as
    :func:`~kg_agents.core.chains.chain_text` does) and the question with its topic entities' labels
    masked, both embedded by the sentence encoder (default: the shared all-MiniLM-L6-v2), compared by
    cosine similarity; the shorter chain wins a tie. None when the graph has no chain from ``topics``.
    ``revisit`` reads the chains as :func:`~kg_agents.core.chains.relation_chains` does with it (a chain
    may end on a topic entity).

    It reads the graph, not the question's wording: a hop classifier trained on synthesised questions
    learns the synthesiser's phrasing, which people's questions do not share; this needs no training.
    How often each names the right depth: the own-KG guide.

    Raises:
        ConfigError: ``max_hops`` is not a positive integer.

    Example:
        >>> from kg_agents.kg.memory import MemoryKG
        >>> kg = MemoryKG([("Big", "directed_by", "Penny"), ("Penny", "born_in", "1943")])
        >>> chain_hops(kg, "in which year was the director of [Big] born", ["Big"])  # doctest: +SKIP
        2
    """
    from kg_agents.core.chains import chain_text, relation_chains

    if not isinstance(max_hops, int) or isinstance(max_hops, bool) or max_hops < 1:
        raise ConfigError(f"max_hops must be a positive integer, got {max_hops!r}")
    texts, lengths = [], []
    for length in range(1, max_hops + 1):
        for chain in relation_chains(kg, list(topics), length, revisit=revisit)[0]:
            texts.append(chain_text(chain))
            lengths.append(length)
    if not texts:
        return None
    enc = encoder if encoder is not None else default_encoder()
    query = encode(enc, [mask_entities(question, [kg.label(e) for e in topics])])[0]
    vecs = _chain_vectors(enc, texts)
    sims = vecs @ query / np.maximum(np.linalg.norm(vecs, axis=1) * np.linalg.norm(query), 1e-12)
    return lengths[int(np.argmax(sims))]  # argmax takes the first best: chains come shortest first


#: Per encoder (kept alive with its vectors, so its id is not reused): chain text -> embedding.
_CHAIN_VECTORS: dict[int, tuple[Any, dict[str, np.ndarray]]] = {}
_CHAIN_VECTORS_MAX = 50_000


def _chain_vectors(encoder: Any, texts: Sequence[str]) -> np.ndarray:
    """The embeddings of ``texts``, each chain text encoded once per encoder and process (a graph has a
    few hundred; a question's chains are mostly its neighbours')."""
    with _LOCK:
        known = _CHAIN_VECTORS.setdefault(id(encoder), (encoder, {}))[1]
        got = {t: known[t] for t in texts if t in known}
    missing = list(dict.fromkeys(t for t in texts if t not in got))
    if missing:
        got.update(zip(missing, encode(encoder, missing), strict=True))
        with _LOCK:
            if len(known) + len(missing) > _CHAIN_VECTORS_MAX:
                known.clear()
            known.update((t, got[t]) for t in missing)
    return np.stack([got[t] for t in texts])


def check_hops(hops: Any, name: str = "hops") -> int | str:
    """``hops`` validated: one of :data:`HOPS_MODES` or a positive integer (``name`` is the option's
    name in the error).

    Raises:
        ConfigError: anything else.

    Example:
        >>> check_hops(2), check_hops("auto")
        (2, 'auto')
    """
    if isinstance(hops, str) and hops in HOPS_MODES:
        return hops
    if isinstance(hops, int) and not isinstance(hops, bool) and hops >= 1:
        return hops
    raise ConfigError(f"{name} must be one of {', '.join(HOPS_MODES)} or a positive integer, got {hops!r}")


def pack_hops(
    pack: Pack | None, method: str, hop_classifier: Any = None, option: str = "hops"
) -> tuple[Any, bool | str | None]:
    """A method's hop classifier and what its ``"auto"`` hop setting follows, for its dependencies.

    A ``hop_classifier`` given to the factory wins: ``(hop_classifier, None)`` (``"auto"`` predicts with
    it, see :func:`question_hops`). Else the pack's ``hop_classifier`` component (None without one) and
    the pack's route for ``method`` (:meth:`~kg_agents.packs.Pack.auto_hops`): True where ``option`` is
    ``"predict"`` (the bundled MetaQA pack's graph_agent, graph_explore, gcr and RAG baselines), ``"chain"``
    where it is ``"chain"`` (:func:`chain_hops`; a pack built from the graph alone), else False. Without a
    pack, ``(None, False)``: ``"predict"`` asks the bundled classifier and ``"auto"`` follows nothing.

    Raises:
        ModelError: the pack's classifier cannot be read.

    Example:
        >>> pack_hops(None, "graph_explore")
        (None, False)
    """
    if hop_classifier is not None:
        return hop_classifier, None
    if pack is None:
        return None, False
    folder = pack.component_path(HOP_CLASSIFIER)
    return (load_hop_classifier(folder) if folder is not None else None), pack.auto_hops(method, option)


def question_hops(
    mode: int | str,
    kg: Any,
    question: str,
    topics: Sequence[str],
    hop_classifier: Any = None,
    *,
    auto: bool | str | None = None,
    revisit: bool = False,
) -> int | None:
    """The hop count a method follows for ``question`` under the setting ``mode`` (None: none).

    An integer is taken as it is; ``"predict"`` asks ``hop_classifier`` (default: the bundled
    :class:`HopClassifier`, the question with its topic entities' labels masked); ``"chain"`` takes the
    length of the relation chain closest to the question (:func:`chain_hops`; None where the topic
    entities have no chain); ``"auto"`` predicts where ``auto`` is True (a KG pack's route says so, see
    :func:`pack_hops`), or, with ``auto`` None, where a ``hop_classifier`` is given, follows the chain where
    ``auto`` is ``"chain"``, and does nothing else; ``"none"``, or a question without topic entities,
    gives None. ``topics`` are entity ids; ``kg`` labels them only when the classifier or chains are asked.
    ``revisit`` reads the chains as :func:`chain_hops` does with it.

    Example:
        >>> question_hops(2, None, "who directed [Splash]", ["Splash"])
        2
        >>> question_hops("none", None, "who directed [Splash]", ["Splash"]) is None
        True
        >>> question_hops("auto", None, "who directed [Splash]", ["Splash"]) is None
        True
    """
    if mode == "none" or not topics:
        return None
    if isinstance(mode, int):
        return mode
    if mode == "auto":
        follows = hop_classifier is not None if auto is None else auto
        if not follows:
            return None
        mode = CHAIN if follows == CHAIN else "predict"
    if mode == CHAIN:
        return chain_hops(kg, question, topics, revisit=revisit)
    clf = hop_classifier if hop_classifier is not None else load_hop_classifier()
    return max(1, int(clf.predict([question], [[kg.label(e) for e in topics]])[0]))
