"""Path tokenisation: the token ids of path sentences composed from their labels' ids, each label
tokenised once (:class:`PathTokenizer`), shared per tokenizer (:func:`path_tokenizer`), and inserted
into a trie as whole-sentence tokenisation would (:meth:`PathTokenizer.fill`)."""

from __future__ import annotations

import threading
import weakref
from collections.abc import Iterable, Sequence
from typing import Any, cast

from kg_agents.kg.base import ARROW, INVERSE_PREFIX, KnowledgeGraph, Path
from kg_agents.methods.gcr.trie.tree import PATH_END, PATH_START, KGTrie, path_sentence, walk_ids
from kg_agents.untrusted import kg_text

__all__ = ["PathTokenizer", "path_tokenizer", "prepare_labels", "splits_at_spaces"]


def splits_at_spaces(tokenizer: Any) -> bool:
    """True when ``tokenizer`` is a byte-level BPE with the GPT-2 split rule that splits any text at
    a space followed by a non-space, and tokenises each side alone as in the whole: no normaliser, no
    BPE dropout, no added token that holds whitespace or strips it (SmolLM2's tokenizer).

    Under its split rule
    (``'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+``)
    a piece holds a space only as its first character or inside a run of whitespace, and a run of
    whitespace that ends a label is one piece before the space of `` ->`` as at the end of a text: the
    pieces of `` x`` are the same alone as inside a sentence. The tests compare the composition with
    whole-sentence tokenisation on odd labels and on MetaQA.
    """
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is None:
        return False
    try:
        from tokenizers import models, pre_tokenizers

        model = backend.model
        pre = backend.pre_tokenizer
        added = backend.get_added_tokens_decoder().values()
    except Exception:  # an unknown backend: check the labels instead
        return False
    return (
        backend.normalizer is None
        and isinstance(pre, pre_tokenizers.ByteLevel)
        and bool(pre.use_regex)
        and not pre.add_prefix_space
        and isinstance(model, models.BPE)
        and not model.dropout
        and all(not (a.lstrip or a.rstrip or any(c.isspace() for c in a.content)) for a in added)
    )


#: A path whose sentence every tokenizer that composes must give whole as composed.
_PROBE = Path.from_text("Tom Hanks -> ~starred_actors -> Big, The (1988) -> release_year -> 1988")


