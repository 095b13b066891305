"""Constraint questions: a chain's answers narrowed by a value the question states.

A constraint question ("what did [Steven Spielberg] direct in 1993", "which [Tom Hanks] films are in
French") asks for the answers of a chain that also hold an attribute value. Every method finds the
chain's answers; :func:`narrow` then looks for the value among the answers' one-hop neighbours:

- **candidates**: each neighbour ``v`` of an answer ``a`` (either direction, the KG's own relations),
  with the relation that joins them, whose label occurs in the question as whole words. Labels and the
  question are normalised alike (lower case, accents dropped, punctuation and ``_`` read as a space;
  unlike answer matching, articles count: a title "The Fall" needs "the fall"), and a question word
  also reads as its singular (a trailing *s*, *es*, or *ies* read as *y*: "westerns" holds
  "western"). Words inside a ``[bracketed]`` mention or a topic entity's label do not count; a topic
  entity, a value whose label is a topic's and a label made of stop-words only are never values (an
  answer may be one: a whole set that mixes films and years keeps the films of the year it names).
- **narrowing**: a candidate counts only if some but not all of the answers read hold it. Among those,
  the one chosen has the longest label (characters, normalised), then keeps the most answers, then
  comes first by label, relation and id: never by set or hash order.
- **result**: the answers that hold it, in their order; each gets the verified path
  ``answer -> relation -> value`` (``~relation`` when the triple points at the answer).

- **a chain one hop too far**: a walk that went on to the attribute itself ("what did [Steven Spielberg]
  direct in 1993" answered with the years of his films, "which horror films has [X] been in" with
  their genres) leaves nothing to narrow. Where no value narrows the answers, :func:`step_back` takes
  the best answer's verified path of two hops or more from a topic entity, walks its chain less the
  last hop again from that topic (:func:`~kg_agents.core.conjunction.answer_set`) and narrows those
  ends as above; if the value found is held by the last hop's relation, the chain went one hop too
  far, and its answers are those ends, each with its chain and ``end -> relation -> value``.
- **another relation from the topic**: where the chain's answers hold no value, it did not go too far
  and the question has one topic entity (a conjunction's answers need a path from each),
  :func:`step_aside` narrows the topic entity's own neighbours (any relation): "what did [Terence
  Fisher] direct in 1959" answered with the films he wrote finds the films he directed that year.
- **a chain one hop short**: where neither finds the value, :func:`step_on` narrows the answers'
  neighbours ("which horror films feature actors from [Beyond Re-Animator]" answered with the actors
  finds their horror films), each with the method's path to its answer, one hop on, verified.

Bounds: one ``neighbors_many`` call reads the first ``max_read`` answers' neighbours (``fanout``
triples each) and at most ``max_values`` values are labelled, those more answers hold first; when a
constraint applies, the answers past ``max_read`` go too (unchecked: the trace counts them). The steps
read the same way: at most ``max_read`` sources (topic entities or answers), ``fanout`` triples each, and
of their neighbours the first ``max_read`` are narrowed; a source with ``fanout`` triples or more (a
hub, its neighbours read only in part) is passed over. Within one :func:`constrain_update` a label is
read once.

Example:
    >>> from kg_agents.kg.memory import MemoryKG
    >>> kg = MemoryKG([("Jaws", "directed_by", "Steven Spielberg"), ("Jaws", "release_year", "1975"),
    ...                ("Hook", "directed_by", "Steven Spielberg"), ("Hook", "release_year", "1991")])
    >>> got = narrow(kg, "what did [Steven Spielberg] direct in 1991", ["Steven Spielberg"], ["Jaws", "Hook"])
    >>> got.answers, [p.to_text() for p in got.paths]
    (['Hook'], ['Hook -> release_year -> 1991'])
"""

from __future__ import annotations

import dataclasses
import unicodedata
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from langgraph.graph import END

from kg_agents.core.conjunction import answer_set, path_relations
from kg_agents.core.context import run_context
from kg_agents.core.metering import metered
from kg_agents.core.records import error_update
from kg_agents.errors import ConfigError, KGAgentsError
from kg_agents.kg.base import Path, verify_path
from kg_agents.kg.matching import STOPWORDS, loose_key
from kg_agents.kg.text import BRACKETED

__all__ = [
    "CONSTRAINT_NODE",
    "FANOUT",
    "MAX_READ",
    "MAX_VALUES",
    "Constraint",
    "Narrowed",
    "check_constraint",
    "constrain_update",
    "end_with_constraint",
    "make_constrain_node",
    "mentioned",
    "narrow",
    "step_aside",
    "step_back",
    "step_on",
]

