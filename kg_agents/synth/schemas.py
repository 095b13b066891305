"""Relation-path schemas: their text, their discovery by seeded random walks, and their execution.

A *relation path* is a sequence of steps ``(relation, direction)``, ``"out"`` along the stored triple and
``"in"`` against it (as :func:`kg_agents.kg.paths.chain_step` writes a hop). Its text joins the steps
with a space and marks a step against its triple with ``~``, as path texts do
(``"directed_by ~starred_actors"``). A relation name that holds whitespace, ``%``, ``&`` or a leading
``~`` has those characters percent-encoded (``"has%20genre"``), so every text parses back to its steps. A
conjunction's relation path joins its chains' texts with ``" & "``; a constraint's joins its chain's text
and its attribute step's with ``" | "``.

Executing a relation path from a topic entity gives its exact answer set: every entity at the end of a
walk along the steps, the topic excluded (as :func:`kg_agents.kg.paths.follow_chain`). Execution is
bounded: a step whose frontier, or one entity's neighbours along the step, exceed ``cap`` gives no set
(``None``) rather than a cut one.

Example:
    >>> from kg_agents.kg.memory import MemoryKG
    >>> kg = MemoryKG([("Film", "directed_by", "Ann"), ("Film2", "directed_by", "Ann")])
    >>> steps = parse_relation_path("directed_by ~directed_by")
    >>> steps
    (('directed_by', 'out'), ('directed_by', 'in'))
    >>> format_relation_path(steps) == "directed_by ~directed_by"
    True
    >>> sorted(execute(kg, "Film", steps))
    ['Film2']
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote

from kg_agents.errors import ConfigError
from kg_agents.kg.base import INVERSE_PREFIX, Hop, KnowledgeGraph, Path

__all__ = [
    "CONJUNCTION_SEPARATOR",
    "CONSTRAINT_SEPARATOR",
    "DEFAULT_CAP",
    "DEFAULT_FANOUT",
    "MAX_HOPS",
    "MAX_WALKS",
    "PathSchema",
    "RelationPath",
    "Step",
    "Walk",
    "check_hops",
    "execute",
    "format_relation_path",
    "gold_path",
    "inverse_step",
    "parse_relation_path",
    "sample_relation_paths",
    "walk",
]

#: One step of a relation path: ``(relation, "out")`` along the stored triple, ``"in"`` against it.
Step = tuple[str, str]
#: A relation path: its steps from the topic entity to the answers.
RelationPath = tuple[Step, ...]

#: The longest relation path the synthesiser discovers and phrases.
MAX_HOPS = 3
#: Default bound of :func:`execute`: most entities in one step's frontier, and most neighbours of one
#: entity along one step.
DEFAULT_CAP = 500
#: Default most neighbour triples a random walk reads at one entity; an entity with more is a hub there,
#: and no walk goes on through it.
DEFAULT_FANOUT = 200
#: Default number of random walks :func:`sample_relation_paths` makes (its bound on work: each walk reads
#: at most ``MAX_HOPS`` neighbour lists).
MAX_WALKS = 20_000
#: Joins the chains of a conjunction's relation path.
CONJUNCTION_SEPARATOR = " & "
#: Joins a constraint's chain and its attribute step (``~directed_by | release_year``: the answers of the
#: chain that have a value along the step). A relation name's spaces are escaped, so it never holds it.
CONSTRAINT_SEPARATOR = " | "

_ESCAPE = re.compile(r"[%&\s]")


def _escape(relation: str) -> str:
    text = _ESCAPE.sub(lambda m: "".join(f"%{b:02X}" for b in m.group(0).encode("utf-8")), relation)
    return "%7E" + text[1:] if text.startswith(INVERSE_PREFIX) else text


def format_relation_path(steps: Iterable[Step]) -> str:
    """The text of a relation path (see the module docstring).

    Example:
        >>> format_relation_path([("has genre", "in"), ("written_by", "out")])
        '~has%20genre written_by'
    """
    parts = []
    for rel, direction in steps:
        if direction not in ("out", "in"):
            raise ConfigError(f"a step's direction must be 'out' or 'in', got {direction!r}")
        if not rel:
            raise ConfigError("a step needs a relation name")
        parts.append((INVERSE_PREFIX if direction == "in" else "") + _escape(rel))
    if not parts:
        raise ConfigError("a relation path needs at least one step")
    return " ".join(parts)


def parse_relation_path(text: str | Sequence[Step]) -> RelationPath:
    """The steps of a relation path's text (a sequence of steps is checked and returned as a tuple).

    Raises:
        ConfigError: an empty text, a conjunction (``" & "``), or a bad step.
    """
    if not isinstance(text, str):
        steps = tuple((str(r), str(d)) for r, d in text)
        format_relation_path(steps)  # checks every step
        return steps
    if CONJUNCTION_SEPARATOR.strip() in text:
        raise ConfigError(f"{text!r} is a conjunction; parse each of its chains (split on ' & ')")
    if CONSTRAINT_SEPARATOR in text:
        raise ConfigError(f"{text!r} is a constraint; parse its chain and its step (split on ' | ')")
    out: list[Step] = []
    for part in text.split():
        inverse = part.startswith(INVERSE_PREFIX)
        rel = unquote(part[1:] if inverse else part)
        if not rel:
            raise ConfigError(f"an empty relation in relation path {text!r}")
        out.append((rel, "in" if inverse else "out"))
    if not out:
        raise ConfigError("a relation path needs at least one step")
    return tuple(out)


def inverse_step(step: Step) -> Step:
    """The step that walks ``step``'s triples the other way."""
    return (step[0], "in" if step[1] == "out" else "out")


