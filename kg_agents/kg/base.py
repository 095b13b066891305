"""The ``KnowledgeGraph`` protocol and the value types every layer shares.

Entity ids are strings: names for MetaQA, IRIs or Freebase mids for RDF stores. Relations are
strings too. Every store is read-only. Both directions are first-class: ``direction="in"`` follows
edges backwards, so no store needs inverse triples.

A :class:`Path` is a chain of KG triples walked from a start entity; a hop may follow its triple
backwards, and then its relation is written ``~relation`` in the path text, so every path text can
be parsed back and checked against the KG (:func:`verify_path`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol, runtime_checkable

from kg_agents.errors import KGError

__all__ = [
    "ARROW",
    "DIRECTIONS",
    "INVERSE_PREFIX",
    "ChainQueries",
    "Direction",
    "Hop",
    "KnowledgeGraph",
    "Path",
    "Triple",
    "TripleList",
    "check_direction",
    "check_limit",
    "has_chain_queries",
    "has_triples",
    "joins_in_engine",
    "labels_of",
    "parse_relation_path",
    "relations_of",
    "verify_path",
    "verify_paths",
]

Direction = Literal["out", "in", "both"]
DIRECTIONS: tuple[str, ...] = ("out", "in", "both")

#: Prefix that marks a hop walked against the direction of its triple, in path text.
INVERSE_PREFIX = "~"
#: Separator of the GCR path format ``e0 -> r1 -> e1``.
ARROW = " -> "


def check_limit(limit: int | None) -> None:
    """Raise ``ValueError`` unless ``limit`` is a non-negative int (not a bool) or None."""
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 0):
        raise ValueError(f"limit must be a non-negative int or None, got {limit!r}")


def check_direction(direction: str) -> Direction:
    """Return ``direction`` if it is one of ``out``, ``in``, ``both``; raise ``ValueError`` otherwise."""
    if direction not in DIRECTIONS:
        raise ValueError(f"direction must be one of {DIRECTIONS}, got {direction!r}")
    return direction  # type: ignore[return-value]


@dataclass(frozen=True, slots=True)
class Triple:
    """One KG fact ``(head, relation, tail)``, always in its stored direction."""

    head: str
    relation: str
    tail: str

    def other(self, entity: str) -> str:
        """The end of this triple that is not ``entity`` (the tail when it is the head)."""
        return self.tail if entity == self.head else self.head

    def to_text(self) -> str:
        return f"({self.head}, {self.relation}, {self.tail})"


class TripleList(list[Triple]):
    """A list of triples that says whether a fan-out limit cut it short.

    Attributes:
        truncated: True when the store had more triples than the ``limit`` asked for.
        total: the number of matching triples in the store when known (else None).
    """

    truncated: bool
    total: int | None

    def __init__(
        self, items: Iterable[Triple] = (), *, truncated: bool = False, total: int | None = None
    ) -> None:
        super().__init__(items)
        self.truncated = truncated
        self.total = total


@dataclass(frozen=True, slots=True)
class Hop:
    """One step of a path: from ``source`` along ``relation`` to ``target``.

    ``inverse`` is True when the stored triple is ``(target, relation, source)``.
    """

    source: str
    relation: str
    target: str
    inverse: bool = False

    @property
    def triple(self) -> Triple:
        if self.inverse:
            return Triple(self.target, self.relation, self.source)
        return Triple(self.source, self.relation, self.target)

    @property
    def relation_text(self) -> str:
        return (INVERSE_PREFIX + self.relation) if self.inverse else self.relation


@dataclass(frozen=True, slots=True)
class Path:
    """A reasoning path: a start entity and the hops walked from it.

    ``Path.from_hops`` checks that the hops connect. ``to_text()`` gives the GCR format
    ``e0 -> r1 -> e1 -> r2 -> e2`` (with ``~r`` for a hop walked backwards), and
    ``Path.from_text`` parses it back.
    """

    hops: tuple[Hop, ...]

    def __post_init__(self) -> None:
        for a, b in zip(self.hops, self.hops[1:], strict=False):
            if a.target != b.source:
                raise ValueError(f"path hops do not connect: {a.target!r} != {b.source!r}")

    @classmethod
    def from_hops(cls, hops: Iterable[Hop]) -> Path:
        return cls(tuple(hops))

    @classmethod
    def from_triples(cls, start: str, triples: Sequence[Triple]) -> Path:
        """Walk ``triples`` from ``start``, each forwards or backwards as they connect."""
        hops = []
        cur = start
        for t in triples:
            if t.head == cur:
                hops.append(Hop(cur, t.relation, t.tail, False))
                cur = t.tail
            elif t.tail == cur:
                hops.append(Hop(cur, t.relation, t.head, True))
                cur = t.head
            else:
                raise ValueError(f"triple {t} does not touch {cur!r}")
        return cls(tuple(hops))

    @property
    def start(self) -> str | None:
        return self.hops[0].source if self.hops else None

    @property
    def end(self) -> str | None:
        return self.hops[-1].target if self.hops else None

    @property
    def triples(self) -> tuple[Triple, ...]:
        return tuple(h.triple for h in self.hops)

    @property
    def entities(self) -> tuple[str, ...]:
        if not self.hops:
            return ()
        return (self.hops[0].source, *(h.target for h in self.hops))

    def __len__(self) -> int:
        return len(self.hops)

    def extend(self, hop: Hop) -> Path:
        return Path((*self.hops, hop))

    def to_text(self, label: object = None) -> str:
        """``e0 -> r1 -> e1 -> ...``; ``label`` (a callable id -> str) renders entities."""
        if not self.hops:
            return ""
        fmt = label if callable(label) else (lambda e: e)
        parts = [fmt(self.hops[0].source)]
        for h in self.hops:
            parts += [h.relation_text, fmt(h.target)]
        return ARROW.join(parts)

    @classmethod
    def from_text(cls, text: str) -> Path:
        """Parse ``e0 -> r1 -> e1 -> ...`` (ids, not labels). Raises ``ValueError`` when malformed."""
        parts = [p.strip() for p in text.strip().split(ARROW.strip())]
        if len(parts) < 3 or len(parts) % 2 == 0 or any(not p for p in parts):
            raise ValueError(f"not a path: {text!r}")
        hops = []
        for i in range(0, len(parts) - 2, 2):
            rel = parts[i + 1]
            inverse = rel.startswith(INVERSE_PREFIX)
            if inverse:
                rel = rel[len(INVERSE_PREFIX) :]
            hops.append(Hop(parts[i], rel, parts[i + 2], inverse))
        return cls(tuple(hops))

    def to_dict(self) -> dict[str, object]:
        return {
            "text": self.to_text(),
            "triples": [[t.head, t.relation, t.tail] for t in self.triples],
            "start": self.start,
        }


@runtime_checkable
class KnowledgeGraph(Protocol):
    """Read-only access to a knowledge graph.

    Every expansion takes a ``limit``; results are :class:`TripleList`s that say when it was hit.
    Batch forms (``neighbors_many``) let a remote store answer a hop over many entities in one
    round trip. Unknown entities are not errors for neighbour queries (they have no edges);
    ``label`` and ``features`` raise :class:`~kg_agents.errors.EntityNotFound`.

    A store that subclasses the protocol writes one of ``neighbors`` and ``neighbors_many`` and is given
    the other: ``neighbors`` as a batch of one, or ``neighbors_many`` as one ``neighbors`` call per
    distinct entity.
    """

    name: str

    def has_entity(self, entity: str) -> bool: ...

    def label(self, entity: str) -> str: ...

    def features(self, entity: str) -> dict[str, str]: ...

    def relations(self, entity: str, direction: Direction = "out") -> list[str]: ...

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
        return {e: self.neighbors(e, relation, direction, limit) for e in dict.fromkeys(entities)}

    def degree(self, entity: str, relation: str | None = None, direction: Direction = "out") -> int: ...

    def has_triple(self, head: str, relation: str, tail: str) -> bool: ...

    def all_relations(self) -> list[str]: ...

    def iter_labels(self) -> Iterator[tuple[str, str]]:
        """Every ``(entity id, label)`` pair; used to build an entity index."""
        ...

    def fingerprint(self) -> str:
        """A short string that changes when the KG's content changes (for caches)."""
        ...