class PathTokenizer:
    """Token ids of path sentences composed from the ids of their parts, each label tokenised once.

    The sentence ``<PATH> e0 -> r1 -> e1 </PATH>`` is composed from the ids of ``<PATH>``, `` e0``,
    `` ->``, `` r1``, `` ->``, `` e1`` and `` </PATH>``: the tokenizer's own ids for the whole sentence
    whenever it splits the sentence at the spaces between its parts. Every new label (an entity, or a
    relation as written, ``~r`` included) is rendered with :func:`~kg_agents.untrusted.kg_text` (the
    sentence is :func:`path_sentence`) and tokenised once, in a batch.

    A byte-level BPE tokenizer with the GPT-2 split rule (SmolLM2's; no normaliser, no BPE dropout, no
    added token that holds or strips whitespace) splits there by construction: each part starts with
    one space and ends where the split rule ends a piece before a space (one probe sentence confirms
    it). Any other tokenizer has each new label checked once in each context it can take:
    ``<PATH> x -> x </PATH>`` tokenised whole must equal the composition (many labels per text, then
    one text per label where a text disagrees). The paths holding a label that fails the check are
    tokenised whole, in one batch, so :meth:`encode` returns the tokenizer's ids for every sentence,
    whatever the tokenizer.

    Args:
        tokenizer: a Hugging Face tokenizer (called as ``tokenizer(texts, add_special_tokens=False)``).
        check: check every label in context (None: unless the tokenizer splits at the parts by
            construction, as above).
        max_labels: labels kept; past this size the cache starts again empty.
        chunk: labels per checking text.

    Attributes:
        labels: label -> ids of ``" " + kg_text(label)``, or None where composing would not give the
            tokenizer's ids.
        tokenized: labels tokenised so far.

    Example:
        >>> pt = PathTokenizer(tok)                                             # doctest: +SKIP
        >>> pt.encode([Path.from_text("Splash -> directed_by -> Ron Howard")])  # doctest: +SKIP
        [(44, 16586, 46, ...)]
    """

    def __init__(
        self, tokenizer: Any, *, check: bool | None = None, max_labels: int = 200_000, chunk: int = 64
    ) -> None:
        self.tokenizer = tokenizer
        self.max_labels = max_labels
        self.chunk = max(1, chunk)
        self._backend: Any = None
        self.start, self.arrow, self.end, self.sep = self._ids(
            [PATH_START, ARROW.rstrip(), " " + PATH_END, "\n"]
        )
        self._use_backend()
        self.check = not splits_at_spaces(tokenizer) if check is None else check
        self.labels: dict[str, tuple[int, ...] | None] = {}
        self.tokenized = 0
        self._lock = threading.Lock()
        if not self.check and not self._composes(_PROBE):  # never seen: then check every label
            self.check = True

    def _composes(self, path: Path) -> bool:
        """Whether composing ``path``'s sentence from its parts gives the tokenizer's ids."""
        parts = [path.hops[0].source, *(x for h in path.hops for x in (h.relation_text, h.target))]
        pieces = self._ids([" " + kg_text(x) for x in parts])
        composed = [*self.start, *pieces[0]]
        for piece in pieces[1:]:
            composed += [*self.arrow, *piece]
        return tuple(composed) + self.end == self._ids([path_sentence(path)])[0]

    def _use_backend(self) -> None:
        """Call a fast tokenizer's Rust backend directly (``encode_batch_fast``, no offsets or Python
        encodings) when it gives the tokenizer's own ids on probe texts."""
        fast = getattr(getattr(self.tokenizer, "backend_tokenizer", None), "encode_batch_fast", None)
        if fast is None:
            return
        probes = [
            f"{PATH_START} Tom Hanks -> ~starred_actors -> Big, The (1988) -> release_year {PATH_END}",
            " Amélie ->  x  </PATH>\n<PATH> 1,000,000 Years B.C. ",
        ]
        try:
            ids = [tuple(e.ids) for e in fast(probes, add_special_tokens=False)]
        except Exception:  # any failure: keep the tokenizer's own call
            return
        if ids == self._ids(probes):
            self._backend = fast

    def _ids(self, texts: Sequence[str]) -> list[tuple[int, ...]]:
        if not texts:
            return []
        if self._backend is not None:
            return [tuple(e.ids) for e in self._backend(list(texts), add_special_tokens=False)]
        out = self.tokenizer(list(texts), add_special_tokens=False)["input_ids"]
        return [tuple(map(int, ids)) for ids in out]  # plain ints, as KGTrie stores them

    def _in_context(self, piece: tuple[int, ...]) -> tuple[int, ...]:
        """The composed ids of ``<PATH> x -> x </PATH>``."""
        return (*self.start, *piece, *self.arrow, *piece, *self.end)

    def add(self, labels: Iterable[str]) -> None:
        """Tokenise and check the labels not seen yet (one batch)."""
        new = [x for x in dict.fromkeys(labels) if x not in self.labels]
        if not new:
            return
        pieces = self._ids([" " + kg_text(x) for x in new])
        ok = self._check(new, pieces) if self.check else [True] * len(new)
        with self._lock:
            if len(self.labels) + len(new) > self.max_labels:
                self.labels = {}
            labels = self.labels
            for x, piece, good in zip(new, pieces, ok, strict=True):
                labels[x] = piece if good else None
            self.tokenized += len(new)

    def _check(self, new: list[str], pieces: list[tuple[int, ...]]) -> list[bool]:
        """Whether each label's composition equals the tokenizer's ids in ``<PATH> x -> x </PATH>``."""
        shown = [kg_text(x) for x in new]
        checks = [f"{PATH_START} {x} {ARROW.strip()} {x} {PATH_END}" for x in shown]
        groups = [range(i, min(i + self.chunk, len(new))) for i in range(0, len(new), self.chunk)]
        wholes = self._ids(["\n".join(checks[i] for i in g) for g in groups])
        ok = [False] * len(new)
        retry: list[int] = []
        for g, whole in zip(groups, wholes, strict=True):
            composed: list[int] = []
            for i in g:
                if i != g.start:
                    composed += self.sep
                composed += self._in_context(pieces[i])
            if tuple(composed) == whole:
                for i in g:
                    ok[i] = True
            else:
                retry.extend(g)
        for i, whole in zip(retry, self._ids([checks[i] for i in retry]), strict=True):
            ok[i] = self._in_context(pieces[i]) == whole
        return ok

    def encode(self, paths: Sequence[Path]) -> list[tuple[int, ...]]:
        """The token ids of each path's sentence (:func:`path_sentence`), as the tokenizer gives them."""
        return self._encode(paths, self._pieces(paths))[0]

    def _pieces(self, paths: Sequence[Path]) -> dict[str, tuple[int, ...] | None]:
        """The cached ids of every label of ``paths`` (tokenising the new ones)."""
        need: set[str] = set()
        for p in paths:
            hops = p.hops
            if hops:
                need.add(hops[0].source)
                for h in hops:
                    need.add(h.relation_text)
                    need.add(h.target)
        self.add(need)
        labels = self.labels  # the entries we need: another thread may start the cache again
        piece = {x: labels.get(x) for x in need}
        missing = [x for x in need if x not in labels]
        if missing:
            self.add(missing)
            piece.update((x, self.labels.get(x)) for x in missing)
        return piece

    def fill(self, trie: KGTrie, paths: Sequence[Path]) -> None:
        """Insert the sentences of ``paths`` into ``trie``, in order: the trie that tokenising each
        sentence whole and inserting it would give (the same nodes, in the same order).

        A path's sentence is its parent path's body (the ids before `` </PATH>``), then
        `` -> r ->`` and the new entity: the walk goes on from the node the parent's body reached
        (the path less its last hop, inserted before it, as breadth-first search gives them), and
        from the node after `` -> r ->`` for the parent's other paths over ``r``.
        """
        piece = self._pieces(paths)
        if any(v is None for v in piece.values()) or not all(p.hops for p in paths):
            texts = [p.to_text() for p in paths]
            seqs, body_len, parents = self._encode(paths, piece)
            _fill(trie, texts, seqs, body_len, parents)
            return
        ids = cast("dict[str, tuple[int, ...]]", piece)
        start, arrow, end = self.start, self.arrow, self.end
        root = trie.root
        n_nodes = trie._nodes
        index: dict[tuple[int, ...], int] = {}  # hops, as object ids -> the path's position
        # per path: the node its body reached, its body's ids, its text
        at: list[tuple[dict[int, Any], tuple[int, ...], str]] = []
        heads: dict[str, tuple[dict[int, Any], tuple[int, ...], str]] = {}  # after "<PATH> e0"
        mids: dict[tuple[int, str], tuple[dict[int, Any], tuple[int, ...], str]] = {}  # after " -> r ->"
        for p in paths:
            hops = p.hops
            key = tuple(map(id, hops))
            index[key] = len(at)
            if len(hops) == 1:
                e0 = hops[0].source
                base = heads.get(e0)
                if base is None:
                    body = start + ids[e0]
                    node, made = walk_ids(root, body)
                    n_nodes += made
                    base = heads[e0] = (node, body, e0)
            else:
                j = index.get(key[:-1])
                if j is not None:
                    base = at[j]
                else:  # the parent path is not among the paths before this one
                    body = cast("tuple[int, ...]", self._body(hops[:-1], piece))
                    node, made = walk_ids(root, body)
                    n_nodes += made
                    base = (node, body, Path(hops[:-1]).to_text())
            h = hops[-1]
            rel = h.relation_text
            mk = (id(base), rel)
            mid = mids.get(mk)
            if mid is None:
                part = arrow + ids[rel] + arrow
                node, made = walk_ids(base[0], part)
                n_nodes += made
                mid = mids[mk] = (node, base[1] + part, base[2] + ARROW + rel + ARROW)
            target = ids[h.target]
            node, made = walk_ids(mid[0], target)
            here = (node, mid[1] + target, mid[2] + h.target)
            at.append(here)
            node, made_end = walk_ids(node, end)
            n_nodes += made + made_end
            trie._end_at(node, here[1] + end, here[2])
        trie._nodes = n_nodes

    def _encode(
        self, paths: Sequence[Path], piece: dict[str, tuple[int, ...] | None]
    ) -> tuple[list[tuple[int, ...]], list[int], list[int]]:
        """The sentences' ids; for each, the length of its body (the ids before `` </PATH>``; -1 for
        a sentence tokenised whole); and the index of its parent path (the path less its last hop,
        whose body starts its own), or -1 when that is not in ``paths`` before it."""
        start, arrow, end = self.start, self.arrow, self.end
        index: dict[tuple[int, ...], int] = {}  # hops, as object ids -> the path's index
        mids: dict[str, tuple[int, ...] | None] = {}  # relation -> ids of " -> r ->"
        seqs: list[tuple[int, ...]] = []
        body_len: list[int] = []
        parents: list[int] = []
        whole: list[int] = []
        for i, p in enumerate(paths):
            hops = p.hops
            key = tuple(map(id, hops))
            index[key] = i
            parent = index.get(key[:-1], -1) if len(hops) > 1 else -1
            parents.append(parent)
            if not hops:
                whole.append(i)
                seqs.append(())
                body_len.append(-1)
                continue
            if len(hops) == 1:
                e0 = piece[hops[0].source]
                base = None if e0 is None else (*start, *e0)
            elif parent >= 0:
                b = body_len[parent]
                base = seqs[parent][:b] if b >= 0 else None
            else:
                base = self._body(hops[:-1], piece)
            h = hops[-1]
            rel = h.relation_text
            mid = mids.get(rel, ())
            if mid == ():
                r = piece[rel]
                mid = mids[rel] = None if r is None else (*arrow, *r, *arrow)
            t = piece[h.target]
            if base is None or mid is None or t is None:
                whole.append(i)
                seqs.append(())
                body_len.append(-1)
            else:
                body = base + mid + t
                seqs.append(body + end)
                body_len.append(len(body))
        sentences = [path_sentence(paths[i]) for i in whole]
        for i, ids in zip(whole, self._ids(sentences), strict=True):
            seqs[i] = ids
        return seqs, body_len, parents

    def _body(self, hops: Sequence[Any], piece: dict[str, tuple[int, ...] | None]) -> tuple[int, ...] | None:
        e0 = piece.get(hops[0].source)
        if e0 is None:
            return None
        out = [*self.start, *e0]
        for h in hops:
            r, t = piece.get(h.relation_text), piece.get(h.target)
            if r is None or t is None:
                return None
            out += [*self.arrow, *r, *self.arrow, *t]
        return tuple(out)