# --------------------------------------------------------------------------- execution
@dataclass(frozen=True)
class Walk:
    """A relation path executed from a topic entity.

    Attributes:
        topic: the start.
        steps: the relation path.
        frontiers: the entities reached after each step, the topic excluded (the last is the answer set).
        raw_last: the last step's entities before the topic was taken out.
        parents: per step, each reached entity's first hop into it (sources and triples in sorted order),
            to rebuild a gold path.
        backtrack: a step ``r`` followed by ``~r`` led back only to entities the path had already been at
            one step before (nothing new: the walk went straight back).
    """

    topic: str
    steps: RelationPath
    frontiers: tuple[frozenset[str], ...]
    raw_last: frozenset[str]
    parents: tuple[Mapping[str, Hop], ...]
    backtrack: bool

    @property
    def answers(self) -> frozenset[str]:
        return self.frontiers[-1] if self.frontiers else frozenset()

    @property
    def intermediates(self) -> frozenset[str]:
        """The entities the path passes through between the topic and the answers."""
        return frozenset().union(*self.frontiers[:-1]) if len(self.frontiers) > 1 else frozenset()


def walk(kg: KnowledgeGraph, topic: str, steps: Sequence[Step] | str, cap: int = DEFAULT_CAP) -> Walk | None:
    """Execute ``steps`` from ``topic`` with every frontier and parent kept; None when ``cap`` was hit
    (a frontier of more than ``cap`` entities, or an entity with more than ``cap`` neighbours along a
    step), so the exact set is unknown. A step that reaches nothing ends the walk with an empty set."""
    path = parse_relation_path(steps)
    if cap < 1:
        raise ConfigError(f"cap must be >= 1, got {cap}")
    frontier: frozenset[str] = frozenset([topic])
    history: list[frozenset[str]] = [frontier]
    frontiers: list[frozenset[str]] = []
    parents: list[dict[str, Hop]] = []
    raw: frozenset[str] = frozenset()
    backtrack = False
    for k, (rel, direction) in enumerate(path):
        inverse = direction == "in"
        nbrs = kg.neighbors_many(sorted(frontier), rel, "in" if inverse else "out", limit=cap)
        reached: dict[str, Hop] = {}
        for src in sorted(frontier):
            tl = nbrs.get(src)
            if tl is None:
                continue
            if tl.truncated:
                return None
            for other in sorted(t.other(src) for t in tl):
                if other not in reached:
                    reached[other] = Hop(src, rel, other, inverse)
        raw = frozenset(reached)
        if raw and k > 0 and path[k - 1] == inverse_step(path[k]) and raw <= history[k - 1] | {topic}:
            backtrack = True
        nxt = raw - {topic}
        if len(nxt) > cap:
            return None
        reached.pop(topic, None)
        frontiers.append(nxt)
        parents.append(reached)
        history.append(nxt)
        frontier = nxt
        if not frontier and k < len(path) - 1:  # nothing further: every later step is empty too
            frontiers.extend(frozenset() for _ in path[k + 1 :])
            parents.extend({} for _ in path[k + 1 :])
            raw = frozenset()
            break
    return Walk(topic, path, tuple(frontiers), raw, tuple(parents), backtrack)


def execute(
    kg: KnowledgeGraph, topic: str, relation_path: Sequence[Step] | str, cap: int = DEFAULT_CAP
) -> frozenset[str] | None:
    """The exact answer set of ``relation_path`` from ``topic`` (the topic excluded), or None when the
    bound ``cap`` was hit (see :func:`walk`).

    Example:
        >>> from kg_agents.kg.memory import MemoryKG
        >>> kg = MemoryKG([("A", "r", "B"), ("A", "r", "C"), ("C", "s", "D")])
        >>> sorted(execute(kg, "A", "r")), sorted(execute(kg, "D", "~s ~r")), execute(kg, "A", "r", cap=1)
        (['B', 'C'], ['A'], None)
    """
    w = walk(kg, topic, relation_path, cap)
    return None if w is None else w.answers


def gold_path(w: Walk, answer: str) -> Path:
    """A path from the walk's topic to ``answer`` along its steps (the first parents, in sorted order).

    Raises:
        ConfigError: ``answer`` is not one of the walk's answers.
    """
    if answer not in w.answers:
        raise ConfigError(
            f"{answer!r} is not an answer of {format_relation_path(w.steps)!r} from {w.topic!r}"
        )
    hops: list[Hop] = []
    node = answer
    for k in range(len(w.steps) - 1, -1, -1):
        hop = w.parents[k][node]
        hops.append(hop)
        node = hop.source
    return Path(tuple(reversed(hops)))


