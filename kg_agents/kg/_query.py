"""SPARQL query building and the ``KnowledgeGraph`` logic shared by ``RdfKG`` and ``SparqlKG``.

Every query is a ``SELECT`` or ``ASK`` whose terms are bound in ``VALUES`` blocks, rendered by
:mod:`kg_agents.kg.terms` through a :class:`~kg_agents.kg.profiles.Profile`. The query builders are
pure functions (tested for hostile input in ``tests/test_kg_terms.py``); :class:`SparqlBackedKG`
turns the rows a backend returns into :class:`~kg_agents.kg.base.Triple` s.

Edges are triples whose object is an IRI; literal-valued triples are features, and triples whose
predicate is a label predicate give labels. Blank nodes are not entities.
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from collections.abc import Hashable, Iterator, Sequence
from typing import Any, NamedTuple

from kg_agents.errors import EntityNotFound, InvalidTermError, KGError
from kg_agents.kg.base import Direction, Hop, Path, Triple, TripleList, check_direction, parse_relation_path
from kg_agents.kg.profiles import Profile
from kg_agents.kg.terms import iri, literal


class Node(NamedTuple):
    """One RDF term of a result row: ``kind`` is ``uri``, ``literal`` or ``bnode``."""

    kind: str
    value: str
    lang: str | None = None


Row = dict[str, Node]

_PROLOGUE = re.compile(r"\A(?:\s*(?:PREFIX\s+[^\s:]*:\s*<[^>]*>|BASE\s+<[^>]*>))*\s*", re.IGNORECASE)
_READ_FORMS = ("SELECT", "ASK")


def query_form(query: str) -> str:
    """The form keyword of a query (``SELECT``, ``ASK``, ``INSERT``...), after any prologue."""
    rest = query[_PROLOGUE.match(query).end() :]  # type: ignore[union-attr]
    m = re.match(r"[A-Za-z]+", rest)
    return m.group(0).upper() if m else ""


def check_read_only(query: str) -> str:
    """Return ``query`` when it is a SELECT or ASK query; raise :class:`KGError` otherwise.

    Stores call this before sending anything, so a read-only store can never send an update.

    Example:
        >>> check_read_only("ASK { ?s ?p ?o }")
        'ASK { ?s ?p ?o }'
    """
    form = query_form(query)
    if form not in _READ_FORMS:
        raise KGError(f"refusing to send a {form or 'non-query'} request: stores are read-only")
    return query


# ---------------------------------------------------------------------- query builders
def _values(var: str, terms: Sequence[str]) -> str:
    return f"VALUES ?{var} {{ {' '.join(terms)} }}"


def _side(entities: Sequence[str], relation: str | None, inverse: bool) -> str:
    """One direction's group pattern: ``?e ?r ?o`` (out) or ``?s ?r ?e`` (in), IRIs only."""
    ev = _values("e", entities)
    rv = (" " + _values("r", [relation])) if relation is not None else ""
    if inverse:
        # a subject is an IRI or a blank node; Virtuoso answers !isBlank ~5x faster than isIRI here
        return f"{{ {ev}{rv} ?s ?r ?e . FILTER(!isBlank(?s)) }}"
    return f"{{ {ev}{rv} ?e ?r ?o . FILTER(isIRI(?o)) }}"


def _sides(direction: Direction) -> tuple[bool, ...]:
    return {"out": (False,), "in": (True,), "both": (False, True)}[direction]


def _edge_pattern(entities: Sequence[str], relation: str | None, direction: Direction) -> str:
    """A group pattern binding ``?e`` (given), ``?r``, and ``?o`` for out-edges or ``?s`` for in-edges.

    The direction is told by which variable is bound, not by a ``BIND`` constant: Virtuoso 7.2
    rejects ``BIND`` inside ``UNION`` branches here (SP031) and mis-evaluates constant ``VALUES``
    markers inside ``UNION``-ed subqueries.
    """
    return " UNION ".join(_side(entities, relation, inv) for inv in _sides(direction))