_PATH_TOKENIZERS: weakref.WeakKeyDictionary[Any, PathTokenizer] = weakref.WeakKeyDictionary()
_PATH_TOKENIZERS_LOCK = threading.Lock()


def path_tokenizer(tokenizer: Any) -> PathTokenizer:
    """The :class:`PathTokenizer` shared by every build with ``tokenizer``, kept while the tokenizer
    lives (a new one each time when the tokenizer cannot be weakly referenced)."""
    with _PATH_TOKENIZERS_LOCK:
        try:
            pt = _PATH_TOKENIZERS.get(tokenizer)
        except TypeError:
            return PathTokenizer(tokenizer)
        if pt is None:
            pt = PathTokenizer(tokenizer)
            pt.tokenizer = weakref.proxy(tokenizer)  # the entry must not keep its own key alive
            _PATH_TOKENIZERS[tokenizer] = pt
        return pt


def prepare_labels(kg: KnowledgeGraph, tokenizer: Any, *, batch: int = 4096) -> int:
    """Tokenise every entity id and relation of ``kg`` (both directions) once, in batches, for the
    builds with ``tokenizer``: after it, every path of :func:`build_trie` is composed from cached ids.

    For many builds on one KG (``build_tries`` over a dataset, a long-running service): it is paid once,
    and the builds after it tokenise nothing (timed by ``benchmarks/gcr/trie_build.py``). It reads every
    id of the KG (``kg.iter_labels()``), so on a remote endpoint it is a scan of the whole graph. At most
    the shared tokenizer's ``max_labels`` ids are kept (the first ones).

    Returns:
        The number of ids and relations newly tokenised.

    Example:
        >>> prepare_labels(MemoryKG(CONTRACT_TRIPLES), tok)                # doctest: +SKIP
        31
    """
    pt = path_tokenizer(tokenizer)
    before = pt.tokenized
    rels = kg.all_relations()
    pt.add([*rels, *(INVERSE_PREFIX + r for r in rels)])
    room = pt.max_labels - len(pt.labels)
    chunk: list[str] = []
    for entity, _ in kg.iter_labels():
        if room <= 0:
            break
        chunk.append(entity)
        room -= 1
        if len(chunk) >= batch:
            pt.add(chunk)
            chunk = []
    pt.add(chunk)
    return pt.tokenized - before


def _fill(
    trie: KGTrie,
    texts: Sequence[str],
    seqs: Sequence[tuple[int, ...]],
    body_len: Sequence[int],
    parents: Sequence[int],
) -> None:
    """Insert sentences in order, as :meth:`KGTrie._insert` does, walking a composed sentence on from
    the node its parent path's body reached (that body starts its own and was inserted before it)."""
    root = trie.root
    n_nodes = trie._nodes
    at_body: list[tuple[dict[int, Any], int] | None] = [None] * len(seqs)
    for i, (text, seq, blen, parent) in enumerate(zip(texts, seqs, body_len, parents, strict=True)):
        if not seq:
            continue
        node, pos = root, 0
        if blen >= 0 and parent >= 0:
            node, pos = at_body[parent] or (root, 0)
        if blen >= 0:
            node, made = walk_ids(node, seq[pos:blen])
            n_nodes += made
            at_body[i] = (node, blen)
            pos = blen
        node, made = walk_ids(node, seq[pos:])
        n_nodes += made
        trie._end_at(node, seq, text)
    trie._nodes = n_nodes