#: The most answers whose neighbours are read.
MAX_READ = 100
#: The most triples read per answer.
FANOUT = 200
#: The most distinct candidate values labelled (one ``label`` read each: a round trip on an endpoint).
MAX_VALUES = 100
#: The name of the node every method ends with.
CONSTRAINT_NODE = "constrain"


@dataclass(frozen=True)
class Constraint:
    """The value a question states: ``answer -> relation -> value`` (``~relation``: the triple points
    at the answer); ``label`` is the value's label."""

    relation: str
    value: str
    label: str


@dataclass
class Narrowed:
    """What :func:`narrow` found.

    Attributes:
        answers: the answers kept, in their order (all of them when no constraint applied).
        paths: the constraint's path for each kept answer, verified (empty when none applied).
        constraint: the constraint applied (None: none).
        read: answers whose neighbours were read; unchecked: answers past the cap.
        candidates: the question's values the answers read hold; values_cut: ``max_values`` cut them.
    """

    answers: list[str]
    paths: list[Path] = field(default_factory=list)
    constraint: Constraint | None = None
    read: int = 0
    unchecked: int = 0
    candidates: int = 0
    values_cut: bool = False
    stepped: str | None = None

    def trace(self, node: str = CONSTRAINT_NODE) -> dict[str, Any]:
        """The trace step: the value and relation, and how many answers were kept and dropped."""
        step: dict[str, Any] = {"node": node, "read": self.read, "candidates": self.candidates}
        c, kept = self.constraint, len(self.answers)
        if c is None:
            step["constraint"] = None
        else:
            step.update(value=c.value, relation=c.relation, kept=kept, dropped=self.read - kept)
            step["unchecked"] = self.unchecked
        if self.values_cut:
            step["values_cut"] = True
        if self.stepped is not None:
            step["stepped"] = self.stepped
        return step


def _words(text: str) -> list[str]:
    return loose_key(unicodedata.normalize("NFKC", text).replace("_", " ")).split()


def _forms(word: str) -> set[str]:
    if len(word) <= 3 or not word.endswith("s") or word.endswith("ss"):
        return {word}
    es, ies = word.endswith("es"), word.endswith("ies")
    return {word, word[:-1], word[:-2] if es else word, word[:-3] + "y" if ies else word}


def _question_words(question: str, topic_labels: Iterable[str]) -> list[tuple[set[str], bool]]:
    """The question's words (each with its forms) and whether each is inside a topic mention."""
    words: list[str] = []
    masked: list[bool] = []
    for i, part in enumerate(BRACKETED.split(question)):  # the odd parts are inside the brackets
        inside = _words(part)
        words += inside
        masked += [i % 2 == 1] * len(inside)
    for label in topic_labels:
        lw = _words(label)
        for i in range(len(words) - len(lw) + 1):
            if lw and words[i : i + len(lw)] == lw:
                masked[i : i + len(lw)] = [True] * len(lw)
    return [(_forms(w), m) for w, m in zip(words, masked, strict=True)]


def mentioned(label: str, question: str, topic_labels: Iterable[str] = ()) -> bool:
    """Whether ``label`` occurs in ``question`` as whole words, outside every topic mention (see the
    module for the normalisation); a label of stop-words only never does.

    Example:
        >>> mentioned("Western", "which westerns did [Lee Marvin] act in"), mentioned("Lee", "[Lee Marvin]")
        (True, False)
    """
    return _occurs(_words(label), _question_words(question, topic_labels))


def _occurs(label: list[str], question: list[tuple[set[str], bool]]) -> bool:
    n = len(label)
    return not all(w in STOPWORDS for w in label) and any(
        all(not m and w in forms for (forms, m), w in zip(question[i : i + n], label, strict=True))
        for i in range(len(question) - n + 1)
    )


def _label(kg: Any, entity: str) -> str:
    try:
        return str(kg.label(entity))
    except KGAgentsError:
        return entity