def parse_relation_path(relation_path: Sequence[str]) -> tuple[tuple[str, bool], ...]:
    """A relation path (``["starred_actors", "~directed_by"]``: relation ids, ``~`` for a hop walked
    against its triple) as ``(relation, inverse)`` steps.

    Raises:
        ValueError: an empty path, a string instead of a sequence, or a step that is not a non-empty
            relation id.

    Example:
        >>> parse_relation_path(["~starred_actors", "directed_by"])
        (('starred_actors', True), ('directed_by', False))
    """
    if isinstance(relation_path, str) or not isinstance(relation_path, Sequence) or not relation_path:
        raise ValueError(f"a relation path is a non-empty sequence of relation ids, got {relation_path!r}")
    steps = []
    for step in relation_path:
        if not isinstance(step, str):
            raise ValueError(f"a relation path step must be a relation id, got {step!r}")
        inverse = step.startswith(INVERSE_PREFIX)
        rel = step[len(INVERSE_PREFIX) :] if inverse else step
        if not rel:
            raise ValueError(f"empty relation in relation path {list(relation_path)!r}")
        steps.append((rel, inverse))
    return tuple(steps)


@runtime_checkable
class ChainQueries(Protocol):
    """An optional capability of a store: following a whole relation path in one operation, so that a
    remote engine joins the hops itself instead of the client reading every hop's neighbourhood.

    ``relation_path`` is a sequence of relation ids, ``~relation`` for a hop walked against its triple
    (as in path text). A walk never passes through ``topic`` again and its end is never ``topic``;
    unknown entities and relations reach nothing (no error). Check for the capability with
    :func:`has_chain_queries`; ``MemoryKG``, ``RdfKG`` and ``SparqlKG`` have it.
    """

    def chain_ends(
        self, topic: str, relation_path: Sequence[str], *, limit: int | None = None
    ) -> tuple[list[str], bool]:
        """The distinct entities at the end of a walk from ``topic`` along ``relation_path``: at most
        ``limit`` of them (None: all; which ones a cut keeps is the store's choice), and whether there
        were more. Raises ``ValueError`` for a malformed path or limit."""
        ...

    def chain_witnesses(
        self, topic: str, relation_path: Sequence[str], ends: Sequence[str]
    ) -> dict[str, Path]:
        """One walk (a :class:`Path`) from ``topic`` along ``relation_path`` to each of ``ends`` that it
        reaches; ends it does not reach are left out."""
        ...


