"""``EntityIndex``: link text to the entity ids of any knowledge graph.

Matching goes from strict to loose, and stops at the first tier that finds something:

1. ``exact``: the text is a label (or an entity id) as it is;
2. ``folded``: equal after Unicode NFKC, case folding, ``_`` read as a space, whitespace collapsed;
3. ``loose``: equal as sequences of word characters (punctuation ignored: ``X-Men: The Last Stand``
   matches ``x men the last stand``);
4. ``semantic``: nearest labels by cosine similarity of sentence embeddings (all-MiniLM-L6-v2 by
   default), searched with FAISS inner product over L2-normalised vectors.

Several ids may share a label (MetaQA has ``English`` and ``english``): every tier returns all of
them. Only ``kg.iter_labels()`` and ``kg.fingerprint()`` are used, so any store works.

The semantic side is lazy: the label embeddings are built (or loaded from the cache) and the
encoder model loaded only when a query needs them. Embeddings, the FAISS index and the label rows
are persisted under ``<cache root>/index/<kg.name>-<fingerprint>/`` (cache root: ``cache_dir=``,
else ``$KG_AGENTS_CACHE``, else ``~/.cache/kg_agents``), each file written to a temporary file and
renamed into place, and a manifest with their checksums written last: a crash leaves either no
manifest or one whose checksums do not match, and both mean "rebuild".

Modules: :mod:`~kg_agents.kg.matching` (the tiers' keys and scores), :mod:`~kg_agents.kg.faiss_index`
(building and caching the FAISS index), :mod:`~kg_agents.kg.mentions` (finding a question's mentions);
this one holds :class:`EntityIndex`, which joins them.
"""

from __future__ import annotations

import difflib
import logging
import os
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from kg_agents._compute import run_compute
from kg_agents.errors import EntityNotFound, ModelError
from kg_agents.files import safe_name
from kg_agents.kg.base import KnowledgeGraph
from kg_agents.kg.encoder import DEFAULT_ENCODER, Encoder, HashingEncoder, get_sentence_encoder
from kg_agents.kg.faiss_index import (
    INDEX_FORMAT,
    CacheInvalid,
    IndexKey,
    import_faiss,
    index_cache_root,
    load_index,
    new_faiss,
    save_index,
)
from kg_agents.kg.matching import (
    STOPWORDS,
    LinkedEntity,
    display_text,
    fold,
    loose_key,
    match_score,
    spelling_similarity,
)
from kg_agents.kg.mentions import exact_at, is_proper, ngram_mentions, semantic_mentions
from kg_agents.kg.text import bracketed

__all__ = [
    "INDEX_FORMAT",
    "STOPWORDS",
    "EntityIndex",
    "LinkedEntity",
    "display_text",
    "fold",
    "index_cache_root",
    "loose_key",
    "match_score",
    "spelling_similarity",
]

logger = logging.getLogger(__name__)