def narrow(
    kg: Any,
    question: str,
    topics: Sequence[str],
    answers: Sequence[str],
    *,
    max_read: int = MAX_READ,
    fanout: int = FANOUT,
    max_values: int = MAX_VALUES,
    schema_words: bool = False,
    walked: Iterable[str] = (),
) -> Narrowed:
    """The answers that hold a value the question states (see the module); all of them when none
    narrows.

    Args:
        kg: the knowledge graph (read through ``neighbors_many``, ``label`` and ``has_triple`` only).
        question, topics: the question's text and its topic entities (ids).
        answers: the method's answers, best first.
        max_read, fanout, max_values: the bounds (see the module).
        schema_words: the question's words that name a relation read ("actors" of ``starred_actors``)
            never name a value either (the steps, which narrow entities the question does not ask for).
        walked: with ``schema_words``, the relations walked to reach ``answers`` (a step's first hop),
            whose words name no value either: read or not among a hub's first edges, "country" in
            "the films of the country of [X]" names ``film.film.country``.

    Raises:
        ConfigError: a bound below 1.
        KGError: the KG failed.
    """
    for name, bound in (("max_read", max_read), ("fanout", fanout), ("max_values", max_values)):
        if isinstance(bound, bool) or not isinstance(bound, int) or bound < 1:
            raise ConfigError(f"{name} must be a positive integer, got {bound!r}")
    order = list(dict.fromkeys(a for a in answers if isinstance(a, str) and a))
    read = order[:max_read]
    out = Narrowed(answers=list(order), read=len(read), unchecked=len(order) - len(read))
    if len(read) < 2 or not question.strip():
        return out
    skip, holders = set(topics), dict[tuple[str, str], dict[str, Path]]()
    for a, triples in kg.neighbors_many(read, None, "both", fanout).items():
        for t in triples:
            v = t.other(a)
            if v != a and v not in skip:
                path = Path.from_triples(a, [t])
                holders.setdefault((path.hops[0].relation_text, v), {}).setdefault(a, path)
    holding: dict[str, set[str]] = {}  # value -> the answers that hold it (where that narrows)
    for (_, v), held in ((key, held) for key, held in holders.items() if len(held) < len(read)):
        holding.setdefault(v, set()).update(held)
    values = sorted(holding, key=lambda v: -len(holding[v]))  # stable: then in the answers' order
    out.values_cut = len(values) > max_values
    topic_labels = [_label(kg, t) for t in topics]
    qwords = _question_words(question, topic_labels)
    if schema_words:  # a relation's words in the question name the relation, not a value
        named = {w for rel in [*(r for r, _ in holders), *walked] for w in _words(rel.lstrip("~"))}
        qwords = [(forms, m or bool(forms & named)) for forms, m in qwords]
    topic_keys = {" ".join(_words(x)) for x in [*topics, *topic_labels]}
    labels: dict[str, tuple[str, str]] = {}  # value -> (its label, its normalised words)
    for v in values[:max_values]:
        label = _label(kg, v)
        words = " ".join(_words(label))
        if words not in topic_keys and _occurs(words.split(), qwords):
            labels[v] = (label, words)
    ranked = sorted(  # the longest label, the most answers kept, then by label, relation and id
        ((-len(labels[v][1]), -len(held), labels[v][1], rel, v), held)
        for (rel, v), held in holders.items()
        if v in labels and len(held) < len(read)
    )
    out.candidates = len(ranked)
    for (*_, rel, v), held in ranked:
        kept = [a for a in read if a in held and verify_path(kg, held[a])]
        if 0 < len(kept) < len(read):
            out.answers, out.paths = kept, [held[a] for a in kept]
            out.constraint = Constraint(rel, v, labels[v][0])
            break
    return out