def neighbors_query(
    entities: Sequence[str],
    relation: str | None,
    direction: Direction,
    limit: int | None,
    *,
    ordered: bool = False,
) -> str:
    """One query for the edges of every entity in ``entities`` (rendered IRIs).

    With a ``limit``, each entity and direction gets its own subquery ``LIMIT limit+1`` (with
    ``ordered``, ``ORDER BY ?r ?o`` first) and the subqueries are joined with ``UNION``: the limit is
    exact per entity (a hub cannot starve the others) and the extra row tells when it was cut.
    Without a limit, one ``VALUES`` block holds every entity.

    ``ordered`` picks *which* edges a cut keeps (the first by relation and IRI, the same on every
    store) at the price of sorting all of a hub's edges on the server (Oxigraph: ~0.8 s for 4,000
    edges, against ~5 ms unordered); unordered, the store's index order decides.

    Returns rows binding ``?e ?r`` and ``?o`` (an out-edge ``e r o``) or ``?s`` (an in-edge ``s r e``).
    """
    if not entities:
        raise ValueError("no entities")
    if limit is None:
        return f"SELECT ?e ?r ?o ?s WHERE {{ {_edge_pattern(entities, relation, direction)} }}"
    parts = []
    for e in entities:
        for inv in _sides(direction):
            v = "s" if inv else "o"
            group = _side([e], relation, inv)
            order = f"ORDER BY ?r ?{v} " if ordered else ""
            parts.append(f"{{ SELECT ?e ?r ?{v} WHERE {group} {order}LIMIT {int(limit) + 1} }}")
    return "SELECT ?e ?r ?o ?s WHERE { " + " UNION ".join(parts) + " }"


def _chain_pattern(topic: str, steps: Sequence[tuple[str, bool]]) -> str:
    """The walk ``?x0`` (the topic) ``-> ?x1 -> ... -> ?xn`` along ``steps`` (rendered relation, inverse):
    every term bound in one ``VALUES`` row; each node an entity (an IRI object, a subject that is no
    blank node) other than the topic."""
    names = " ".join(["?x0", *(f"?r{i}" for i in range(1, len(steps) + 1))])
    terms = " ".join([topic, *(r for r, _ in steps)])
    parts = [f"VALUES ({names}) {{ ({terms}) }}"]
    for i, (_, inverse) in enumerate(steps, 1):
        if inverse:
            parts.append(f"?x{i} ?r{i} ?x{i - 1} . FILTER(!isBlank(?x{i}) && ?x{i} != ?x0)")
        else:
            parts.append(f"?x{i - 1} ?r{i} ?x{i} . FILTER(isIRI(?x{i}) && ?x{i} != ?x0)")
    return " ".join(parts)


def chain_ends_query(topic: str, steps: Sequence[tuple[str, bool]], limit: int | None) -> str:
    """The distinct ends ``?x{n}`` of the walks from ``topic`` along ``steps`` (rendered terms; ``LIMIT
    limit+1`` so that the extra row tells a cut), one query: the engine joins the hops."""
    if not steps:
        raise ValueError("no steps")
    tail = "" if limit is None else f" LIMIT {int(limit) + 1}"
    return f"SELECT DISTINCT ?x{len(steps)} WHERE {{ {_chain_pattern(topic, steps)} }}{tail}"


def chain_witness_query(topic: str, steps: Sequence[tuple[str, bool]], ends: Sequence[str]) -> str:
    """Each of ``ends`` (rendered IRIs) that a walk from ``topic`` along ``steps`` reaches, with the walk's
    inner nodes ``?w`` (their IRIs joined by spaces, the least such string: one whole walk, the same on
    every run; none for a walk of one hop)."""
    if not steps:
        raise ValueError("no steps")
    n = len(steps)
    if n == 1:
        return f"SELECT DISTINCT ?x1 WHERE {{ {_values('x1', ends)} {_chain_pattern(topic, steps)} }}"
    inner = ", ".join(
        part for i in range(1, n) for part in ((f"STR(?x{i})",) if i == 1 else ('" "', f"STR(?x{i})"))
    )
    return (
        f"SELECT ?x{n} (MIN(CONCAT({inner})) AS ?w) WHERE {{ {_values(f'x{n}', ends)} "
        f"{_chain_pattern(topic, steps)} }} GROUP BY ?x{n}"
    )


