"""The ``KnowledgeGraph`` logic shared by ``RdfKG`` and ``SparqlKG``: :class:`SparqlBackedKG` runs the
queries of :mod:`kg_agents.kg._query_builders` through two primitives and turns the rows a backend
returns into :class:`~kg_agents.kg.base.Triple` s (with an LRU cache, paging and caps).

The query builders, the row types and the read-only check are re-exported here.
"""

from __future__ import annotations

import contextvars
import threading
from collections import Counter, OrderedDict
from collections.abc import Hashable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from kg_agents._lru import LRU, MISSING
from kg_agents.errors import EntityNotFound, InvalidTermError
from kg_agents.kg import base
from kg_agents.kg._query_builders import (
    Node,
    Row,
    all_relations_query,
    chain_ends_query,
    chain_witness_query,
    check_read_only,
    count_query,
    degree_query,
    edge_count_query,
    edge_key,
    edge_side_query,
    has_entity_query,
    has_triple_query,
    has_triples_query,
    inverse_sides,
    label_page_query,
    labels_many_query,
    labels_query,
    literals_query,
    neighbors_query,
    page_query,
    query_form,
    relations_many_query,
    relations_query,
    triple_page_query,
)
from kg_agents.kg._query_chains import ChainQueryMixin
from kg_agents.kg.base import Direction, Triple, TripleList, check_direction, check_limit
from kg_agents.kg.profiles import Profile
from kg_agents.kg.terms import iri

__all__ = [
    "Node",
    "Row",
    "SparqlBackedKG",
    "all_relations_query",
    "chain_ends_query",
    "chain_witness_query",
    "check_read_only",
    "count_query",
    "degree_query",
    "edge_count_query",
    "edge_key",
    "edge_side_query",
    "has_entity_query",
    "has_triple_query",
    "has_triples_query",
    "inverse_sides",
    "label_page_query",
    "labels_many_query",
    "labels_query",
    "literals_query",
    "neighbors_query",
    "page_query",
    "query_form",
    "relations_many_query",
    "relations_query",
    "triple_page_query",
]