def step_back(
    kg: Any,
    question: str,
    topics: Sequence[str],
    answers: Sequence[str],
    paths: Sequence[Path],
    *,
    max_read: int = MAX_READ,
    fanout: int = FANOUT,
    max_values: int = MAX_VALUES,
) -> Narrowed | None:
    """A chain that went one hop too far, on to the attribute the question constrains, stepped back
    (see the module): the ends of its chain less the last hop, narrowed by :func:`narrow` where the
    value it finds is held by that last hop's relation, each with its verified chain from the topic
    entity and its verified ``end -> relation -> value``. None when the best answer's chain does not
    end so.

    Args:
        kg: the knowledge graph.
        question, topics: the question's text and its topic entities (ids).
        answers: the method's answers (ids, or labels of the ends of ``paths``), best first; the first
            with a verified path of two hops or more from a topic entity is the one stepped back from.
        paths: the method's verified paths.
        max_read, fanout, max_values: :func:`narrow`'s bounds (the shorter chain's walk reads at most
            the smaller of ``max_read`` and ``fanout`` ends).

    Example:
        >>> from kg_agents.kg.memory import MemoryKG
        >>> kg = MemoryKG([("Jaws", "directed_by", "Steven Spielberg"), ("Jaws", "release_year", "1975"),
        ...                ("Hook", "directed_by", "Steven Spielberg"), ("Hook", "release_year", "1991")])
        >>> went_on = [Path.from_text("Steven Spielberg -> ~directed_by -> Jaws -> release_year -> 1975")]
        >>> got = step_back(kg, "what did [Steven Spielberg] direct in 1991", ["Steven Spielberg"],
        ...                 ["1975"], went_on)
        >>> got.answers, [p.to_text() for p in got.paths]
        (['Hook'], ['Steven Spielberg -> ~directed_by -> Hook', 'Hook -> release_year -> 1991'])
    """
    starts = set(topics)
    long = [p for p in paths if len(p) >= 2 and p.start in starts]
    ends = _ends(kg, list(dict.fromkeys(answers))[:max_read], long)
    went = next((p for p in ends.values() if p is not None), None)
    if went is None or went.start is None:
        return None
    relations = path_relations(went)
    shorter = answer_set(kg, {went.start: [relations[:-1]]}, limit=min(max_read, fanout), exclude=topics)
    if len(shorter.answers) < 2:
        return None
    got = narrow(
        kg, question, topics, shorter.answers, max_read=max_read, fanout=fanout, max_values=max_values
    )
    if got.constraint is None or got.constraint.relation != relations[-1]:
        return None
    return _stepped(kg, got, [shorter.support[e][0] for e in got.answers], "back")


def _stepped(kg: Any, got: Narrowed, chains: Sequence[Path], how: str) -> Narrowed:
    """The narrowing ``got`` as it was, stepped ``how``: its answers as labels, and each answer's
    chain (its path in ``chains``, in the answers' order) before its path to the value."""
    return dataclasses.replace(
        got,
        answers=[_label(kg, e) for e in got.answers],
        paths=[p for pair in zip(chains, got.paths, strict=True) for p in pair],
        stepped=how,
    )


def _ahead(
    kg: Any,
    question: str,
    topics: Sequence[str],
    sources: Sequence[str],
    *,
    max_read: int,
    fanout: int,
    max_values: int,
) -> tuple[Narrowed, dict[str, Path]] | None:
    """:func:`narrow` on the neighbours of ``sources`` (neither a source nor a topic), and for each
    neighbour its first hop from a source; None when nothing narrows them. A source with ``fanout``
    triples or more is passed over: what was read of a hub is a cut, not a set to narrow."""
    sources = list(dict.fromkeys(sources))[:max_read]
    skip, hop_to = {*topics, *sources}, dict[str, Path]()
    read = kg.neighbors_many(sources, None, "both", fanout)
    for s in sources:
        triples = read.get(s, ())
        if len(triples) >= fanout:  # a hub: its neighbours read are a cut, not a set to narrow
            continue
        for t in triples:
            x = t.other(s)
            if x not in skip:
                hop_to.setdefault(x, Path.from_triples(s, [t]))
    got = narrow(
        kg,
        question,
        topics,
        list(hop_to)[:max_read],
        max_read=max_read,
        fanout=fanout,
        max_values=max_values,
        schema_words=True,
        walked={p.hops[0].relation_text for p in hop_to.values()},
    )
    return None if got.constraint is None else (got, hop_to)


def _ends(kg: Any, answers: Sequence[str], paths: Sequence[Path]) -> dict[str, Path | None]:
    """Each answer's entity, an id or the label of a path's end (labels read only when some answer is
    not an end), with the first of ``paths`` that ends at it (None: none does), in the answers' order."""
    by_end: dict[str, Path] = {}
    for p in paths:
        if p.end is not None:
            by_end.setdefault(p.end, p)
    by_label: dict[str, str] = {}
    if any(a not in by_end for a in answers):  # answers given as labels: the ends' labels, one read each
        for e in by_end:
            by_label.setdefault(_label(kg, e), e)
    out: dict[str, Path | None] = {}
    for a in answers:
        e = a if a in by_end else by_label.get(a, a)
        out.setdefault(e, by_end.get(e))
    return out