# --------------------------------------------------------------------------- discovery
@dataclass(frozen=True)
class PathSchema:
    """A relation path the random walks found, with the topic entities they found it from.

    Attributes:
        steps: the relation path.
        topics: the distinct start entities of the walks that followed it, sorted (at most
            ``max_topics`` of them are kept).
        topics_seen: how many distinct start entities followed it (a lower bound on how many have it).
    """

    steps: RelationPath
    topics: tuple[str, ...]
    topics_seen: int

    @property
    def text(self) -> str:
        return format_relation_path(self.steps)

    @property
    def hops(self) -> int:
        return len(self.steps)


@dataclass
class _Found:
    topics: set[str] = field(default_factory=set)
    seen: set[str] = field(default_factory=set)


def check_hops(hops: int | Iterable[int]) -> tuple[int, ...]:
    """``hops`` as a sorted tuple of distinct hop counts, each 1..MAX_HOPS; ConfigError otherwise."""
    values = (hops,) if isinstance(hops, int) else tuple(hops)
    if not values or any(
        not isinstance(h, int) or isinstance(h, bool) or not 1 <= h <= MAX_HOPS for h in values
    ):
        raise ConfigError(f"hops must be hop counts from 1 to {MAX_HOPS}, got {hops!r}")
    return tuple(sorted(set(values)))


def sample_relation_paths(
    kg: KnowledgeGraph,
    hops: int | Iterable[int] = (1, 2, 3),
    *,
    seed: int = 0,
    starts: Sequence[str] | None = None,
    max_walks: int = MAX_WALKS,
    fanout: int = DEFAULT_FANOUT,
    max_topics: int = 200,
    stats: dict[str, Any] | None = None,
    progress: Callable[[str, int, int], None] | None = None,
) -> list[PathSchema]:
    """Relation paths of the given hop counts, in both directions, found by seeded random walks.

    Each walk starts at an entity drawn from ``starts`` and takes up to ``max(hops)`` steps; at each
    entity it draws one ``(relation, direction)`` among those that lead to an entity the walk has not
    been at (uniformly, so a rare relation is as likely as a frequent one), then one neighbour along it.
    Every prefix of a length in ``hops`` is a schema, and the start one of its topics. A walk stops at an
    entity with more than ``fanout`` triples (a hub: no schema goes on through one). The work is bounded
    by ``max_walks`` walks of at most ``MAX_HOPS`` neighbour reads each, whatever the KG's size; nothing
    enumerates the graph.

    Args:
        kg: the store.
        hops: the hop counts wanted (1 to ``MAX_HOPS``).
        seed: the walks' seed; the result depends on nothing else (no hash or set order).
        starts: the entities walks start from (default: every entity of ``kg.iter_labels()``).
        max_walks: how many walks.
        fanout: most triples read at one entity.
        max_topics: topics kept per schema (``topics_seen`` counts them all).
        stats: when given, ``walks``, ``kg_calls`` and ``hub_stops`` are added to it.
        progress: called as ``progress("walks", done, max_walks)`` now and then.

    Returns:
        The schemas, sorted by hop count then text.
    """
    wanted = check_hops(hops)
    if max_walks < 0 or fanout < 1 or max_topics < 1:
        raise ConfigError("max_walks must be >= 0, fanout and max_topics >= 1")
    pool = sorted(set(starts)) if starts is not None else sorted(e for e, _ in kg.iter_labels())
    rng = random.Random(seed)
    found: dict[RelationPath, _Found] = {}
    longest = max(wanted)
    calls = hub_stops = 0
    every = max(1, max_walks // 20)
    for w in range(max_walks if pool else 0):
        if progress is not None and w % every == 0:
            progress("walks", w, max_walks)
        topic = pool[rng.randrange(len(pool))]
        cur, visited = topic, {topic}
        steps: RelationPath = ()
        for k in range(1, longest + 1):
            tl = kg.neighbors(cur, direction="both", limit=fanout)
            calls += 1
            if tl.truncated:
                hub_stops += 1
                break
            options: dict[Step, set[str]] = {}
            for t in tl:
                if t.head == cur and t.tail not in visited:
                    options.setdefault((t.relation, "out"), set()).add(t.tail)
                if t.tail == cur and t.head not in visited:
                    options.setdefault((t.relation, "in"), set()).add(t.head)
            if not options:
                break
            keys = sorted(options)
            step = keys[rng.randrange(len(keys))]
            ends = sorted(options[step])
            cur = ends[rng.randrange(len(ends))]
            visited.add(cur)
            steps = (*steps, step)
            if k in wanted:
                f = found.setdefault(steps, _Found())
                f.seen.add(topic)
                if len(f.topics) < max_topics:
                    f.topics.add(topic)
    if progress is not None:
        progress("walks", max_walks, max_walks)
    if stats is not None:
        stats["walks"] = max_walks if pool else 0
        stats["kg_calls"] = calls
        stats["hub_stops"] = hub_stops
    schemas = [PathSchema(s, tuple(sorted(f.topics)), len(f.seen)) for s, f in found.items()]
    return sorted(schemas, key=lambda s: (s.hops, s.text))