def edge_side_query(entity: str, relation: str | None, inverse: bool) -> str:
    """One direction's edges of one entity (rendered terms), unordered, unlimited: for :func:`page_query`."""
    v = "s" if inverse else "o"
    return f"SELECT ?e ?r ?{v} WHERE {_side([entity], relation, inverse)}"


def page_query(query: str, order: str, size: int, offset: int) -> str:
    """One page of a ``SELECT`` without a solution modifier: ``ORDER BY order`` (so that the pages
    follow each other) ``LIMIT size OFFSET offset``."""
    return f"{query} ORDER BY {order} LIMIT {int(size)} OFFSET {int(offset)}"


def degree_query(entity: str, relation: str | None, direction: Direction) -> str:
    """``SELECT (COUNT(*) AS ?n)`` over the edges of one entity."""
    return f"SELECT (COUNT(*) AS ?n) WHERE {{ {_edge_pattern([entity], relation, direction)} }}"


def relations_query(entity: str, direction: Direction) -> str:
    """The distinct relations on the edges of one entity."""
    return f"SELECT DISTINCT ?r WHERE {{ {_edge_pattern([entity], None, direction)} }} ORDER BY ?r"


def has_triple_query(head: str, relation: str, tail: str) -> str:
    """``ASK`` whether the triple is stored."""
    return f"ASK {{ VALUES (?h ?r ?t) {{ ({head} {relation} {tail}) }} ?h ?r ?t }}"


def has_entity_query(entity: str) -> str:
    """``ASK`` whether the IRI occurs as a subject or object."""
    ev = _values("e", [entity])
    return f"ASK {{ {{ {ev} ?e ?p ?x }} UNION {{ {ev} ?x ?p ?e }} }}"


def labels_query(entity: str, predicates: Sequence[str], limit: int = 50) -> str:
    """The literal labels of one entity."""
    return (
        f"SELECT ?p ?l WHERE {{ {_values('e', [entity])} {_values('p', predicates)} "
        f"?e ?p ?l . FILTER(isLiteral(?l)) }} LIMIT {int(limit)}"
    )


def literals_query(entity: str, limit: int) -> str:
    """The literal-valued properties of one entity."""
    return (
        f"SELECT ?p ?v WHERE {{ {_values('e', [entity])} ?e ?p ?v . FILTER(isLiteral(?v)) }} "
        f"LIMIT {int(limit)}"
    )


def all_relations_query(limit: int) -> str:
    """The distinct predicates of edges (IRI objects)."""
    return f"SELECT DISTINCT ?r WHERE {{ ?s ?r ?o . FILTER(isIRI(?o)) }} ORDER BY ?r LIMIT {int(limit)}"


def label_page_query(predicates: Sequence[str], lang: str | None, limit: int, offset: int) -> str:
    """One page of ``(?e, ?p, ?l)`` label rows, in a stable order."""
    lang_filter = ""
    if lang is not None:
        from kg_agents.kg.terms import literal

        lang_filter = f' FILTER(lang(?l) = "" || langMatches(lang(?l), {literal(lang)}))'
    return (
        f"SELECT ?e ?p ?l WHERE {{ {_values('p', predicates)} ?e ?p ?l . FILTER(isIRI(?e) && isLiteral(?l))"
        f"{lang_filter} }} ORDER BY ?e ?p ?l LIMIT {int(limit)} OFFSET {int(offset)}"
    )


def count_query() -> str:
    """The number of triples."""
    return "SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }"


def edge_count_query() -> str:
    """The number of edges (triples whose subject and object are IRIs)."""
    return "SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o . FILTER(isIRI(?s) && isIRI(?o)) }"


#: The key a page of :func:`triple_page_query` is ordered by: the three IRIs joined by spaces (an IRI
#: holds no space, so the key names one triple).
_EDGE_KEY = 'CONCAT(STR(?s), " ", STR(?p), " ", STR(?o))'


def edge_key(subject: str, predicate: str, obj: str) -> str:
    """The key of an edge, as :func:`triple_page_query` orders them (the IRIs joined by spaces)."""
    return f"{subject} {predicate} {obj}"


