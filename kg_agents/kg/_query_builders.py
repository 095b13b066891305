"""SPARQL query text for ``RdfKG`` and ``SparqlKG``: the rows' terms, the read-only check, and the
query builders.

Every query is a ``SELECT`` or ``ASK`` whose terms are bound in ``VALUES`` blocks, rendered by
:mod:`kg_agents.kg.terms` through a :class:`~kg_agents.kg.profiles.Profile`. The builders are pure
functions (tested for hostile input in ``tests/kg/test_terms.py``).

Edges are triples whose object is an IRI; literal-valued triples are features, and triples whose
predicate is a label predicate give labels. Blank nodes are not entities.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import NamedTuple

from kg_agents.errors import KGError
from kg_agents.kg.base import Direction
from kg_agents.kg.terms import literal


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


def inverse_sides(direction: Direction) -> tuple[bool, ...]:
    """The sides a direction reads, as ``inverse`` flags: ``(False,)`` out-edges, ``(True,)`` in-edges.

    Example:
        >>> inverse_sides("both")
        (False, True)
    """
    return {"out": (False,), "in": (True,), "both": (False, True)}[direction]


def _edge_pattern(entities: Sequence[str], relation: str | None, direction: Direction) -> str:
    """A group pattern binding ``?e`` (given), ``?r``, and ``?o`` for out-edges or ``?s`` for in-edges.

    The direction is told by which variable is bound, not by a ``BIND`` constant: Virtuoso 7.2
    rejects ``BIND`` inside ``UNION`` branches here (SP031) and mis-evaluates constant ``VALUES``
    markers inside ``UNION``-ed subqueries.
    """
    return " UNION ".join(_side(entities, relation, inv) for inv in inverse_sides(direction))


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
        for inv in inverse_sides(direction):
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


def chain_walks_query(topic: str, steps: Sequence[tuple[str, bool]], limit: int) -> str:
    """The walks from ``topic`` along ``steps`` (rendered terms): every node ``?x1 .. ?xn`` of each, at
    most ``limit`` rows in the engine's own order (no ``DISTINCT``, no ``ORDER BY``: the engine stops
    after ``limit`` walks, however many the topic has)."""
    if not steps:
        raise ValueError("no steps")
    nodes = " ".join(f"?x{i}" for i in range(1, len(steps) + 1))
    return f"SELECT {nodes} WHERE {{ {_chain_pattern(topic, steps)} }} LIMIT {int(limit)}"


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


def relations_many_query(entities: Sequence[str], direction: Direction) -> str:
    """The distinct ``(?e, ?r)`` pairs of the edges of ``entities`` (rendered IRIs): one ``VALUES`` block."""
    if not entities:
        raise ValueError("no entities")
    return f"SELECT DISTINCT ?e ?r WHERE {{ {_edge_pattern(entities, None, direction)} }}"


def has_triple_query(head: str, relation: str, tail: str) -> str:
    """``ASK`` whether the triple is stored."""
    return f"ASK {{ VALUES (?h ?r ?t) {{ ({head} {relation} {tail}) }} ?h ?r ?t }}"


def has_triples_query(triples: Sequence[tuple[str, str, str]]) -> str:
    """``SELECT`` the stored ones of ``triples`` (rendered terms): one ``VALUES`` block of triples."""
    if not triples:
        raise ValueError("no triples")
    rows = " ".join(f"({h} {r} {t})" for h, r, t in triples)
    return f"SELECT ?h ?r ?t WHERE {{ VALUES (?h ?r ?t) {{ {rows} }} ?h ?r ?t }}"


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


def labels_many_query(entities: Sequence[str], predicates: Sequence[str], limit: int) -> str:
    """The literal labels of several entities, at most ``limit`` rows in all."""
    return (
        f"SELECT ?e ?p ?l WHERE {{ {_values('e', entities)} {_values('p', predicates)} "
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