def step_aside(
    kg: Any,
    question: str,
    topics: Sequence[str],
    answers: Sequence[str],
    paths: Sequence[Path],
    *,
    max_read: int = MAX_READ,
    fanout: int = FANOUT,
    max_values: int = MAX_VALUES,
) -> Narrowed | None:
    """The topic entities' own neighbours, any relation, narrowed by the value the question states
    (see the module), for a chain whose answers hold none: each kept neighbour with its verified hop
    from a topic entity and its verified ``neighbour -> relation -> value``. None when nothing narrows
    them. ``answers`` and ``paths`` are not read: the step replaces the method's chain.

    Example:
        >>> from kg_agents.kg.memory import MemoryKG
        >>> kg = MemoryKG([("Jaws", "directed_by", "Steven Spielberg"), ("Jaws", "release_year", "1975"),
        ...                ("Hook", "directed_by", "Steven Spielberg"), ("Hook", "release_year", "1991"),
        ...                ("Poltergeist", "written_by", "Steven Spielberg")])
        >>> got = step_aside(kg, "what did [Steven Spielberg] direct in 1991", ["Steven Spielberg"],
        ...                  ["Poltergeist"], [])
        >>> got.answers, [p.to_text() for p in got.paths]
        (['Hook'], ['Steven Spielberg -> ~directed_by -> Hook', 'Hook -> release_year -> 1991'])
    """
    del answers, paths
    found = _ahead(kg, question, topics, topics, max_read=max_read, fanout=fanout, max_values=max_values)
    if found is None:
        return None
    got, hop_to = found
    return _stepped(kg, got, [hop_to[e] for e in got.answers], "aside")


def step_on(
    kg: Any,
    question: str,
    topics: Sequence[str],
    answers: Sequence[str],
    paths: Sequence[Path],
    *,
    max_read: int = MAX_READ,
    fanout: int = FANOUT,
    max_values: int = MAX_VALUES,
) -> Narrowed | None:
    """A chain one hop short of the entities the question constrains, walked on (see the module): the
    answers' neighbours narrowed by the value the question states, each with the method's path to its
    answer (where one ends there) one hop on, and ``neighbour -> relation -> value``, both verified.
    None when nothing narrows them.

    Args:
        kg: the knowledge graph.
        question, topics: the question's text and its topic entities (ids).
        answers: the method's answers (ids, or labels of the ends of ``paths``), best first; the first
            ``max_read`` are walked on from.
        paths: the method's verified paths.
        max_read, fanout, max_values: :func:`narrow`'s bounds.

    Example:
        >>> from kg_agents.kg.memory import MemoryKG
        >>> kg = MemoryKG([("Re-Animator", "starred_actors", "Jeffrey Combs"),
        ...                ("Re-Animator", "has_genre", "Horror"),
        ...                ("The Frighteners", "starred_actors", "Jeffrey Combs"),
        ...                ("The Frighteners", "has_genre", "Comedy"),
        ...                ("Beyond Re-Animator", "starred_actors", "Jeffrey Combs")])
        >>> short = [Path.from_text("Beyond Re-Animator -> starred_actors -> Jeffrey Combs")]
        >>> got = step_on(kg, "which horror films feature actors from [Beyond Re-Animator]",
        ...               ["Beyond Re-Animator"], ["Jeffrey Combs"], short)
        >>> got.answers
        ['Re-Animator']
        >>> for p in got.paths:  # the method's path to the actor, one hop on; the value's triple
        ...     print(p.to_text())
        Beyond Re-Animator -> starred_actors -> Jeffrey Combs -> ~starred_actors -> Re-Animator
        Re-Animator -> has_genre -> Horror
    """
    ends = _ends(kg, list(dict.fromkeys(answers))[:max_read], paths)
    found = _ahead(kg, question, topics, list(ends), max_read=max_read, fanout=fanout, max_values=max_values)
    if found is None:
        return None
    got, hop_to = found
    chains = []
    for e in got.answers:
        hop = hop_to[e]
        before = ends.get(str(hop.start))
        chains.append(before.extend(hop.hops[0]) if before is not None and before.start in topics else hop)
    return _stepped(kg, got, chains, "on")