def triple_page_query(after: str | None, limit: int) -> str:
    """One page of edges ``?s ?p ?o`` (IRI subject and object), the first ``limit`` whose key
    (:func:`edge_key`) comes after ``after`` (None: from the first), in the order of that key.

    Keyset paging: each page starts after the last key of the one before, so no ``OFFSET`` is needed
    (Virtuoso refuses to sort past 10,000 rows of an ``OFFSET``) and no edge is read twice or missed.
    """
    cond = f" && ?k > {literal(after)}" if after is not None else ""
    return (
        f"SELECT ?s ?p ?o WHERE {{ ?s ?p ?o . BIND({_EDGE_KEY} AS ?k) "
        f"FILTER(isIRI(?s) && isIRI(?o){cond}) }} ORDER BY ?k LIMIT {int(limit)}"
    )


# ---------------------------------------------------------------------- the shared store logic
class _LRU:
    """A small thread-safe LRU cache (``maxsize=0`` disables it)."""

    def __init__(self, maxsize: int) -> None:
        self.maxsize = int(maxsize)
        self._data: OrderedDict[Hashable, Any] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    _MISSING = object()

    def get(self, key: Hashable) -> Any:
        with self._lock:
            if key in self._data:
                self._data.move_to_end(key)
                self.hits += 1
                return self._data[key]
            self.misses += 1
            return self._MISSING

    def put(self, key: Hashable, value: Any) -> None:
        if self.maxsize <= 0:
            return
        with self._lock:
            self._data[key] = value
            self._data.move_to_end(key)
            while len(self._data) > self.maxsize:
                self._data.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._data.clear()


def _check_limit(limit: int | None) -> None:
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 0):
        raise ValueError(f"limit must be a non-negative int or None, got {limit!r}")


