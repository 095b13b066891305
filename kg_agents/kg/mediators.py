"""Mediator (CVT) nodes walked through as one step: :class:`MediatedKG`.

Freebase states an n-ary fact through a mediator node with no label of its own: an actor's role in a
film is ``film -film.film.starring-> m -film.performance.actor-> actor`` with ``m`` typed
``film.performance``. Shown as it is, a mediator costs every method a hop, a prompt line with a bare mid
and a decision about an entity no question names. :class:`MediatedKG` is a view of any store in which
such a node is never an entity: the two edges through it are one edge with a composite relation,
written like a SPARQL property path, ``film.film.starring / film.performance.actor`` (``^r`` for a part
walked against its triple). "Who directed the films starring [X]" is two hops in the view.

Which nodes are mediators is the profile's to say: ``Profile.mediator_types`` (type ids) and
``Profile.type_relation`` (the relation from an entity to its type); :func:`with_mediators` wraps a
store whose profile names mediator types, as :func:`kg_agents.kg.open_kg` does. Or wrap any store::

    kg = MediatedKG(SparqlKG(url, profile="freebase"), ["film.performance"], type_relation="type.object.type")

The view's relations come from a sample of each mediator type (its first ``type_sample`` members and
their edges, read once): a relation seen on a sampled mediator leads to mediators wherever it is walked
(a typed schema's rule), so reading a plain relation never asks an entity's type, and a neighbour list
costs one more request only when it meets mediators (their edges, ``sample`` at most each).
:meth:`~MediatedKG.relations` reads no mediator: it lists the composite relations that an entity's
relations into mediators go on to in the sample.
Each walk through a mediator is one triple of the view, stored in one direction of the walk's two
(``a / b`` or ``^b / ^a``: the one with fewer parts walked backwards, else the lesser text), so it is
an out-edge of one end and an in-edge of the other, as any triple is. A walk back to where it started is
no edge. A chain with composite relations is expanded to the store's own relations for :meth:`chain_ends` and
:meth:`chain_witnesses`, so an engine still joins it in one query.

Example:
    >>> from kg_agents.kg.memory import MemoryKG
    >>> kg = MediatedKG(MemoryKG([
    ...     ("Splash", "starring", "m1"), ("m1", "type", "performance"),
    ...     ("m1", "actor", "Tom Hanks"), ("m1", "character", "Allen"),
    ... ]), ["performance"], type_relation="type")
    >>> [t.to_text() for t in kg.neighbors("Splash")]
    ['(Splash, starring / actor, Tom Hanks)', '(Splash, starring / character, Allen)']
    >>> kg.chain_ends("Tom Hanks", ["~starring / actor"])
    (['Splash'], False)
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from kg_agents.errors import ConfigError
from kg_agents.kg import base
from kg_agents.kg.base import Direction, Hop, KnowledgeGraph, Path, Triple, TripleList

__all__ = ["SEPARATOR", "MediatedKG", "compose", "reverse_composite", "split_composite", "with_mediators"]

#: Between the two parts of a composite relation (spaces: no relation IRI or id of a profile has one).
SEPARATOR = " / "
#: Marks a part of a composite relation walked against its triple (SPARQL's inverse path).
_INVERSE_PART = "^"

Step = tuple[str, bool]  # (relation, walked against its triple)
Limit = int | None
#: What the sample of the mediator types shows: the steps into a mediator, the steps out of one after
#: each of them, and the composite relations in their stored direction.
_Schema = tuple[frozenset[Step], dict[Step, list[Step]], tuple[str, ...]]


def _part(step: Step) -> str:
    rel, inverse = step
    return _INVERSE_PART + rel if inverse else rel


def compose(first: Step, second: Step) -> str:
    """The composite relation of a walk along ``first`` into a mediator and ``second`` out of it.

    Example:
        >>> compose(("film.performance.actor", True), ("film.performance.film", False))
        '^film.performance.actor / film.performance.film'
    """
    return _part(first) + SEPARATOR + _part(second)


def split_composite(relation: str) -> tuple[Step, Step] | None:
    """The two steps of a composite relation, or None for a relation of the store itself.

    Example:
        >>> split_composite("^film.performance.actor / film.performance.film")
        (('film.performance.actor', True), ('film.performance.film', False))
        >>> split_composite("film.film.directed_by") is None
        True
    """
    if not isinstance(relation, str) or SEPARATOR not in relation:
        return None
    first, _, second = relation.partition(SEPARATOR)
    steps: list[Step] = []
    for part in (first, second):
        inverse = part.startswith(_INVERSE_PART)
        rel = part[1:] if inverse else part
        if not rel or SEPARATOR in rel:
            return None
        steps.append((rel, inverse))
    return steps[0], steps[1]


def reverse_composite(relation: str) -> str:
    """The composite relation of the same walk taken from its other end.

    Raises:
        ValueError: ``relation`` is not composite.
    """
    steps = split_composite(relation)
    if steps is None:
        raise ValueError(f"not a composite relation: {relation!r}")
    (r1, i1), (r2, i2) = steps
    return compose((r2, not i2), (r1, not i1))


def _order(relation: str) -> tuple[int, str]:
    return (relation.count(_INVERSE_PART), relation)


def _stored(relation: str) -> bool:
    """True when a walk whose text is ``relation`` is a triple in that direction: the one of its two
    texts with fewer parts walked backwards, else the lesser."""
    return _order(relation) <= _order(reverse_composite(relation))


def _direction(inverse: bool) -> Direction:
    return "in" if inverse else "out"


def _step_of(t: Triple, entity: str) -> Step:
    """The step from ``entity`` along triple ``t``."""
    return (t.relation, t.head != entity)


class MediatedKG(KnowledgeGraph):
    """A view of ``kg`` in which every mediator node is walked through as one step.

    Args:
        kg: any :class:`~kg_agents.kg.base.KnowledgeGraph`.
        mediator_types: the ids of the types whose members are mediators.
        type_relation: the relation from an entity to its type (``type.object.type``).
        sample: the most edges read from one mediator.

    Attributes:
        type_sample: the members of each mediator type read to learn the relations through mediators
            (once, on first use or by :meth:`learn`).

    Raises:
        ConfigError: no mediator type, no type relation, or a sample that is not a positive int.
    """

    type_sample = 5

    def __init__(
        self, kg: KnowledgeGraph, mediator_types: Iterable[str], *, type_relation: str, sample: int = 100
    ):
        types = tuple(dict.fromkeys(mediator_types))
        if not types or not all(isinstance(t, str) and t for t in types):
            raise ConfigError("MediatedKG needs at least one mediator type id")
        if not isinstance(type_relation, str) or not type_relation:
            raise ConfigError("MediatedKG needs the relation from an entity to its type (type_relation)")
        if isinstance(sample, bool) or not isinstance(sample, int) or sample < 1:
            raise ConfigError(f"MediatedKG: sample must be a positive int, got {sample!r}")
        self.inner, self.name = kg, str(getattr(kg, "name", "kg"))
        self.mediator_types, self.type_relation, self.sample = types, type_relation, sample
        self.joins_in_engine = base.joins_in_engine(kg)
        self._schema: _Schema | None = None

    def __repr__(self) -> str:
        return f"MediatedKG({self.inner!r}, {list(self.mediator_types)!r})"

    # ------------------------------------------------------------------ the schema sample
    def learn(self) -> MediatedKG:
        """Read the sample of each mediator type now (else the first read of the view does); returns self."""
        self._learn()
        return self

    def _learn(self) -> _Schema:
        """The steps that lead into a mediator, the steps out of a mediator after each of them, and the
        composite relations (stored direction), from the first ``type_sample`` members of each mediator
        type."""
        if self._schema is not None:
            return self._schema
        into: set[Step] = set()
        follows: dict[Step, set[Step]] = {}
        composites: set[str] = set()
        members = self.inner.neighbors_many(
            list(self.mediator_types), self.type_relation, "in", self.type_sample
        )
        mids = list(dict.fromkeys(t.head for ts in members.values() for t in ts))
        edges = self.inner.neighbors_many(mids, None, "both", self.sample) if mids else {}
        for m in mids:
            out = [t for t in edges.get(m, ()) if not (t.relation == self.type_relation and t.head == m)]
            for t in out:
                rel, inverse = _step_of(t, m)
                into.add((rel, not inverse))
            for a in out:
                for b in out:
                    if a is b or a.other(m) == b.other(m):
                        continue
                    rel_a, inv_a = _step_of(a, m)
                    follows.setdefault((rel_a, not inv_a), set()).add(_step_of(b, m))
        for first, seconds in follows.items():
            seconds -= into  # a walk into another mediator is no edge
            composites.update(t for t in (compose(first, s) for s in seconds) if _stored(t))
        self._schema = (
            frozenset(into),
            {k: sorted(v) for k, v in follows.items()},
            tuple(sorted(composites)),
        )
        return self._schema

    def _into(self) -> frozenset[Step]:
        return self._learn()[0]

    def _hidden(self, into: frozenset[Step], t: Triple, entity: str) -> bool:
        """True when ``t``, read from ``entity``, reaches a mediator: along a step into one, or from a
        mediator type to its members."""
        step = _step_of(t, entity)
        return step in into or (step == (self.type_relation, True) and entity in self.mediator_types)

    # ------------------------------------------------------------------ walks
    def _through(
        self, starts: dict[str, list[tuple[Step, str]]], second: Step | None
    ) -> dict[str, list[tuple[str, str]]]:
        """From each entity's ``(step, mediator)`` pairs, the walks out of the mediators
        (``second`` only, or every step): ``entity -> [(composite text, end)]`` in read order."""
        into = self._into()
        mids = list(dict.fromkeys(m for pairs in starts.values() for _, m in pairs))
        if not mids:
            return {e: [] for e in starts}
        if second is None:
            read = self.inner.neighbors_many(mids, None, "both", self.sample)
        else:
            read = self.inner.neighbors_many(mids, second[0], _direction(second[1]), self.sample)
        out: dict[str, list[tuple[str, str]]] = {}
        for e, pairs in starts.items():
            walks: list[tuple[str, str]] = []
            for step, m in pairs:
                for t in read.get(m, ()):
                    s2 = _step_of(t, m)
                    x = t.other(m)
                    if x == e or s2 in into or (s2[0] == self.type_relation and not s2[1]):
                        continue  # back where it started, into another mediator, or the mediator's type
                    walks.append((compose(step, s2), x))
            out[e] = list(dict.fromkeys(walks))
        return out

    def _collect(
        self,
        e: str,
        plain: list[Triple],
        walks: list[tuple[str, str]],
        direction: Direction,
        limit: int | None,
    ) -> TripleList:
        got = [t for t in plain if direction == "both" or (t.head == e) == (direction == "out")]
        for text, x in walks:
            back = reverse_composite(text)
            if direction != "in" and _stored(text):
                got.append(Triple(e, text, x))
            if direction != "out" and _stored(back):
                got.append(Triple(x, back, e))
        got = list(dict.fromkeys(got))
        if limit is not None and len(got) > limit:
            return TripleList(got[:limit], truncated=True)
        return TripleList(got)

    # ------------------------------------------------------------------ KnowledgeGraph
    def neighbors_many(
        self,
        entities: Sequence[str],
        relation: str | None = None,
        direction: Direction = "out",
        limit: Limit = None,
    ) -> dict[str, TripleList]:
        """Each entity's edges in the view: the store's edges that do not reach a mediator, and one
        edge for each walk through a mediator (see the module's doc). A ``limit`` cuts each list, and
        a list is ``truncated`` when the store's read of it was."""
        base.check_direction(direction)
        base.check_limit(limit)
        ents = list(dict.fromkeys(entities))
        into = self._into()
        steps = split_composite(relation) if relation is not None else None
        if relation is not None and steps is None:  # a relation of the store: its edges, unless to mediators
            read = self.inner.neighbors_many(ents, relation, direction, limit)
            return {
                e: TripleList([t for t in ts if not self._hidden(into, t, e)], truncated=ts.truncated)
                for e, ts in ((e, read.get(e, TripleList())) for e in ents)
            }
        if steps is not None:  # one composite relation: walks along it (out) or its reverse (in)
            assert relation is not None
            wanted = [] if not _stored(relation) else [(relation, "out"), (reverse_composite(relation), "in")]
            result = {e: TripleList() for e in ents}
            cut: set[str] = set()
            for text, way in wanted:
                if direction not in (way, "both"):
                    continue
                first, second = split_composite(text)  # type: ignore[misc]
                read = self.inner.neighbors_many(ents, first[0], _direction(first[1]), limit)
                cut |= {e for e in ents if read.get(e, TripleList()).truncated}
                starts = {e: [(first, t.other(e)) for t in read.get(e, ())] for e in ents}
                walks = self._through(starts, second)
                for e in ents:
                    keep = [(w, x) for w, x in walks[e] if w == text]
                    if way == "in":  # walks from e along the reverse: Triple(x, relation, e)
                        result[e].extend(Triple(x, relation, e) for _, x in keep)
                    else:
                        result[e].extend(Triple(e, relation, x) for _, x in keep)
            out: dict[str, TripleList] = {}
            for e, ts in result.items():
                uniq = list(dict.fromkeys(ts))
                over = limit is not None and len(uniq) > limit
                out[e] = TripleList(uniq[:limit] if over else uniq, truncated=over or e in cut)
            return out
        read = self.inner.neighbors_many(ents, None, "both", limit)
        plain: dict[str, list[Triple]] = {}
        starts = {}
        for e in ents:
            ts = read.get(e, TripleList())
            plain[e] = [t for t in ts if not self._hidden(into, t, e)]
            starts[e] = [(_step_of(t, e), t.other(e)) for t in ts if _step_of(t, e) in into]
        walks = self._through(starts, None)
        out = {}
        for e in ents:
            got = self._collect(e, plain[e], walks[e], direction, limit)
            got.truncated = got.truncated or read.get(e, TripleList()).truncated
            out[e] = got
        return out

    def relations(self, entity: str, direction: Direction = "out") -> list[str]:
        """The relations of ``entity``'s edges in ``direction``: the store's own that do not lead to a
        mediator, then the composite ones that start with a relation of ``entity`` into a mediator and go on
        as the sampled mediators of that relation do (no mediator of ``entity`` is read, so a composite
        relation may be listed that none of its own mediators has)."""
        return self.relations_many([entity], direction)[entity]

    def relations_many(self, entities: Sequence[str], direction: Direction = "out") -> dict[str, list[str]]:
        """:meth:`relations` of each distinct entity: the store's relations of all of them (a batch)."""
        base.check_direction(direction)
        into, follows, _ = self._learn()
        ents = list(dict.fromkeys(entities))
        own: dict[str, list[str]] = {e: [] for e in ents}
        composite: dict[str, set[str]] = {e: set() for e in ents}
        for way in ("out", "in"):
            for e, rels in base.relations_of(self.inner, ents, way).items():  # type: ignore[arg-type]
                for rel in rels:
                    step = (rel, way == "in")
                    if step in into:
                        for then in follows.get(step, ()):
                            if then in into:
                                continue
                            text = compose(step, then)
                            back = reverse_composite(text)
                            if direction != "in" and _stored(text):
                                composite[e].add(text)
                            if direction != "out" and _stored(back):
                                composite[e].add(back)
                    elif step == (self.type_relation, True) and e in self.mediator_types:
                        continue  # a mediator type's members
                    elif direction in (way, "both"):
                        own[e].append(rel)
        return {e: list(dict.fromkeys(own[e])) + sorted(composite[e]) for e in ents}

    def degree(self, entity: str, relation: str | None = None, direction: Direction = "out") -> int:
        if relation is not None and split_composite(relation) is None:
            base.check_direction(direction)
            into = self._into()
            walked = [(relation, w == "in") for w in ("out", "in") if direction in (w, "both")]
            members = relation == self.type_relation and entity in self.mediator_types
            if not members and not any(step in into for step in walked):
                return self.inner.degree(entity, relation, direction)
        return len(self.neighbors(entity, relation, direction))

    def has_triple(self, head: str, relation: str, tail: str) -> bool:
        steps = split_composite(relation)
        if steps is None:
            into = self._into()
            if (relation, False) in into or (relation, True) in into:
                return False  # an edge of a mediator is no edge of the view
            if relation == self.type_relation and tail in self.mediator_types:
                return False
            return self.inner.has_triple(head, relation, tail)
        if head == tail or not _stored(relation):
            return False
        path = [_part_text(s) for s in steps]
        if base.has_chain_queries(self.inner):
            return tail in self.inner.chain_witnesses(head, path, [tail])  # type: ignore[attr-defined]
        return any(t.tail == tail for t in self.neighbors(head, relation, "out"))

    def has_triples(self, triples: Sequence[Triple]) -> list[bool]:
        """:meth:`has_triple` of each: the plain ones in one batch of the store, the composite ones one
        walk of the store per head and relation."""
        into = self._into()
        got: dict[int, bool] = {}
        plain: list[int] = []
        groups: dict[tuple[str, str], list[int]] = {}
        for i, t in enumerate(triples):
            steps = split_composite(t.relation)
            if steps is None:
                hidden = (t.relation, False) in into or (t.relation, True) in into
                if hidden or (t.relation == self.type_relation and t.tail in self.mediator_types):
                    got[i] = False
                else:
                    plain.append(i)
            elif t.head == t.tail or not _stored(t.relation) or not base.has_chain_queries(self.inner):
                got[i] = self.has_triple(t.head, t.relation, t.tail)
            else:
                groups.setdefault((t.head, t.relation), []).append(i)
        if plain:
            held = base.has_triples(self.inner, [triples[i] for i in plain])
            got.update(zip(plain, held, strict=True))
        for (head, relation), idx in groups.items():
            steps = split_composite(relation)
            assert steps is not None
            path = [_part_text(s) for s in steps]
            walks = self.inner.chain_witnesses(head, path, [triples[i].tail for i in idx])  # type: ignore[attr-defined]
            got.update((i, triples[i].tail in walks) for i in idx)
        return [bool(got[i]) for i in range(len(triples))]

    def all_relations(self) -> list[str]:
        """The store's relations that no sampled mediator has, then the composite relations."""
        into = self._into()
        through = {rel for rel, _ in into}
        return [r for r in self.inner.all_relations() if r not in through] + list(self._learn()[2])

    def has_entity(self, entity: str) -> bool:
        return self.inner.has_entity(entity)

    def label(self, entity: str) -> str:
        return self.inner.label(entity)

    def labels_many(self, entities: Sequence[str]) -> list[str]:
        batch = getattr(self.inner, "labels_many", None)
        return list(batch(entities)) if callable(batch) else [self.inner.label(e) for e in entities]

    def features(self, entity: str) -> dict[str, str]:
        return self.inner.features(entity)

    def iter_labels(self) -> Iterator[tuple[str, str]]:
        return self.inner.iter_labels()

    def fingerprint(self) -> str:
        """The store's fingerprint with the mediator types: a pack for the view is not one for the store."""
        types = ",".join(sorted(self.mediator_types))
        return f"{self.inner.fingerprint()}+mediated:{self.type_relation}:{types}"

    def clear_cache(self) -> None:
        clear = getattr(self.inner, "clear_cache", None)
        if callable(clear):
            clear()

    def view_path(self, relation_path: Sequence[str]) -> list[str] | None:
        """A relation path of the store (``~r`` for a step against its triple) as a path of the view:
        each step into a mediator joined with the step after it. None when the path ends on a mediator.

        Example:
            >>> from kg_agents.kg.memory import MemoryKG
            >>> kg = MediatedKG(MemoryKG([("F", "starring", "m"), ("m", "type", "performance"),
            ...     ("m", "actor", "A")]), ["performance"], type_relation="type")
            >>> kg.view_path(["~actor", "~starring"])
            ['~starring / actor']
        """
        into = self._into()
        steps = list(base.parse_relation_path(relation_path))
        out: list[str] = []
        i = 0
        while i < len(steps):
            if steps[i] not in into:
                out.append(_part_text(steps[i]))
                i += 1
                continue
            if i + 1 >= len(steps):
                return None
            text = compose(steps[i], steps[i + 1])
            out.append(text if _stored(text) else base.INVERSE_PREFIX + reverse_composite(text))
            i += 2
        return out

    # ------------------------------------------------------------------ ChainQueries
    def _expand(self, relation_path: Sequence[str]) -> list[str] | None:
        """The store's relation path for a path of the view; None when a step is no edge of the view."""
        into = self._into()
        out: list[str] = []
        for rel, inverse in base.parse_relation_path(relation_path):
            steps = split_composite(rel)
            if steps is None:
                if (rel, inverse) in into:
                    return None
                out.append(base.INVERSE_PREFIX + rel if inverse else rel)
                continue
            if not _stored(rel):
                return None
            first, second = steps
            if inverse:
                first, second = (second[0], not second[1]), (first[0], not first[1])
            out += [_part_text(first), _part_text(second)]
        return out

    def _members(self, topic: str, path: list[str]) -> bool:
        """True when ``path`` starts from a mediator type to its members."""
        return topic in self.mediator_types and path[0] == base.INVERSE_PREFIX + self.type_relation

    def chain_ends(
        self, topic: str, relation_path: Sequence[str], *, limit: int | None = None
    ) -> tuple[list[str], bool]:
        """The ends of ``relation_path`` from ``topic``: the store joins the path with each composite
        relation expanded to its two relations (in one query, on an engine)."""
        base.check_limit(limit)
        path = self._expand(relation_path)
        if path is None:
            return [], False
        if self._members(topic, path):
            return [], False
        ends, cut = self.inner.chain_ends(topic, path, limit=limit)  # type: ignore[attr-defined]
        return list(ends), bool(cut)

    def chain_witnesses(
        self, topic: str, relation_path: Sequence[str], ends: Sequence[str]
    ) -> dict[str, Path]:
        """One walk of the view from ``topic`` along ``relation_path`` to each of ``ends`` it reaches:
        the store's walk of the expanded path, each pair of edges through a mediator made one hop."""
        view = base.parse_relation_path(relation_path)
        path = self._expand(relation_path)
        if path is None or self._members(topic, path):
            return {}
        found: dict[str, Path] = self.inner.chain_witnesses(topic, path, ends)  # type: ignore[attr-defined]
        out: dict[str, Path] = {}
        for end, walk in found.items():
            hops: list[Hop] = []
            i = 0
            for rel, inverse in view:
                if split_composite(rel) is None:
                    hops.append(walk.hops[i])
                    i += 1
                    continue
                a, b = walk.hops[i], walk.hops[i + 1]
                i += 2
                if a.source == b.target:
                    break
                hops.append(Hop(a.source, rel, b.target, inverse))
            else:
                out[end] = Path(tuple(hops))
        return out


def _part_text(step: Step) -> str:
    rel, inverse = step
    return base.INVERSE_PREFIX + rel if inverse else rel


def with_mediators(kg: Any) -> Any:
    """``kg`` as a :class:`MediatedKG` when its profile names mediator types (``Profile.mediator_types``
    and ``Profile.type_relation``), else ``kg`` itself."""
    profile = getattr(kg, "profile", None)
    types = getattr(profile, "mediator_types", ())
    if not types:
        return kg
    rel = getattr(profile, "type_relation", None)
    if not rel:
        raise ConfigError(f"profile {profile.name!r} names mediator types but no type_relation")  # type: ignore[union-attr]
    return MediatedKG(kg, types, type_relation=rel)