class EntityIndex:
    """Exact, folded and semantic (FAISS) search over the labels of a knowledge graph.

    Args:
        kg: any :class:`~kg_agents.kg.base.KnowledgeGraph`; only ``iter_labels()``, ``fingerprint()``
            and ``name`` are used.
        encoder: a ready encoder callable (``texts -> (n, dim) array``); its ``name`` attribute, if
            any, keys the cache.
        encoder_factory: a zero-argument callable returning an encoder, called on the first
            semantic query; defaults to :func:`~kg_agents.kg.encoder.get_sentence_encoder`.
        encoder_name: the name that keys the cache (defaults to the encoder's ``name``).
        cache_dir: root of the index caches (see :func:`index_cache_root`).
        persist: False keeps everything in memory (no files read or written).
        semantic: False disables semantic search (no model, no FAISS): only lexical tiers.
        faiss_factory: a FAISS ``index_factory`` string (``"Flat"`` is exact search; ``"HNSW32"``
            for millions of labels).
        chunk_size: labels per encoder call while building.

    Example:
        >>> from kg_agents.kg import MemoryKG
        >>> idx = EntityIndex(MemoryKG([("Splash", "written_by", "Babaloo Mandel")]), persist=False)
        >>> idx.lookup("babaloo mandel")
        ['Babaloo Mandel']
        >>> idx.topic_entities("what movies did [Babaloo Mandel] write")
        ['Babaloo Mandel']
    """

    def __init__(
        self,
        kg: KnowledgeGraph,
        *,
        encoder: Encoder | None = None,
        encoder_factory: Callable[[], Encoder] | None = None,
        encoder_name: str | None = None,
        cache_dir: str | os.PathLike[str] | None = None,
        persist: bool = True,
        semantic: bool = True,
        faiss_factory: str = "Flat",
        chunk_size: int = 4096,
    ) -> None:
        self.kg_name = str(getattr(kg, "name", "kg"))
        self.fingerprint = kg.fingerprint()
        self._encoder = encoder
        self._encoder_factory = encoder_factory or get_sentence_encoder
        if encoder_name is None:
            source: Any = encoder if encoder is not None else encoder_factory
            if source is None:
                encoder_name = DEFAULT_ENCODER
            else:
                encoder_name = getattr(source, "name", None) or getattr(
                    source, "__qualname__", type(source).__qualname__
                )
        self.encoder_name = str(encoder_name)
        self.semantic_enabled = semantic
        self.faiss_factory = faiss_factory
        self.chunk_size = chunk_size
        self.persist = persist
        suffix = "" if self.encoder_name == DEFAULT_ENCODER else "-" + safe_name(self.encoder_name)
        self.cache_path: Path | None = (
            index_cache_root(cache_dir) / f"{safe_name(self.kg_name)}-{self.fingerprint}{suffix}"
            if persist
            else None
        )
        self._lock = threading.RLock()

        self._labels: dict[str, str] = {}
        self._exact: dict[str, list[str]] = {}
        self._folded: dict[str, list[str]] = {}
        self._loose: dict[str, list[str]] = {}
        for eid, label in kg.iter_labels():
            if eid in self._labels:
                continue
            self._labels[eid] = label
            self._exact.setdefault(label, []).append(eid)
            self._folded.setdefault(fold(label), []).append(eid)
            self._loose.setdefault(loose_key(label), []).append(eid)
        self._loose.pop("", None)
        self._max_ngram = max((k.count(" ") + 1 for k in self._loose), default=1)

        # Semantic side, filled by _ensure_semantic().
        self._texts: list[str] | None = None
        self._text_ids: list[list[str]] | None = None
        self._faiss: Any = None
        self._embeddings: np.ndarray | None = None
        self._spell_encoder = HashingEncoder(dim=256, n=3)
        self._spell_faiss: Any = None
        self.build_seconds: float | None = None
        self.loaded_from_cache: bool | None = None

    def __repr__(self) -> str:
        return (
            f"EntityIndex(kg={self.kg_name!r}, entities={len(self._labels)}, "
            f"encoder={self.encoder_name!r}, semantic_ready={self._faiss is not None})"
        )

    def __len__(self) -> int:
        return len(self._labels)

    def __contains__(self, entity: object) -> bool:
        return entity in self._labels

    def label(self, entity: str) -> str:
        """The label of an entity id. Raises :class:`EntityNotFound` for an unknown id."""
        try:
            return self._labels[entity]
        except KeyError:
            raise EntityNotFound(entity) from None

    # ------------------------------------------------------------------ lexical
    def lookup(self, label: str) -> list[str]:
        """Ids whose label is ``label`` exactly, else equal after :func:`fold` (never semantic).

        Example:
            >>> from kg_agents.kg import MemoryKG
            >>> EntityIndex(MemoryKG([("a b", "r", "A  B")]), persist=False).lookup("a b")
            ['a b']
        """
        text = label.strip()
        return list(self._exact.get(text) or self._folded.get(fold(text)) or [])

    def _lexical(self, text: str) -> list[LinkedEntity]:
        text = text.strip()
        out: dict[str, LinkedEntity] = {}

        def add(ids: Iterable[str], method: str) -> None:
            for eid in ids:
                if eid not in out:
                    out[eid] = LinkedEntity(eid, self._labels[eid], 1.0, method)

        add(self._exact.get(text, ()), "exact")
        if text in self._labels:
            add([text], "id")
        add(self._folded.get(fold(text), ()), "folded")
        if not out:
            add(self._loose.get(loose_key(text), ()), "loose")
        return list(out.values())

    # ------------------------------------------------------------------ link / resolve
    def link(self, text: str, k: int = 5, *, semantic: bool | None = None) -> list[LinkedEntity]:
        """Candidate entities for ``text``, best first.

        Args:
            text: a mention, a label or an entity id.
            k: how many semantic candidates to return (lexical matches are all returned).
            semantic: ``None`` searches semantically only when no lexical tier matched;
                ``True`` always adds semantic candidates (up to ``k`` in all); ``False`` never.

        Example:
            >>> from kg_agents.kg import MemoryKG
            >>> idx = EntityIndex(MemoryKG([("Splash", "written_by", "Babaloo Mandel")]), persist=False)
            >>> [(e.id, e.method) for e in idx.link("SPLASH")]
            [('Splash', 'folded')]
        """
        hits = self._lexical(text)
        want_semantic = (not hits) if semantic is None else semantic
        if want_semantic and self.semantic_enabled and text.strip():
            seen = {h.id for h in hits}
            room = max(k - len(hits), 0) if semantic else k
            if room:
                for cand in self.search(text, k=room + len(seen)):
                    if cand.id not in seen:
                        hits.append(cand)
                        seen.add(cand.id)
                        room -= 1
                        if not room:
                            break
        return hits

    def resolve(self, text: str, *, min_score: float = 0.7) -> str:
        """The best entity id for ``text``, or raise :class:`EntityNotFound` with suggestions.

        A lexical match wins; otherwise the best semantic candidate whose score
        (:func:`match_score`) is ``>= min_score``.

        Raises:
            EntityNotFound: nothing close enough; ``suggestions`` lists the closest labels.

        Example:
            >>> from kg_agents.kg import MemoryKG
            >>> EntityIndex(MemoryKG([("Splash", "r", "Tom Hanks")]), persist=False).resolve("tom hanks")
            'Tom Hanks'
        """
        hits = self._lexical(text)
        if hits:
            return hits[0].id
        cands: list[LinkedEntity] = []
        if self.semantic_enabled and text.strip():
            cands = self.search(text, k=5)
            if cands and cands[0].score >= min_score:
                return cands[0].id
            suggestions = list(dict.fromkeys(c.label for c in cands))
        else:
            suggestions = self._close_labels(text)
        raise EntityNotFound(text, suggestions=suggestions)

    def _close_labels(self, text: str, n: int = 5) -> list[str]:
        keys = difflib.get_close_matches(fold(text), list(self._folded), n=n, cutoff=0.6)
        return [self._labels[self._folded[key][0]] for key in keys]

    # ------------------------------------------------------------------ semantic
    def search(self, text: str | Sequence[str], k: int = 5) -> list[LinkedEntity]:
        """Semantic nearest labels of ``text`` (no lexical tiers), best first.

        With a list of texts, returns the merged candidates of all of them (best score per id).

        Raises:
            ModelError: semantic search is disabled, or the encoder or FAISS is unavailable.
        """
        texts = [text] if isinstance(text, str) else list(text)
        per_text = self.search_many(texts, k=k)
        best: dict[str, LinkedEntity] = {}
        for hits in per_text:
            for h in hits:
                if h.id not in best or h.score > best[h.id].score:
                    best[h.id] = h
        return sorted(best.values(), key=lambda h: -h.score)[:k]

    def search_many(self, texts: Sequence[str], k: int = 5) -> list[list[LinkedEntity]]:
        """Semantic nearest labels of each text, in one encoder call."""
        if not self.semantic_enabled:
            raise ModelError("semantic search is disabled for this EntityIndex (semantic=False)")
        self._ensure_semantic()
        assert self._texts is not None and self._text_ids is not None
        if not texts or not self._texts:
            return [[] for _ in texts]
        q = self._encode([display_text(t) for t in texts])
        n_search = min(len(self._texts), max(k * 4, 20))
        _, idx = run_compute(self._faiss.search, q, n_search)
        # Candidates by spelling too: sentence embeddings miss misspelt rare names ("Mikio Nause").
        spelling = self._spelling_index()
        _, idx_spell = run_compute(
            spelling.search, self._spell_encoder([loose_key(t) for t in texts]), n_search
        )
        emb = self._embeddings
        assert emb is not None
        out: list[list[LinkedEntity]] = []
        for row, text in enumerate(texts):
            cand = {int(i) for i in (*idx[row].tolist(), *idx_spell[row].tolist()) if i >= 0}
            ranked: list[tuple[float, int]] = []
            for i in cand:
                cos = float(emb[i] @ q[row])
                ranked.append((match_score(cos, spelling_similarity(text, self._texts[i])), i))
            ranked.sort(key=lambda x: (-x[0], x[1]))
            hits: list[LinkedEntity] = []
            for score, i in ranked:
                for eid in self._text_ids[i]:
                    hits.append(LinkedEntity(eid, self._labels.get(eid, self._texts[i]), score, "semantic"))
                if len(hits) >= k:
                    break
            out.append(hits[:k])
        return out

    def _spelling_index(self) -> Any:
        """A FAISS index of hashed character trigrams of the labels (built in memory on first use)."""
        if self._spell_faiss is None:
            with self._lock:
                if self._spell_faiss is None:
                    faiss = import_faiss()
                    vecs = self._spell_encoder([loose_key(t) for t in self._texts or []])
                    index = faiss.IndexFlatIP(self._spell_encoder.dim)
                    index.add(np.ascontiguousarray(vecs))
                    self._spell_faiss = index
        return self._spell_faiss

    @property
    def encoder(self) -> Encoder:
        """The encoder (created on first use)."""
        if self._encoder is None:
            with self._lock:
                if self._encoder is None:
                    self._encoder = self._encoder_factory()
        return self._encoder

    def _encode(self, texts: list[str]) -> np.ndarray:
        vecs = np.asarray(self.encoder(texts), dtype=np.float32)
        if vecs.ndim != 2 or vecs.shape[0] != len(texts):
            raise ModelError(
                f"encoder {self.encoder_name!r} returned shape {vecs.shape} for {len(texts)} texts"
            )
        norms = np.linalg.norm(vecs, axis=1, keepdims=True)
        return np.ascontiguousarray(vecs / np.maximum(norms, 1e-12))

    def build(self) -> EntityIndex:
        """Build (or load from the cache) the semantic index now instead of on the first query."""
        if self.semantic_enabled:
            self._ensure_semantic()
        return self

    def _ensure_semantic(self) -> None:
        if self._faiss is not None:
            return
        with self._lock:
            if self._faiss is not None:
                return
            faiss = import_faiss()
            texts, text_ids = self._semantic_rows()
            if self.cache_path is not None:
                try:
                    self._load(faiss, texts, text_ids)
                    self.loaded_from_cache = True
                    return
                except CacheInvalid as exc:
                    logger.info("entity index cache at %s not usable (%s); building", self.cache_path, exc)
            self._build(faiss, texts, text_ids)
            self.loaded_from_cache = False

    def _semantic_rows(self) -> tuple[list[str], list[list[str]]]:
        """Unique display texts to embed, each with the ids that carry it (deterministic order)."""
        by_text: dict[str, list[str]] = {}
        for eid, label in self._labels.items():
            by_text.setdefault(display_text(label), []).append(eid)
        by_text.pop("", None)
        texts = sorted(by_text)
        return texts, [by_text[t] for t in texts]

    def _build(self, faiss: Any, texts: list[str], text_ids: list[list[str]]) -> None:
        t0 = time.perf_counter()
        chunks = [self._encode(texts[i : i + self.chunk_size]) for i in range(0, len(texts), self.chunk_size)]
        emb = np.concatenate(chunks) if chunks else np.zeros((0, 1), dtype=np.float32)
        index = new_faiss(faiss, emb, self.faiss_factory) if len(texts) else None
        self.build_seconds = time.perf_counter() - t0
        logger.info(
            "entity index for %s: %d labels encoded in %.1fs", self.kg_name, len(texts), self.build_seconds
        )
        self._set_semantic(texts, text_ids, emb, index, faiss)
        if self.cache_path is not None:
            self._save(faiss, texts, text_ids, emb, index)

    def _set_semantic(
        self, texts: list[str], text_ids: list[list[str]], emb: np.ndarray, index: Any, faiss: Any
    ) -> None:
        if index is None:
            index = faiss.IndexFlatIP(max(emb.shape[1], 1))
        self._texts, self._text_ids, self._embeddings, self._faiss = texts, text_ids, emb, index

    # ------------------------------------------------------------------ persistence
    def _cache_key(self) -> IndexKey:
        return IndexKey(self.kg_name, self.fingerprint, self.encoder_name, self.faiss_factory)

    def _save(
        self, faiss: Any, texts: list[str], text_ids: list[list[str]], emb: np.ndarray, index: Any
    ) -> None:
        assert self.cache_path is not None
        try:
            save_index(
                self.cache_path, self._cache_key(), faiss, texts, text_ids, emb, index, self.build_seconds
            )
        except OSError as exc:
            # A read-only or full disk costs a rebuild next time, not this query.
            logger.warning("could not persist entity index to %s: %s", self.cache_path, exc)

    def _load(self, faiss: Any, texts: list[str], text_ids: list[list[str]]) -> None:
        assert self.cache_path is not None
        emb, index = load_index(self.cache_path, self._cache_key(), faiss, texts, text_ids)
        self._set_semantic(texts, text_ids, emb, index, faiss)

    # ------------------------------------------------------------------ questions
    def topic_entities(self, question: str, *, max_entities: int = 3, min_score: float = 0.7) -> list[str]:
        """Ids of the entities a question is about, best first.

        MetaQA marks the topic entity with brackets (``what movies did [Babaloo Mandel] write``):
        when a question has bracketed spans, their ids are returned (all ids sharing the label; a
        span with no lexical match is resolved semantically). Otherwise mentions are found:

        1. label n-grams, non-overlapping, matched with the ``loose`` key (case, accents and
           punctuation ignored), ranked: a name-like label (upper case or digits) written exactly
           as in the question, then longer spans, then name-like labels, then later spans; when
           some name-like label matched, lower-case labels (MetaQA tags such as ``film``) are
           dropped; spans made only of stopwords count only when written exactly as a name;
        2. unless the best n-gram is *strong* (a name-like label written exactly as in the question,
           or found loosely in an all-lower-case question, with no capitalised word glued to it),
           candidate spans (n-grams not starting or ending with a stopword, and the whole question)
           are embedded in one batch and the best non-overlapping semantic hits with score
           (:func:`match_score`) ``>= min_score`` are kept (lower-case labels only when no
           name-like label matched). They rank before the n-gram mentions when their span covers the
           best n-gram (``Simon Winecr`` over ``Simon``) or when that n-gram is a lower-case tag or
           a loose match (``star`` for ``Star!``); after them otherwise. A misspelt name in an
           all-lower-case question that also holds a loose label match is not corrected.

        Args:
            question: the question text.
            max_entities: most mentions returned for an unbracketed question.
            min_score: score threshold of the semantic fallback.

        Raises:
            EntityNotFound: a bracketed span matches no entity closely enough.

        Example:
            >>> from kg_agents.kg import MemoryKG
            >>> idx = EntityIndex(MemoryKG([("Splash", "written_by", "Babaloo Mandel")]), persist=False)
            >>> idx.topic_entities("what movies did babaloo mandel write")
            ['Babaloo Mandel']
        """
        spans = bracketed(question)
        if spans:
            out: list[str] = []
            for span in spans:
                ids = self.lookup(span) or [h.id for h in self._lexical(span)]
                if not ids:
                    ids = [self.resolve(span, min_score=min_score)] if self.semantic_enabled else []
                    if not ids:
                        raise EntityNotFound(span, suggestions=self._close_labels(span))
                out.extend(i for i in ids if i not in out)
            return out
        found, strong, best_span = ngram_mentions(
            question, max_entities, self._loose, self._labels, self._max_ngram
        )
        if strong or not self.semantic_enabled:
            return found
        sem = semantic_mentions(question, max_entities, min_score, self.search_many, self._labels)
        if not sem:
            return found
        sem_ids = [eid for eid, _ in sem]
        s_span = sem[0][1]
        covers = best_span is not None and s_span[0] <= best_span[0] and best_span[1] <= s_span[1]
        if best_span is None or covers or not found:
            # the semantic mention is at least as wide as the weak lexical one ("Simon Winecr" vs "Simon")
            keep_lexical = (
                [e for e in found if is_proper(self._labels[e])]
                if any(is_proper(self._labels[e]) for e in sem_ids)
                else found
            )
            return list(dict.fromkeys([*sem_ids, *keep_lexical]))[: max(max_entities, len(sem_ids))]
        if not any(is_proper(self._labels[e]) for e in found) or not exact_at(
            question, best_span, self._loose, self._labels
        ):
            # a lower-case tag or a loosely matched word ("star" for "Star!") ranks after a semantic name
            proper_sem = [e for e in sem_ids if is_proper(self._labels[e])]
            if proper_sem:
                named = [e for e in found if is_proper(self._labels[e])]
                return list(dict.fromkeys([*proper_sem, *named]))
        return list(dict.fromkeys([*found, *sem_ids]))
