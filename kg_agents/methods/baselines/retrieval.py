"""``text_rag``'s retrieval: triples as sentences, their embeddings, and the whole-KG FAISS index.

- :func:`verbalize`: a triple as a sentence (``"Splash directed by Ron Howard"``);
- :func:`encode_texts`: L2-normalised embeddings from an ``Encoder``;
- :func:`neighbourhood`: the candidate triples within a few hops of the topic entities;
  :func:`topic_neighbourhoods`: each topic entity's own, its share of the budget each, and
  :func:`interleave`, their triples taken in turn;
- :class:`TripleEmbeddings`: the encoder (loaded on first need), a bounded cache of triple
  embeddings, and the persisted whole-KG index (:class:`TripleTextIndex`), per graph.

Example:
    >>> from kg_agents.kg import MemoryKG
    >>> from kg_agents.kg.base import Triple
    >>> t = Triple("Splash", "directed_by", "Ron Howard")
    >>> verbalize(MemoryKG([t]), t)
    'Splash directed by Ron Howard'
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from kg_agents.errors import ConfigError
from kg_agents.files import atomic_target, atomic_write, cache_root, safe_name
from kg_agents.kg.base import Triple
from kg_agents.kg.encoder import DEFAULT_ENCODER, get_sentence_encoder

__all__ = [
    "EMBEDDING_CACHE_SIZE",
    "FRONTIER_CHUNK",
    "TripleEmbeddings",
    "TripleTextIndex",
    "encode_texts",
    "interleave",
    "neighbourhood",
    "topic_neighbourhoods",
    "verbalize",
]

_T = TypeVar("_T")

#: Entities of a neighbourhood's frontier read in one ``neighbors_many`` call (:func:`neighbourhood`).
FRONTIER_CHUNK = 64

#: Triple embeddings kept per graph (the oldest are dropped first).
EMBEDDING_CACHE_SIZE = 200_000


def verbalize(kg: Any, t: Triple) -> str:
    """A triple as a sentence for retrieval: ``"Splash directed by Ron Howard"``."""
    return f"{kg.label(t.head)} {t.relation.replace('_', ' ').replace('.', ' ')} {kg.label(t.tail)}"


def encode_texts(encoder: Any, texts: list[str]) -> Any:
    """L2-normalised float32 embeddings from an ``Encoder`` (``encoder(texts) -> array``)."""
    vecs = np.asarray(encoder(texts), dtype="float32").reshape(len(texts), -1)
    norms = np.linalg.norm(vecs, axis=1, keepdims=True)
    return vecs / np.where(norms > 0, norms, 1.0)


class TripleTextIndex:
    """FAISS inner-product index over the verbalised triples of a whole KG, persisted on disk.

    Built once per (KG, encoder) into ``directory`` (default:
    ``<cache>/text_index/<kg name>-<fingerprint>[-<encoder name>]``, under
    :func:`kg_agents.files.cache_root`): ``triples.faiss`` and ``triples.tsv``, each written to a
    temporary file and renamed into place (:mod:`kg_agents.files`). The KG must be able to list its
    triples (``iter_triples()``, as ``MemoryKG`` does).

    Example:
        >>> idx = TripleTextIndex.open(open_kg("metaqa"), encoder)     # doctest: +SKIP
        >>> idx.search(encoder.encode(["who directed Splash"]), 5)     # doctest: +SKIP
    """

    def __init__(self, index: Any, triples: list[Triple]) -> None:
        self.index = index
        self.triples = triples

    @staticmethod
    def default_directory(kg: Any, encoder: Any) -> Path:
        """Where the index of ``kg`` embedded with ``encoder`` lives in the kg-agents cache."""
        name = str(getattr(encoder, "name", DEFAULT_ENCODER))
        suffix = "" if name == DEFAULT_ENCODER else "-" + safe_name(name)
        return cache_root("text_index") / f"{safe_name(str(kg.name))}-{kg.fingerprint()}{suffix}"

    @classmethod
    def open(cls, kg: Any, encoder: Any, directory: str | None = None) -> TripleTextIndex:
        """Load the persisted index of ``kg`` or build and save it.

        Raises:
            ConfigError: the index is not built yet and ``kg`` cannot list its triples.
        """
        import faiss

        folder = Path(directory) if directory else cls.default_directory(kg, encoder)
        fi, ft = folder / "triples.faiss", folder / "triples.tsv"
        if fi.is_file() and ft.is_file():
            with open(ft, encoding="utf-8") as fh:
                triples = [Triple(*line.rstrip("\n").split("\t")) for line in fh]
            return cls(faiss.read_index(str(fi)), triples)
        if not hasattr(kg, "iter_triples"):
            raise ConfigError(
                f"text_rag scope='kg' needs a KG that lists its triples; {kg!r} does not "
                "(use scope='neighborhood')"
            )
        triples = list(kg.iter_triples())
        vecs = encode_texts(encoder, [verbalize(kg, t) for t in triples])
        index = faiss.IndexFlatIP(vecs.shape[1])
        index.add(vecs)
        atomic_write(ft, "".join(f"{t.head}\t{t.relation}\t{t.tail}\n" for t in triples))
        with atomic_target(fi, suffix=".faiss") as tmp:
            faiss.write_index(index, str(tmp))
        return cls(index, triples)

    def search(self, query: Any, k: int) -> list[Triple]:
        """The ``k`` triples nearest to the (normalised) query vector."""
        _, ids = self.index.search(query.reshape(1, -1), k)
        return [self.triples[i] for i in ids[0] if i >= 0]


class TripleEmbeddings:
    """One graph's encoder (the shared MiniLM unless given, loaded on first need), its bounded cache of
    triple-sentence embeddings, and its whole-KG :class:`TripleTextIndex` (opened on first need).

    Args:
        encoder: an ``Encoder`` (``encoder(texts) -> array``); None: ``get_sentence_encoder()``.
        index_dir: where the whole-KG index lives (None: the kg-agents cache).
        capacity: embeddings kept (the oldest dropped first).
    """

    def __init__(
        self, encoder: Any = None, *, index_dir: str | None = None, capacity: int = EMBEDDING_CACHE_SIZE
    ) -> None:
        self._encoder = encoder
        self.index_dir = index_dir
        self.capacity = capacity
        self._vectors: dict[str, Any] = {}
        self._kg_index: TripleTextIndex | None = None

    @property
    def encoder(self) -> Any:
        """The encoder (the shared sentence encoder, loaded now, when none was given)."""
        if self._encoder is None:
            self._encoder = get_sentence_encoder()
        return self._encoder

    def encode(self, texts: list[str]) -> Any:
        """Normalised embeddings of ``texts``, not cached (e.g. a question)."""
        return encode_texts(self.encoder, texts)

    def embed(self, texts: list[str]) -> Any:
        """Normalised embeddings of ``texts`` (one row each), from the cache where it has them."""
        missing = [t for t in dict.fromkeys(texts) if t not in self._vectors]
        if missing:
            for t, v in zip(missing, encode_texts(self.encoder, missing), strict=True):
                self._vectors[t] = v
            while len(self._vectors) > self.capacity:  # bounded: drop the oldest entries
                self._vectors.pop(next(iter(self._vectors)))
        if not texts:
            return np.zeros((0, 1), dtype="float32")
        return np.stack([self._vectors[t] for t in texts])

    def kg_index(self, kg: Any) -> TripleTextIndex:
        """The whole-KG index of ``kg`` (loaded or built on the first call, then kept)."""
        if self._kg_index is None:
            self._kg_index = TripleTextIndex.open(kg, self.encoder, self.index_dir)
        return self._kg_index


def neighbourhood(
    kg: Any, starts: list[str], hops: int, fanout: int, budget: int
) -> tuple[list[Triple], bool]:
    """Triples within ``hops`` of ``starts`` (both directions), ``fanout`` per entity, ``budget`` in all.

    Each hop's frontier is read :data:`FRONTIER_CHUNK` entities at a time, in order, and the reading stops
    once ``budget`` triples are met: over a SPARQL endpoint a wide last hop (the neighbours of a country)
    costs the requests its first entities need, not one per batch of the whole frontier. The triples are
    the ones a read of the whole frontier gives.

    Returns:
        ``(triples, cut)``: the triples in the order met, and whether a fan-out or the budget cut them.
    """
    seen: dict[Triple, None] = {}
    frontier = list(dict.fromkeys(starts))
    visited = set(frontier)
    cut = False
    for _ in range(hops):
        if not frontier or len(seen) >= budget:
            break
        nxt: list[str] = []
        for i in range(0, len(frontier), FRONTIER_CHUNK):
            if len(seen) >= budget:
                cut = True
                break
            chunk = frontier[i : i + FRONTIER_CHUNK]
            nbrs = kg.neighbors_many(chunk, direction="both", limit=fanout)
            for e in chunk:
                tl = nbrs.get(e, [])
                cut = cut or bool(getattr(tl, "truncated", False))
                for t in tl:
                    if len(seen) >= budget:
                        cut = True
                        break
                    seen.setdefault(t, None)
                    o = t.other(e)
                    if o not in visited:
                        visited.add(o)
                        nxt.append(o)
        frontier = nxt
    return list(seen), cut


def interleave(lists: Iterable[Sequence[_T]]) -> list[_T]:
    """The items of ``lists`` taken in turn (the first of each, then the second of each, ...), each once:
    a cut of the result keeps a share of every list.

    Example:
        >>> interleave([[1, 2, 3], [4], [5, 1]])
        [1, 4, 5, 2, 3]
    """
    seqs = [list(x) for x in lists]
    out: dict[_T, None] = {}
    for i in range(max((len(x) for x in seqs), default=0)):
        for x in seqs:
            if i < len(x):
                out.setdefault(x[i], None)
    return list(out)


def topic_neighbourhoods(
    kg: Any, starts: list[str], hops: int, fanout: int, budget: int
) -> tuple[list[list[Triple]], bool]:
    """Each topic entity's :func:`neighbourhood`, with its share of ``budget`` (at least one triple), so
    that one topic's hubs do not spend the budget of the others (a conjunction's answers lie in all).

    Returns:
        ``(triples per topic entity, cut)``: one list per distinct entity of ``starts``, in order, and
        whether a fan-out or a share cut any.
    """
    topics = list(dict.fromkeys(starts))
    share = max(1, budget // max(1, len(topics)))
    out: list[list[Triple]] = []
    cut = False
    for t in topics:
        found, c = neighbourhood(kg, [t], hops, fanout, share)
        out.append(found)
        cut = cut or c
    return out, cut
