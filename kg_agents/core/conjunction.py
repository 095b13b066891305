"""Whole answer sets, and conjunctions: the entities every topic entity's walk reaches, with a supporting
path from each topic.

A chain question ("who directed the films written by [Babaloo Mandel]") has as many answers as its
relation chain has ends, not one. A conjunction ("which films starring [Tom Hanks] did [Ron Howard]
direct") combines chains from several topic entities: its answers are the entities at the end of every
topic's chain, and each answer needs a verified path from each topic. :func:`answer_set` does both:
given, for each topic entity, the relation paths a method chose for its walk, it walks them with
:func:`~kg_agents.core.chains.walk_chain`, keeps the ends that every topic's walk reaches and, for each,
one walk from each topic, verified against the KG. :func:`meet` tries the combinations of each topic's
ranked relation paths, the best ranks first, until the walks meet (which relation of a question belongs
to which topic entity is what a small model most often gets wrong).

Example:
    >>> from kg_agents.kg.memory import MemoryKG
    >>> kg = MemoryKG([("Splash", "starred", "Tom Hanks"), ("Big", "starred", "Tom Hanks"),
    ...                ("Splash", "directed_by", "Ron Howard"), ("Cocoon", "directed_by", "Ron Howard")])
    >>> s = answer_set(kg, {"Tom Hanks": [["~starred"]], "Ron Howard": [["~directed_by"]]}, limit=100)
    >>> s.answers, [p.to_text() for p in s.support["Splash"]]
    (['Splash'], ['Tom Hanks -> ~starred -> Splash', 'Ron Howard -> ~directed_by -> Splash'])
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kg_agents.core.chains import walk_chain
from kg_agents.errors import ConfigError
from kg_agents.kg.base import INVERSE_PREFIX, Hop, Path, verify_paths

__all__ = [
    "MAX_TRIES",
    "AnswerSet",
    "Meeting",
    "answer_set",
    "backwards",
    "chain_combinations",
    "complete_answers",
    "from_every_topic",
    "meet",
    "path_relations",
    "reversed_relations",
]

#: The most combinations of relation paths :func:`meet` walks before it gives up.
MAX_TRIES = 25


@dataclass
class AnswerSet:
    """What :func:`answer_set` found.

    Attributes:
        answers: the entities every topic's walk reaches, ``first`` first, then in the first topic's
            walk order; each has a verified path from every topic.
        support: for each answer, one verified path from each topic entity, in the topics' order.
        ends: for each topic entity, how many ends its walk reached.
        truncated: ``"topic relation/path"`` for each walk whose ends were cut at ``limit``.
        checked_back: the topic entities whose walk was cut, checked from the other topics' ends (see
            :func:`answer_set`).
        unverified: ends dropped because a walk to them failed verification.
    """

    answers: list[str] = field(default_factory=list)
    support: dict[str, list[Path]] = field(default_factory=dict)
    ends: dict[str, int] = field(default_factory=dict)
    truncated: list[str] = field(default_factory=list)
    unverified: int = 0
    checked_back: list[str] = field(default_factory=list)

    @property
    def paths(self) -> list[Path]:
        """Every supporting path, answer by answer (``support``'s paths in order)."""
        return [p for a in self.answers for p in self.support[a]]


def path_relations(path: Path) -> list[str]:
    """A path's relation path: ``~relation`` for a hop walked backwards.

    Example:
        >>> from kg_agents.kg.base import Hop
        >>> path_relations(Path((Hop("A", "starred", "F", inverse=True), Hop("F", "directed_by", "D"))))
        ['~starred', 'directed_by']
    """
    return [h.relation_text for h in path.hops]


def answer_set(
    kg: Any,
    walks: Mapping[str, Sequence[Sequence[str]]],
    *,
    limit: int,
    first: Iterable[str] = (),
    exclude: Iterable[str] = (),
) -> AnswerSet:
    """The ends every topic's walk reaches, each with one verified walk from each topic.

    Args:
        kg: the knowledge graph (chain queries or not: :func:`~kg_agents.core.chains.walk_chain`).
        walks: ``{topic entity: the relation paths of its walk}`` (one or more, ``~relation`` for a hop
            walked backwards); a topic's ends are the union of its paths' ends. One topic: the whole
            answer set of its chain(s); several: their conjunction.
        limit: the most ends read per topic and relation path (the cut is in ``truncated``). Where one
            topic's walk is cut and another's is not, the ends every uncut walk reached are walked back
            along the cut walk's relation paths instead (``checked_back``): an answer past a hub's cut
            is still found.
        first: entities to put first, in this order, where they are answers (a method's best ones).
        exclude: entities that are never answers (the topic entities are never answers either).

    Raises:
        ConfigError: no walks, or a topic without a relation path, or ``limit`` below 1.
    """
    if not walks or any(not paths for paths in walks.values()):
        raise ConfigError("answer_set needs at least one relation path for each topic entity")
    if not isinstance(limit, int) or isinstance(limit, bool) or limit < 1:
        raise ConfigError(f"limit must be a positive integer, got {limit!r}")
    out = AnswerSet()
    skip = set(walks) | set(exclude)
    reached: list[dict[str, Path]] = []
    cut: list[bool] = []
    for topic, paths in walks.items():
        ends: dict[str, Path] = {}
        cut.append(False)
        for relations in dict.fromkeys(tuple(r) for r in paths):
            w = walk_chain(kg, [topic], list(relations), limit=limit)
            out.truncated.extend(w.truncated)
            cut[-1] = cut[-1] or bool(w.truncated)
            for p in w.paths:
                if p.end is not None and p.end not in skip:
                    ends.setdefault(p.end, p)
        out.ends[topic] = len(ends)
        reached.append(ends)
    if 0 < sum(cut) < len(cut):  # a hub's walk (a genre's films) was cut: check it from the other side
        _check_back(kg, walks, reached, cut, limit, out)
    common = {e: [r[e] for r in reached] for e in reached[0] if all(e in r for r in reached[1:])}
    held = set(verify_paths(kg, [p for support in common.values() for p in support])[0])  # in one batch
    for e, support in common.items():
        if all(p in held for p in support):
            out.support[e] = support
        else:
            out.unverified += 1
    lead = [e for e in dict.fromkeys(first) if e in out.support]
    out.answers = lead + [e for e in out.support if e not in set(lead)]
    return out


def reversed_relations(relations: Sequence[str]) -> list[str]:
    """The relation path walked the other way: last hop first, each hop's direction turned.

    Example:
        >>> reversed_relations(["~starred", "directed_by"])
        ['~directed_by', 'starred']
    """
    return [
        r[len(INVERSE_PREFIX) :] if r.startswith(INVERSE_PREFIX) else INVERSE_PREFIX + r
        for r in reversed(relations)
    ]


def backwards(path: Path) -> Path:
    """``path`` walked from its end to its start (the same triples).

    Example:
        >>> backwards(Path.from_text("Horror -> ~has_genre -> Dracula")).to_text()
        'Dracula -> has_genre -> Horror'
    """
    return Path(tuple(Hop(h.target, h.relation, h.source, not h.inverse) for h in reversed(path.hops)))


def _check_back(
    kg: Any,
    walks: Mapping[str, Sequence[Sequence[str]]],
    reached: list[dict[str, Path]],
    cut: list[bool],
    limit: int,
    out: AnswerSet,
) -> None:
    """Where a topic's walk was cut at ``limit`` (a genre's films, a year's), the ends that every uncut
    walk reached are walked back along that topic's relation paths: each that reaches the topic gets the
    reversed walk as its path from it. A hub's thousands of ends are never read, and an answer among them
    past the cut is still found."""
    whole = [i for i, c in enumerate(cut) if not c]
    candidates = [e for e in reached[whole[0]] if all(e in reached[i] for i in whole[1:])]
    for i, (topic, paths) in enumerate(walks.items()):
        if not cut[i]:
            continue
        out.checked_back.append(topic)
        for relations in dict.fromkeys(tuple(r) for r in paths):
            missing = [e for e in candidates if e not in reached[i]]
            if not missing:
                break
            back = walk_chain(kg, missing, reversed_relations(relations), limit=limit)
            for p in back.paths:
                if p.end == topic and p.start is not None and p.start not in reached[i]:
                    reached[i][p.start] = backwards(p)


@dataclass
class Completed:
    """What :func:`complete_answers` did.

    Attributes:
        answers: the answers (labels) given, then the other ends of the best answer's chain, at most
            ``limit`` in all.
        paths: a verified walk to each answer added (from the chain's topic entity).
        chain: the relation path walked (None: no given answer ends a path from a topic entity).
        start: the topic entity it was walked from.
        truncated: as :attr:`AnswerSet.truncated`.
    """

    answers: list[str]
    paths: list[Path] = field(default_factory=list)
    chain: list[str] | None = None
    start: str | None = None
    truncated: list[str] = field(default_factory=list)

    def as_trace(self, given: int) -> dict[str, Any]:
        """What a method traces of it (``given``: how many answers it had before); nothing when no
        chain was walked."""
        if self.chain is None:
            return {}
        return {
            "whole_set": {
                "chain": self.chain,
                "start": self.start,
                "given": given,
                "added": len(self.answers) - given,
                "truncated": self.truncated,
            }
        }


def complete_answers(
    kg: Any,
    answers: Sequence[str],
    candidates: Mapping[str, Sequence[Path]],
    *,
    topics: Iterable[str],
    limit: int,
    read_limit: int | None = None,
) -> Completed:
    """A chain question's whole answer set from a method's best answer: the relation chain of the first
    verified path from a topic entity to the best answer that has one, walked again from that topic
    (:func:`answer_set`), and every end it reaches on a walk that does not pass a node twice, after
    ``answers`` (which keep their order), at most ``limit`` answers in all. A method whose decisions
    end on one entity of a set ("which films did [X] star in": one film) then returns the set its chain
    names, each answer on a verified path.

    Args:
        kg: the knowledge graph.
        answers: the method's answers (labels), best first.
        candidates: ``{label: the verified paths ending at it}`` (as
            :func:`~kg_agents.core.decide.answer_candidates` gives them), the first path of a label the
            best.
        topics: the question's topic entities: the chain starts at one; they are never answers.
        limit: the most answers returned (and ends read).
        read_limit: a method's own per-entity read cap: the chain's walk reads at most this many ends
            (None: ``limit``).

    Example:
        >>> from kg_agents.kg.memory import MemoryKG
        >>> kg = MemoryKG([("Splash", "starred", "Tom Hanks"), ("Big", "starred", "Tom Hanks"),
        ...                ("Splash", "directed_by", "Ron Howard")])
        >>> one = Path.from_text("Tom Hanks -> ~starred -> Splash")
        >>> c = complete_answers(kg, ["Splash"], {"Splash": [one]}, topics=["Tom Hanks"], limit=10)
        >>> c.answers, c.chain, [p.to_text() for p in c.paths]
        (['Splash', 'Big'], ['~starred'], ['Tom Hanks -> ~starred -> Big'])
    """
    if not isinstance(limit, int) or isinstance(limit, bool) or limit < 1:
        raise ConfigError(f"limit must be a positive integer, got {limit!r}")
    starts = list(dict.fromkeys(topics))
    out = Completed(answers=list(answers)[:limit])
    walked = next(
        (p for a in out.answers for p in candidates.get(a, ()) if p.hops and p.start in starts), None
    )
    if walked is None or walked.start is None or len(out.answers) >= limit:
        return out
    out.start, out.chain = walked.start, path_relations(walked)
    reads = limit if read_limit is None else max(1, min(limit, read_limit))
    found = answer_set(kg, {walked.start: [out.chain]}, limit=reads, exclude=starts)
    out.truncated = found.truncated
    have = {a.casefold() for a in out.answers}
    for e in found.answers:
        if len(out.answers) >= limit:
            break
        walk = found.support[e][0]
        if len(set(walk.entities)) < len(walk.entities):
            continue  # a walk that turns back to a node it passed (a writer's own film, to himself)
        lab = kg.label(e)
        if lab.casefold() not in have:
            have.add(lab.casefold())
            out.answers.append(lab)
            out.paths.append(walk)
    return out


def chain_combinations(
    sizes: Sequence[int], top_m: int, max_tries: int = MAX_TRIES
) -> list[tuple[tuple[int, ...], ...]]:
    """Which ranked relation paths each topic walks, try by try: first the ``top_m`` best of every
    topic together, then one per topic, the best sum of ranks first (ties: the earlier topics' better
    paths first), at most ``max_tries`` in all.

    Example:
        >>> chain_combinations([2, 2], 1)
        [((0,), (0,)), ((0,), (1,)), ((1,), (0,)), ((1,), (1,))]
    """
    first = tuple(tuple(range(min(top_m, n))) for n in sizes)
    singles = sorted(itertools.product(*(range(n) for n in sizes)), key=lambda c: (sum(c), c))
    out = [first, *(tuple((i,) for i in c) for c in singles)]
    return list(dict.fromkeys(out))[:max_tries]


@dataclass
class Meeting:
    """What :func:`meet` found.

    Attributes:
        found: the answer set of the first combination whose walks meet (None: none met).
        walks: the relation paths of each topic that met (or of the last combination tried).
        tries: how many combinations were walked.
    """

    found: AnswerSet | None
    walks: dict[str, list[list[str]]]
    tries: int

    @property
    def met(self) -> bool:
        """Whether the walks met (an answer reached from every topic entity)."""
        return self.found is not None


def meet(
    kg: Any,
    ranked: Mapping[str, Sequence[Sequence[str]]],
    *,
    top_m: int,
    limit: int,
    max_tries: int = MAX_TRIES,
    first: Iterable[str] = (),
    exclude: Iterable[str] = (),
) -> Meeting:
    """Walk each topic's ranked relation paths until the walks meet: first the ``top_m`` best of every
    topic together, then one path per topic, the best ranks first (:func:`chain_combinations`).

    Args:
        kg: the knowledge graph.
        ranked: ``{topic entity: its relation paths, best first}`` (``~relation`` walked backwards).
        top_m: relation paths of each topic walked together on the first try.
        limit, first, exclude: as for :func:`answer_set`.
        max_tries: the most combinations walked.

    Raises:
        ConfigError: as :func:`answer_set`, or ``top_m`` below 1.

    Example:
        >>> from kg_agents.kg.memory import MemoryKG
        >>> kg = MemoryKG([("Splash", "starred", "Tom Hanks"), ("Splash", "directed_by", "Ron Howard"),
        ...                ("Splash", "year", "1984")])
        >>> m = meet(kg, {"Tom Hanks": [["~starred", "year"], ["~starred"]],
        ...               "Ron Howard": [["~directed_by"]]}, top_m=1, limit=10)
        >>> m.met, m.tries, m.found.answers
        (True, 2, ['Splash'])
    """
    if not isinstance(top_m, int) or isinstance(top_m, bool) or top_m < 1:
        raise ConfigError(f"top_m must be a positive integer, got {top_m!r}")
    if not ranked or any(not paths for paths in ranked.values()):
        raise ConfigError("meet needs at least one relation path for each topic entity")
    topics = list(ranked)
    walks: dict[str, list[list[str]]] = {}
    tries = 0
    for combo in chain_combinations([len(ranked[t]) for t in topics], top_m, max_tries):
        tries += 1
        walks = {t: [list(ranked[t][i]) for i in idx] for t, idx in zip(topics, combo, strict=True)}
        got = answer_set(kg, walks, limit=limit, first=first, exclude=exclude)
        if got.answers:
            return Meeting(got, walks, tries)
    return Meeting(None, walks, tries)


def from_every_topic(
    candidates: Mapping[str, Sequence[Path]], topics: Sequence[str]
) -> dict[str, list[Path]]:
    """The candidates reached from every topic entity, each with its first path from each, in the topics'
    order (a method that finds paths otherwise than by walking chains: retrieved triples, decoded paths).

    Args:
        candidates: ``{answer: the (verified) paths ending at it}``, best first.
        topics: the topic entities (distinct, in order).

    Example:
        >>> a, b = Path.from_text("A -> r -> X"), Path.from_text("B -> s -> X")
        >>> {k: [p.to_text() for p in v] for k, v in from_every_topic(
        ...     {"X": [b, a], "Y": [Path.from_text("A -> r -> Y")]}, ["A", "B"]).items()}
        {'X': ['A -> r -> X', 'B -> s -> X']}
    """
    starts = list(dict.fromkeys(topics))
    out: dict[str, list[Path]] = {}
    for answer, paths in candidates.items():
        first = {t: next((p for p in paths if p.start == t), None) for t in starts}
        if starts and all(first.values()):
            out[answer] = [p for p in first.values() if p is not None]
    return out