class SparqlBackedKG:
    """``KnowledgeGraph`` methods written once over two primitives, ``_select`` and ``_ask``.

    Subclasses set ``name``, ``profile``, ``batch_size`` and implement ``_select(query) -> list[Row]``,
    ``_ask(query) -> bool`` and ``fingerprint()``.
    """

    name: str
    profile: Profile
    #: chain queries run as one SPARQL query in the engine (``kg_agents.kg.base.joins_in_engine``)
    joins_in_engine: bool = True
    batch_size: int = 256
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
        self._cache = _LRU(cache_size)
        self.ordered = bool(ordered)

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
        if hit is not _LRU._MISSING:
            return hit
        value = compute()
        self._cache.put(key, value)
        return value

    def clear_cache(self) -> None:
        """Forget cached neighbour and label results."""
        self._cache.clear()

    @property
    def cache_info(self) -> dict[str, int]:
        """Cache hits, misses and current size."""
        return {"hits": self._cache.hits, "misses": self._cache.misses, "size": len(self._cache._data)}

    # protocol ----------------------------------------------------------------
    def has_entity(self, entity: str) -> bool:
        term = self._eterm(entity)
        if term is None:
            return False
        return bool(self._cached(("has", entity), lambda: self._ask(has_entity_query(term))))

    def _labels(self, entity: str) -> list[Node]:
        term = self._eterm(entity)
        if term is None:
            return []
        preds = [iri(p) for p in self.profile.label_predicates]

        def compute() -> list[Node]:
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

    def neighbors(
        self,
        entity: str,
        relation: str | None = None,
        direction: Direction = "out",
        limit: int | None = None,
    ) -> TripleList:
        return self.neighbors_many([entity], relation, direction, limit)[entity]

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
        _check_limit(limit)
        limit = self._capped(limit)
        out: dict[str, TripleList] = {}
        rterm = None
        if relation is not None:
            rterm = self._rterm(relation)
        todo: dict[str, str] = {}
        for e in dict.fromkeys(entities):
            hit = self._cache.get(("nb", e, relation, direction, limit))
            if hit is not _LRU._MISSING:
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
            # batch_size is read for each batch: a rejected batch (SparqlKG) may have lowered it,
            # during this call or another thread's; the next batch starts where this one ended
            chunk = items[i : i + max(1, self.batch_size)]
            fetched = self._fetch_edges(chunk, rterm, direction, limit)
            for e, tl in fetched.items():
                self._cache.put(("nb", e, relation, direction, limit), tl)
                out[e] = _copy(tl)
            i += len(chunk)
        return {e: out[e] for e in dict.fromkeys(entities)}

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
        return result

    def _paged_edges(
        self, e: str, term: str, rterm: str | None, direction: Direction, limit: int
    ) -> TripleList:
        """One entity's edges in pages: out-edges, then in-edges, each by relation and other end."""
        rel_id, ent_id = self.profile.relation_id, self.profile.entity_id
        triples: list[Triple] = []
        for inverse in _sides(direction):
            want = limit + 1 - len(triples)  # one more than the limit tells a cut
            if want <= 0:
                break
            v = "s" if inverse else "o"
            for row in self._pages(edge_side_query(term, rterm, inverse), f"?r ?{v}", want):
                r, x = rel_id(row["r"].value), ent_id(row[v].value)
                triples.append(Triple(x, r, e) if inverse else Triple(e, r, x))
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

    # relation paths (ChainQueries) ------------------------------------------
    def _chain_terms(
        self, topic: str, relation_path: Sequence[str]
    ) -> tuple[str, list[tuple[str, bool]]] | None:
        steps = parse_relation_path(relation_path)
        term = self._eterm(topic)
        rterms = [(self._rterm(r), inv) for r, inv in steps]
        if term is None or any(r is None for r, _ in rterms):
            return None
        return term, rterms  # type: ignore[return-value]

    def chain_ends(
        self, topic: str, relation_path: Sequence[str], *, limit: int | None = None
    ) -> tuple[list[str], bool]:
        """The entities ``relation_path`` reaches from ``topic``, at most ``limit`` (and ``max_neighbors``),
        and whether there were more: one ``SELECT DISTINCT .. LIMIT limit+1``, or pages of ``page_size``
        (see :class:`~kg_agents.kg.base.ChainQueries`)."""
        _check_limit(limit)
        limit = self._capped(limit)
        found = self._chain_terms(topic, relation_path)
        if found is None:
            return [], False
        term, steps = found

        def compute() -> tuple[list[str], bool]:
            var = f"x{len(steps)}"
            paged = self._paged(limit)
            rows = self._select(chain_ends_query(term, steps, self.page_size if paged else limit))
            if paged and len(rows) > int(self.page_size):  # type: ignore[arg-type]
                # more than a page: read again, in pages
                rows = self._pages(chain_ends_query(term, steps, None), f"?{var}", int(limit) + 1)  # type: ignore[arg-type]
            ends = list(dict.fromkeys(self.profile.entity_id(r[var].value) for r in rows if var in r))
            if limit is not None and len(ends) > limit:
                return ends[:limit], True
            return ends, False

        ends, cut = self._cached(("chain", topic, tuple(relation_path), limit), compute)
        return list(ends), bool(cut)

    def chain_witnesses(
        self, topic: str, relation_path: Sequence[str], ends: Sequence[str]
    ) -> dict[str, Path]:
        """One walk from ``topic`` along ``relation_path`` to each of ``ends`` it reaches: one grouped
        query per ``batch_size`` ends."""
        rel_steps = parse_relation_path(relation_path)
        found = self._chain_terms(topic, relation_path)
        out: dict[str, Path] = {}
        if found is None:
            return out
        term, steps = found
        targets = {e: t for e in dict.fromkeys(ends) if e != topic and (t := self._eterm(e)) is not None}
        items = list(targets.items())
        var = f"x{len(steps)}"
        for i in range(0, len(items), max(1, self.batch_size)):
            chunk = dict(items[i : i + max(1, self.batch_size)])
            by_iri = {t[1:-1]: e for e, t in chunk.items()}
            for row in self._select(chain_witness_query(term, steps, list(chunk.values()))):
                end = by_iri.get(row[var].value) if var in row else None
                if end is None or ("w" not in row and len(steps) > 1):
                    continue
                inner = row["w"].value.split(" ") if len(steps) > 1 else []
                nodes = [topic, *(self.profile.entity_id(x) for x in inner), end]
                if len(nodes) != len(steps) + 1:
                    continue
                hops = [
                    Hop(nodes[k], rel, nodes[k + 1], inverse) for k, (rel, inverse) in enumerate(rel_steps)
                ]
                out[end] = Path(tuple(hops))
        return out

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
