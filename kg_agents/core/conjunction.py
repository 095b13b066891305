"""Whole answer sets, and conjunctions: the entities every topic entity's walk reaches, with a supporting
path from each topic.

A chain question ("who directed the films written by [Babaloo Mandel]") has as many answers as its
relation chain has ends, not one. A conjunction ("which films starring [Tom Hanks] did [Ron Howard]
direct") combines chains from several topic entities: its answers are the entities at the end of every
topic's chain, and each answer needs a verified path from each topic. :func:`answer_set` does both:
given, for each topic entity, the relation paths a method chose for its walk, it walks them with
:func:`~kg_agents.core.chains.walk_chain`, keeps the ends that every topic's walk reaches and, for each,
one walk from each topic, verified against the KG.

Example:
    >>> from kg_agents.kg.memory import MemoryKG
    >>> kg = MemoryKG([("Splash", "starred", "Tom Hanks"), ("Big", "starred", "Tom Hanks"),
    ...                ("Splash", "directed_by", "Ron Howard"), ("Cocoon", "directed_by", "Ron Howard")])
    >>> s = answer_set(kg, {"Tom Hanks": [["~starred"]], "Ron Howard": [["~directed_by"]]}, limit=100)
    >>> s.answers, [p.to_text() for p in s.support["Splash"]]
    (['Splash'], ['Tom Hanks -> ~starred -> Splash', 'Ron Howard -> ~directed_by -> Splash'])
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kg_agents.core.chains import walk_chain
from kg_agents.errors import ConfigError
from kg_agents.kg.base import Path, verify_path

__all__ = ["AnswerSet", "answer_set", "path_relations"]


@dataclass
class AnswerSet:
    """What :func:`answer_set` found.

    Attributes:
        answers: the entities every topic's walk reaches, ``first`` first, then in the first topic's
            walk order; each has a verified path from every topic.
        support: for each answer, one verified path from each topic entity, in the topics' order.
        ends: for each topic entity, how many ends its walk reached.
        truncated: ``"topic relation/path"`` for each walk whose ends were cut at ``limit``.
        unverified: ends dropped because a walk to them failed verification.
    """

    answers: list[str] = field(default_factory=list)
    support: dict[str, list[Path]] = field(default_factory=dict)
    ends: dict[str, int] = field(default_factory=dict)
    truncated: list[str] = field(default_factory=list)
    unverified: int = 0

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
        limit: the most ends read per topic and relation path (the cut is in ``truncated``).
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
    for topic, paths in walks.items():
        ends: dict[str, Path] = {}
        for relations in dict.fromkeys(tuple(r) for r in paths):
            w = walk_chain(kg, [topic], list(relations), limit=limit)
            out.truncated.extend(w.truncated)
            for p in w.paths:
                if p.end is not None and p.end not in skip:
                    ends.setdefault(p.end, p)
        out.ends[topic] = len(ends)
        reached.append(ends)
    common = [e for e in reached[0] if all(e in r for r in reached[1:])]
    for e in common:
        support = [r[e] for r in reached]
        if all(verify_path(kg, p) for p in support):
            out.support[e] = support
        else:
            out.unverified += 1
    lead = [e for e in dict.fromkeys(first) if e in out.support]
    out.answers = lead + [e for e in out.support if e not in set(lead)]
    return out