class _ReadOnce:
    """The KG with each entity's label, and its neighbours under one (relation, direction, limit), read
    once: the steps of one update read the same values, and :func:`step_on` walks on from the answers
    whose neighbours :func:`narrow` has just read."""

    def __init__(self, kg: Any) -> None:
        self.kg, self.labels = kg, dict[str, str]()
        self.neighbours: dict[tuple[Any, ...], dict[str, Any]] = {}

    def __getattr__(self, item: str) -> Any:
        return getattr(self.kg, item)

    def label(self, entity: str) -> str:
        if entity not in self.labels:
            self.labels[entity] = str(self.kg.label(entity))
        return self.labels[entity]

    def neighbors_many(
        self,
        entities: Sequence[str],
        relation: str | None = None,
        direction: str = "out",
        limit: int | None = None,
    ) -> dict[str, Any]:
        memo = self.neighbours.setdefault((relation, direction, limit), {})
        wanted = list(dict.fromkeys(entities))
        missing = [e for e in wanted if e not in memo]
        if missing:
            got = self.kg.neighbors_many(missing, relation, direction, limit)
            memo.update({e: got.get(e, ()) for e in missing})
        return {e: memo[e] for e in wanted}


def constrain_update(
    kg: Any, state: Mapping[str, Any], *, node: str = CONSTRAINT_NODE, **bounds: int
) -> dict[str, Any]:
    """A state update narrowing ``state``'s answers by the constraint its question states: the kept
    answers, the method's paths less those that end at a dropped answer plus the constraint's paths,
    and a trace step. Where none narrows the answers, the first of :func:`step_back`,
    :func:`step_aside` and :func:`step_on` (these two for one topic entity only: a conjunction's answers
    need a path from each) that finds the value: its answers and paths replace the method's. Only the
    trace step when none applies. ``bounds``: :func:`narrow`'s.
    """
    kg = _ReadOnce(kg)
    answers = list(state.get("answers") or [])
    question, topics = str(state.get("question") or ""), list(state.get("topic_entities") or [])
    got = narrow(kg, question, topics, answers, **bounds)  # type: ignore[arg-type]
    if got.constraint is None:
        paths = list(state.get("paths") or [])
        steps = (step_back, step_aside, step_on) if len(topics) == 1 else (step_back,)
        for step in steps:  # a hop away from several topics' walks would be supported by one: not there
            moved = step(kg, question, topics, answers, paths, **bounds)
            if moved is not None:  # the value is a hop away from the chain's answers: its ends answer
                return {"answers": moved.answers, "paths": moved.paths, "trace": [moved.trace(node)]}
        return {"trace": [got.trace(node)]}
    dropped = set(answers) - set(got.answers)
    paths = [p for p in state.get("paths") or [] if p.end not in dropped]
    kept = list(dict.fromkeys([*paths, *got.paths]))
    return {"answers": got.answers, "paths": kept, "trace": [got.trace(node)]}


def check_constraint(value: object) -> bool:
    """``value`` if it is True or False (the ``constraint`` option); a ``ConfigError`` otherwise."""
    if not isinstance(value, bool):
        raise ConfigError(f"constraint must be True or False, got {value!r}")
    return value


def make_constrain_node(
    kg: Any, defaults: Any, *, name: str = CONSTRAINT_NODE, **bounds: int
) -> Callable[..., dict[str, Any]]:
    """The node a method's graph ends with: :func:`constrain_update` when the run's ``constraint``
    option (the run's context laid over ``defaults``, a method's full context; None: on) is on and
    there are answers (two or more are narrowed; one too is stepped back, see :func:`step_back`).

    A failed KG call or a bad option is recorded in ``errors`` (not halting) and the answers are kept
    as they were. ``bounds``: :func:`narrow`'s.
    """

    @metered
    def constrain(state: Mapping[str, Any], runtime: Any = None) -> dict[str, Any]:
        try:
            value = getattr(run_context(runtime, defaults), "constraint", None)
            on = True if value is None else check_constraint(value)
        except ConfigError as exc:
            return error_update(name, exc)
        if not on or not state.get("answers"):
            return {}
        try:
            return constrain_update(kg, state, node=name, **bounds)
        except KGAgentsError as exc:
            return error_update(name, exc)

    return constrain


def end_with_constraint(
    g: Any, kg: Any, defaults: Any, after: Sequence[str], *, fanout: int = FANOUT
) -> None:
    """End a method's graph ``g`` with the :data:`CONSTRAINT_NODE` node: each node of ``after`` (those
    that gave the final answers) leads to it, and it to the end (see :func:`make_constrain_node`).
    ``fanout``: :func:`narrow`'s; a method with a per-entity read cap of its own passes that cap, so that
    every read of its graph keeps to it."""
    g.add_node(CONSTRAINT_NODE, make_constrain_node(kg, defaults, fanout=fanout))
    for node in after:
        g.add_edge(node, CONSTRAINT_NODE)
    g.add_edge(CONSTRAINT_NODE, END)