def has_chain_queries(kg: object) -> bool:
    """True when ``kg`` (or the store a proxy such as ``MeteredKG`` wraps) has :class:`ChainQueries`."""
    return callable(getattr(kg, "chain_ends", None)) and callable(getattr(kg, "chain_witnesses", None))


def joins_in_engine(kg: object) -> bool:
    """True when ``kg`` answers :class:`ChainQueries` in a query engine (``RdfKG``, ``SparqlKG``: the
    store sets ``joins_in_engine = True``), where walking a chosen relation chain whole in one query
    saves reading every hop's neighbourhood into the client. An in-memory graph has the queries too,
    but walking hop by hop costs it nothing, so the methods keep their hop-by-hop walk there (and their
    measured figures on it)."""
    return has_chain_queries(kg) and any(
        getattr(k, "joins_in_engine", False) is True for k in (kg, getattr(kg, "inner", None))
    )


def verify_path(kg: KnowledgeGraph, path: Path) -> bool:
    """True when every hop of ``path`` is a triple of ``kg`` and the hops connect."""
    if not path.hops:
        return False
    try:
        return all(kg.has_triple(t.head, t.relation, t.tail) for t in path.triples)
    except KGError:
        return False


def has_triples(kg: KnowledgeGraph, triples: Sequence[Triple]) -> list[bool]:
    """Whether each of ``triples`` is a triple of ``kg``: the store's own ``has_triples`` when it has one
    (a SPARQL store asks for a batch of triples in one query), else ``has_triple`` for each."""
    batch = getattr(kg, "has_triples", None)
    if callable(batch):
        return [bool(x) for x in batch(triples)]
    return [kg.has_triple(t.head, t.relation, t.tail) for t in triples]


def relations_of(
    kg: KnowledgeGraph, entities: Sequence[str], direction: Direction = "out"
) -> dict[str, list[str]]:
    """``kg.relations(e, direction)`` of each distinct entity: the store's own ``relations_many`` when it
    has one (a SPARQL store reads a batch's relations in one query), else ``relations`` for each."""
    batch = getattr(kg, "relations_many", None)
    if callable(batch):
        got = batch(entities, direction)
        return {e: list(got.get(e, ())) for e in dict.fromkeys(entities)}
    return {e: list(kg.relations(e, direction)) for e in dict.fromkeys(entities)}


def labels_of(kg: KnowledgeGraph, entities: Sequence[str]) -> list[str]:
    """``kg.label`` of each entity, in order: the store's own ``labels_many`` when it has one (a SPARQL
    store reads a batch's labels in one query), else ``label`` for each. Raises ``EntityNotFound`` as
    ``label`` does."""
    batch = getattr(kg, "labels_many", None)
    if callable(batch):
        return [str(x) for x in batch(entities)]
    return [kg.label(e) for e in entities]


def verify_paths(kg: KnowledgeGraph, paths: Iterable[Path]) -> tuple[list[Path], int]:
    """Split paths into those that pass :func:`verify_path` and a count of the dropped ones.

    Every distinct triple of the paths is asked once, through :func:`has_triples`; where that fails
    with a ``KGError`` each path is verified alone, as :func:`verify_path` does.
    """
    paths = list(paths)
    triples = list(dict.fromkeys(t for p in paths for t in p.triples))
    try:
        held: dict[Triple, bool] | None = dict(zip(triples, has_triples(kg, triples), strict=True))
    except KGError:
        held = None
    kept: list[Path] = []
    dropped = 0
    for p in paths:
        ok = verify_path(kg, p) if held is None else bool(p.hops) and all(held[t] for t in p.triples)
        if ok:
            kept.append(p)
        else:
            dropped += 1
    return kept, dropped