class SparqlBackedKG(ChainQueryMixin, base.KnowledgeGraph):
    """``KnowledgeGraph`` methods written once over two primitives, ``_select`` and ``_ask``.

    Subclasses set ``name``, ``profile``, ``batch_size`` and implement ``_select(query) -> list[Row]``,
    ``_ask(query) -> bool`` and ``fingerprint()``.
    """

    name: str
    profile: Profile
    #: chain queries run as one SPARQL query in the engine (``kg_agents.kg.base.joins_in_engine``)
    joins_in_engine: bool = True
    batch_size: int = 256
    #: ``neighbors_many`` batches in flight at once, each on its own thread (1: one after another).
    parallel_requests: int = 1
    #: Ends per :meth:`chain_witnesses` query and triples per :meth:`has_triples` query: one ``VALUES``
    #: block, cheap to compile at any size, unlike ``neighbors_many``'s subquery per entity.
    values_batch_size: int = 128
    #: Labels read ahead: the entities met in neighbour lists (the last this many, oldest dropped) wait
    #: for their labels; the first ``label`` asked of one reads the labels of those met after it with
    #: it, ``values_batch_size`` in one query. 0 (here: an in-process store has no round trip to save)
    #: reads each label alone.
    readahead: int = 0
    #: A batch of limited neighbour lists is read first as one ``VALUES`` block, and only the entities
    #: past the limit with a subquery each (:meth:`_values_first`); False: the subqueries only.
    values_first: bool = False
    #: The most rows that block may bring: a batch with a hub in it fills it, and is read again with
    #: the subqueries, so this is what such a batch costs in extra rows.
    values_rows: int = 1000
    max_features: int = 1000
    label_page_size: int = 5000
    #: The most edges a neighbour list, and the most ends a ``chain_ends``, holds whatever the limit asked
    #: (``truncated`` says when it cut); None: no cap.
    max_neighbors: int | None = None
    #: The most rows one request asks for: a longer neighbour list or ``chain_ends`` is read in pages of
    #: this many (``ORDER BY``, ``LIMIT``, ``OFFSET``); None: one request.
    page_size: int | None = None
    max_relations: int = 100_000
    #: Edges per request of :meth:`iter_triples` (Virtuoso answers at most 10,000 rows by default).
    edge_page_size: int = 10_000

    def __init__(self, *, cache_size: int = 10_000, ordered: bool = False) -> None:
        self._cache: LRU[Hashable, Any] = LRU(cache_size)
        self.ordered = bool(ordered)
        # the entities met in neighbour lists whose labels are not read yet, oldest first
        self._ahead: OrderedDict[str, None] = OrderedDict()
        self._ahead_lock = threading.Lock()

    # subclasses --------------------------------------------------------------
    def _select(self, query: str) -> list[Row]:  # pragma: no cover - abstract
        raise NotImplementedError

    def _ask(self, query: str) -> bool:  # pragma: no cover - abstract
        raise NotImplementedError

    # helpers -----------------------------------------------------------------
    def _eterm(self, entity: str) -> str | None:
        try:
            return self.profile.entity_term(entity)
        except InvalidTermError:
            return None

    def _rterm(self, relation: str) -> str | None:
        try:
            return self.profile.relation_term(relation)
        except InvalidTermError:
            return None

    def _capped(self, limit: int | None) -> int | None:
        """``limit`` lowered to ``max_neighbors`` (which also stands for no limit)."""
        cap = self.max_neighbors
        return limit if cap is None else (cap if limit is None else min(limit, cap))

    def _paged(self, limit: int | None) -> bool:
        return limit is not None and self.page_size is not None and limit + 1 > self.page_size

    def _pages(self, query: str, order: str, want: int) -> list[Row]:
        """At most ``want`` rows of ``query``, ``page_size`` per request, until a page comes back short."""
        size = max(1, int(self.page_size or want))
        rows: list[Row] = []
        offset = 0
        while len(rows) < want:
            n = min(size, want - len(rows))
            page = self._select(page_query(query, order, n, offset))
            rows.extend(page)
            offset += n
            if len(page) < n:
                break
        return rows

    def _cached(self, key: Hashable, compute: Any) -> Any:
        hit = self._cache.get(key)
        if hit is not MISSING:
            return hit
        value = compute()
        self._cache.put(key, value)
        return value

    def clear_cache(self) -> None:
        """Forget cached neighbour and label results."""
        self._cache.clear()
        with self._ahead_lock:
            self._ahead.clear()

    @property
    def cache_info(self) -> dict[str, int]:
        """Cache hits, misses and current size."""
        return {"hits": self._cache.hits, "misses": self._cache.misses, "size": len(self._cache)}

    # protocol ----------------------------------------------------------------
    def has_entity(self, entity: str) -> bool:
        term = self._eterm(entity)
        if term is None:
            return False
        return bool(self._cached(("has", entity), lambda: self._ask(has_entity_query(term))))

    def _met(self, triples: Iterable[Triple]) -> None:
        """Note the entities of ``triples`` (they are stored) for :meth:`_labels` to read ahead (their
        terms are rendered only when read: a trie's thousands of entities cost a dict insert each)."""
        size = self.readahead
        if size <= 0:
            return
        met = list(dict.fromkeys(e for t in triples for e in (t.head, t.tail)))[-size:]
        with self._ahead_lock:
            ahead = self._ahead
            ahead.update(dict.fromkeys(met))
            while len(ahead) > size:
                ahead.popitem(last=False)

    def _ahead_batch(self, entity: str) -> dict[str, str]:
        """``entity`` and the entities met after it whose labels are not read, at most
        ``values_batch_size`` (id -> IRI term), taken off the read-ahead; empty when ``entity`` is not
        on it."""
        with self._ahead_lock:
            if entity not in self._ahead:
                return {}
            picked: list[str] = []
            started = False
            for e in self._ahead:
                started = started or e == entity
                if started and ("labels", e) not in self._cache:
                    picked.append(e)
                    if len(picked) >= max(1, self.values_batch_size):
                        break
            for e in picked:
                del self._ahead[e]
        batch = {e: self._eterm(e) for e in picked}
        return {e: t for e, t in batch.items() if t is not None and t.startswith("<")}

    def _read_labels(self, chunk: dict[str, str], *, stored: bool = False) -> dict[str, list[Node]]:
        """The labels of ``chunk``'s entities (id -> term) in one query, each entity's best first, put
        in the cache; empty when the rows pass ``page_size`` (or 50 an entity). ``stored``: the
        entities are known to be in the graph, so one without a label is not asked about again."""
        preds = [iri(p) for p in self.profile.label_predicates]
        rank = {p: i for i, p in enumerate(self.profile.label_predicates)}
        cap = min(50 * len(chunk), self.page_size or 5_000)
        rows = self._select(labels_many_query(list(chunk.values()), preds, cap + 1))
        if len(rows) > cap:
            return {}  # cut short: label() reads each of these alone
        by_iri = {t[1:-1]: e for e, t in chunk.items()}
        got: dict[str, list[Row]] = {e: [] for e in chunk}
        for r in rows:
            owner = by_iri.get(r["e"].value)
            if owner is not None:
                got[owner].append(r)
        out: dict[str, list[Node]] = {}
        for e, found in got.items():
            found.sort(key=lambda r: (rank.get(r["p"].value, 99), self._lang_rank(r["l"])))
            out[e] = [r["l"] for r in found]
            self._cache.put(("labels", e), out[e])
            if stored and not found:
                self._cache.put(("has", e), True)
        return out

    def _labels(self, entity: str) -> list[Node]:
        term = self._eterm(entity)
        if term is None:
            return []
        preds = [iri(p) for p in self.profile.label_predicates]

        def compute() -> list[Node]:
            batch = self._ahead_batch(entity)
            if batch:
                got = self._read_labels(batch, stored=True)
                if entity in got:
                    return got[entity]
            rows = self._select(labels_query(term, preds))
            rank = {p: i for i, p in enumerate(self.profile.label_predicates)}
            rows.sort(key=lambda r: (rank.get(r["p"].value, 99), self._lang_rank(r["l"])))
            return [r["l"] for r in rows]

        return list(self._cached(("labels", entity), compute))

    def _lang_rank(self, node: Node) -> int:
        want = self.profile.label_lang
        if want is None:
            return 0 if not node.lang else 1
        if node.lang and node.lang.lower().split("-")[0] == want.lower():
            return 0
        return 1 if not node.lang else 2

    def labels_many(self, entities: Sequence[str]) -> list[str]:
        """:meth:`label` of each entity, in order: the labels of the entities not in the cache are read in
        one query per ``values_batch_size`` entities (a batch whose rows pass ``page_size``, or 50 an
        entity, is read one entity at a time). Raises :class:`EntityNotFound` for an unknown entity."""
        todo: dict[str, str] = {}
        for e in dict.fromkeys(entities):
            term = self._eterm(e)
            if term is not None and self._cache.get(("labels", e)) is MISSING:
                todo[e] = term
        items = list(todo.items())
        size = max(1, self.values_batch_size)
        for j in range(0, len(items), size):
            self._read_labels(dict(items[j : j + size]))
        return [self.label(e) for e in entities]

    def label(self, entity: str) -> str:
        """The entity's best label (its id when it has none). Raises :class:`EntityNotFound`."""
        labels = self._labels(entity)
        if labels:
            return labels[0].value
        if self.has_entity(entity):
            return entity
        raise EntityNotFound(entity)

    def features(self, entity: str) -> dict[str, str]:
        """``{"label": ..., <relation id>: <literal>, ...}``. Raises :class:`EntityNotFound`."""
        out = {"label": self.label(entity)}
        term = self._eterm(entity)
        assert term is not None  # label() raised otherwise
        label_preds = set(self.profile.label_predicates)
        for row in self._select(literals_query(term, self.max_features)):
            p = row["p"].value
            if p in label_preds:
                continue
            out.setdefault(self.profile.relation_id(p), row["v"].value)
        return out

    def relations(self, entity: str, direction: Direction = "out") -> list[str]:
        check_direction(direction)
        term = self._eterm(entity)
        if term is None:
            return []

        def compute() -> list[str]:
            rows = self._select(relations_query(term, direction))
            return [self.profile.relation_id(r["r"].value) for r in rows]

        return list(self._cached(("rels", entity, direction), compute))

    def relations_many(self, entities: Sequence[str], direction: Direction = "out") -> dict[str, list[str]]:
        """:meth:`relations` of each entity: those not in the cache read in one query per
        ``values_batch_size`` entities."""
        check_direction(direction)
        out: dict[str, list[str]] = {}
        todo: dict[str, str] = {}
        for e in dict.fromkeys(entities):
            hit = self._cache.get(("rels", e, direction))
            if hit is not MISSING:
                out[e] = list(hit)
            elif (term := self._eterm(e)) is None:
                out[e] = []
            else:
                todo[e] = term
        items = list(todo.items())
        size = max(1, self.values_batch_size)
        for j in range(0, len(items), size):
            chunk = dict(items[j : j + size])
            by_iri = {t[1:-1]: e for e, t in chunk.items()}
            found: dict[str, set[str]] = {e: set() for e in chunk}
            for row in self._select(relations_many_query(list(chunk.values()), direction)):
                ent = by_iri.get(row["e"].value) if "e" in row and "r" in row else None
                if ent is not None:
                    found[ent].add(row["r"].value)
            for e, iris in found.items():
                rels = [self.profile.relation_id(r) for r in sorted(iris)]  # ``relations``' ORDER BY ?r
                self._cache.put(("rels", e, direction), rels)
                out[e] = rels
        return {e: list(out[e]) for e in dict.fromkeys(entities)}

    def neighbors_many(
        self,
        entities: Sequence[str],
        relation: str | None = None,
        direction: Direction = "out",
        limit: int | None = None,
    ) -> dict[str, TripleList]:
        """Edges of many entities; one query per ``batch_size`` uncached entities.

        With a ``limit``, it holds per entity and each list's ``truncated`` says whether it was hit.
        ``max_neighbors`` caps every list (a limit above it, or none, becomes it); a list longer than
        ``page_size`` is read in pages, one entity at a time.
        """
        check_direction(direction)
        check_limit(limit)
        limit = self._capped(limit)
        out: dict[str, TripleList] = {}
        rterm = None
        if relation is not None:
            rterm = self._rterm(relation)
        todo: dict[str, str] = {}
        for e in dict.fromkeys(entities):
            hit = self._cache.get(("nb", e, relation, direction, limit))
            if hit is not MISSING:
                out[e] = _copy(hit)
                continue
            term = self._eterm(e)
            if term is None or (relation is not None and rterm is None):
                out[e] = TripleList(total=0)
                continue
            todo[e] = term
        items = list(todo.items())
        i = 0
        while i < len(items):
            # batch_size is read for each wave of batches: a rejected batch (SparqlKG) may have
            # lowered it, during this call or another thread's; the next wave starts where this one ended
            size = max(1, self.batch_size)
            end = min(len(items), i + size * max(1, self.parallel_requests))
            wave = [items[j : j + size] for j in range(i, end, size)]
            for fetched in self._fetch_wave(wave, rterm, direction, limit):
                for e, tl in fetched.items():
                    self._cache.put(("nb", e, relation, direction, limit), tl)
                    out[e] = _copy(tl)
            i = end
        return {e: out[e] for e in dict.fromkeys(entities)}

    def _fetch_wave(
        self, wave: list[list[tuple[str, str]]], rterm: str | None, direction: Direction, limit: int | None
    ) -> list[dict[str, TripleList]]:
        """The batches of one wave, sent at once when there are several (each thread in a copy of the
        caller's context); the first error raised is raised once every batch has ended."""
        if len(wave) == 1:
            return [self._fetch_edges(wave[0], rterm, direction, limit)]
        with ThreadPoolExecutor(len(wave), thread_name_prefix="kg-agents-batch") as pool:
            futures = [
                pool.submit(contextvars.copy_context().run, self._fetch_edges, chunk, rterm, direction, limit)
                for chunk in wave
            ]
        return [f.result() for f in futures]

    def _fetch_edges(
        self, chunk: list[tuple[str, str]], rterm: str | None, direction: Direction, limit: int | None
    ) -> dict[str, TripleList]:
        if not self._paged(limit):
            return self._fetch_batch(chunk, rterm, direction, limit)
        # a read longer than a page: one page per entity in one request first; the entities it does
        # not finish (hubs) are read again, in pages
        got = self._fetch_batch(chunk, rterm, direction, self.page_size)
        for e, term in chunk:
            if got[e].truncated:
                got[e] = self._paged_edges(e, term, rterm, direction, int(limit))  # type: ignore[arg-type]
        return got

    def _fetch_batch(
        self, chunk: list[tuple[str, str]], rterm: str | None, direction: Direction, limit: int | None
    ) -> dict[str, TripleList]:
        by_iri = {term[1:-1]: e for e, term in chunk}
        rows = self._values_first(chunk, rterm, direction, limit)
        if rows is None:
            rows = self._select(
                neighbors_query([t for _, t in chunk], rterm, direction, limit, ordered=self.ordered)
            )
        outs: dict[str, list[tuple[str, str]]] = {e: [] for e, _ in chunk}
        ins: dict[str, list[tuple[str, str]]] = {e: [] for e, _ in chunk}
        for row in rows:
            e = by_iri.get(row["e"].value)
            if e is None:
                continue
            if "o" in row:
                outs[e].append((row["r"].value, row["o"].value))
            elif "s" in row:
                ins[e].append((row["r"].value, row["s"].value))
        rel_id, ent_id = self.profile.relation_id, self.profile.entity_id
        result: dict[str, TripleList] = {}
        for e, _ in chunk:
            # out-edges first, then in-edges, each by relation and other end (as MemoryKG orders them)
            triples = [Triple(e, rel_id(r), ent_id(o)) for r, o in sorted(outs[e])]
            triples += [Triple(ent_id(s_), rel_id(r), e) for r, s_ in sorted(ins[e])]
            if limit is not None and len(triples) > limit:
                result[e] = TripleList(triples[:limit], truncated=True, total=None)
            else:
                result[e] = TripleList(triples, truncated=False, total=len(triples))
            self._met(result[e])
        return result

    def _values_first(
        self, chunk: list[tuple[str, str]], rterm: str | None, direction: Direction, limit: int | None
    ) -> list[Row] | None:
        """A limited batch's rows read first as one ``VALUES`` block (no subquery per entity, which an
        engine such as Virtuoso compiles slowly), at most as many rows as the subqueries could give:
        the entities within ``limit`` keep these rows (all their edges: what the subqueries give them);
        the ones past it are read again with the per-entity subqueries, so every list is the one the
        subqueries alone would give. None (read it all the usual way) when ``values_first`` is off, the
        read has no limit or one entity, or the block came back full (``values_rows``, or fewer when
        ``page_size`` or the subqueries' own most is lower)."""
        if not self.values_first or limit is None or len(chunk) < 2:
            return None
        cap = min(len(chunk) * (limit + 1), self.values_rows, int(self.page_size or self.values_rows))
        rows = self._select(
            f"{neighbors_query([t for _, t in chunk], rterm, direction, None)} LIMIT {cap + 1}"
        )
        if len(rows) > cap:
            return None
        count: Counter[str] = Counter(row["e"].value for row in rows)
        over = [(e, t) for e, t in chunk if count[t[1:-1]] > limit]
        if not over:
            return rows
        past = {t[1:-1] for _, t in over}
        kept = [row for row in rows if row["e"].value not in past]
        return kept + self._select(
            neighbors_query([t for _, t in over], rterm, direction, limit, ordered=self.ordered)
        )

    def _paged_edges(
        self, e: str, term: str, rterm: str | None, direction: Direction, limit: int
    ) -> TripleList:
        """One entity's edges in pages: out-edges, then in-edges, each by relation and other end."""
        rel_id, ent_id = self.profile.relation_id, self.profile.entity_id
        triples: list[Triple] = []
        for inverse in inverse_sides(direction):
            want = limit + 1 - len(triples)  # one more than the limit tells a cut
            if want <= 0:
                break
            v = "s" if inverse else "o"
            for row in self._pages(edge_side_query(term, rterm, inverse), f"?r ?{v}", want):
                r, x = rel_id(row["r"].value), ent_id(row[v].value)
                triples.append(Triple(x, r, e) if inverse else Triple(e, r, x))
        self._met(triples[:limit])
        if len(triples) > limit:
            return TripleList(triples[:limit], truncated=True, total=None)
        return TripleList(triples, truncated=False, total=len(triples))

    def degree(self, entity: str, relation: str | None = None, direction: Direction = "out") -> int:
        check_direction(direction)
        term = self._eterm(entity)
        rterm = self._rterm(relation) if relation is not None else None
        if term is None or (relation is not None and rterm is None):
            return 0

        def compute() -> int:
            rows = self._select(degree_query(term, rterm, direction))
            return int(rows[0]["n"].value) if rows else 0

        return int(self._cached(("deg", entity, relation, direction), compute))

    def has_triple(self, head: str, relation: str, tail: str) -> bool:
        h, r, t = self._eterm(head), self._rterm(relation), self._eterm(tail)
        if h is None or r is None or t is None:
            return False
        return bool(self._cached(("ask", head, relation, tail), lambda: self._ask(has_triple_query(h, r, t))))

    def has_triples(self, triples: Sequence[Triple]) -> list[bool]:
        """Whether each triple is stored, as :meth:`has_triple` says: the cached answers from the cache,
        the others in one ``SELECT`` per ``values_batch_size`` distinct triples."""
        out: dict[int, bool] = {}
        todo: dict[tuple[str, str, str], list[int]] = {}
        for i, t in enumerate(triples):
            hit = self._cache.get(("ask", t.head, t.relation, t.tail))
            if hit is not MISSING:
                out[i] = bool(hit)
                continue
            terms = (self._eterm(t.head), self._rterm(t.relation), self._eterm(t.tail))
            if any(x is None for x in terms):
                out[i] = False
            elif all(x.startswith("<") for x in terms):  # type: ignore[union-attr]
                todo.setdefault(terms, []).append(i)  # type: ignore[arg-type]
            else:  # a literal comes back in another form than its term: asked alone
                out[i] = self.has_triple(t.head, t.relation, t.tail)
        items = list(todo.items())
        size = max(1, self.values_batch_size)
        for j in range(0, len(items), size):
            chunk = items[j : j + size]
            rows = self._select(has_triples_query([k for k, _ in chunk]))
            found = {(r["h"].value, r["r"].value, r["t"].value) for r in rows if {"h", "r", "t"} <= r.keys()}
            for (h, r, o), where in chunk:
                ok = (h[1:-1], r[1:-1], o[1:-1]) in found
                for i in where:
                    t = triples[i]
                    self._cache.put(("ask", t.head, t.relation, t.tail), ok)
                    out[i] = ok
        return [out[i] for i in range(len(triples))]

    def all_relations(self) -> list[str]:
        def compute() -> list[str]:
            rows = self._select(all_relations_query(self.max_relations))
            return [self.profile.relation_id(r["r"].value) for r in rows]

        return list(self._cached(("allrels",), compute))

    def iter_labels(self) -> Iterator[tuple[str, str]]:
        """Every ``(entity id, label)`` pair, one per labelled entity, fetched in pages.

        Entities with no label are not listed (a remote store cannot list them cheaply).
        """
        preds = [iri(p) for p in self.profile.label_predicates]
        rank = {p: i for i, p in enumerate(self.profile.label_predicates)}
        page_size = self.label_page_size
        offset = 0
        current: str | None = None
        best: tuple[tuple[int, int], str] | None = None
        while True:
            rows = self._select(label_page_query(preds, self.profile.label_lang, page_size, offset))
            for row in rows:
                e, lab = row["e"].value, row["l"]
                if e != current:
                    if current is not None and best is not None:
                        yield self.profile.entity_id(current), best[1]
                    current, best = e, None
                key = (rank.get(row["p"].value, 99), self._lang_rank(lab))
                if best is None or key < best[0]:
                    best = (key, lab.value)
            if len(rows) < page_size:
                break
            offset += page_size
        if current is not None and best is not None:
            yield self.profile.entity_id(current), best[1]

    def count_edges(self) -> int:
        """The number of edges (triples whose subject and object are IRIs), one ``COUNT`` query: what
        :meth:`iter_triples` yields."""
        rows = self._select(edge_count_query())
        return int(rows[0]["n"].value) if rows else 0

    def iter_triples(self) -> Iterator[Triple]:
        """Every edge as a :class:`~kg_agents.kg.base.Triple` of ids, read in pages of
        ``edge_page_size`` (10,000) by keyset paging (:func:`triple_page_query`): one request per page,
        each ordered by the edge's IRIs, so a store that does not change between the pages yields every
        edge once. Literal-valued triples and blank nodes are left out.
        """
        rel_id, ent_id = self.profile.relation_id, self.profile.entity_id
        after: str | None = None
        while True:
            rows = self._select(triple_page_query(after, self.edge_page_size))
            for row in rows:
                yield Triple(ent_id(row["s"].value), rel_id(row["p"].value), ent_id(row["o"].value))
            if len(rows) < self.edge_page_size:
                return
            last = rows[-1]
            after = edge_key(last["s"].value, last["p"].value, last["o"].value)


def _copy(tl: TripleList) -> TripleList:
    return TripleList(tl, truncated=tl.truncated, total=tl.total)
