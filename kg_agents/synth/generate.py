"""``synthesise``: questions with complete answer sets from a knowledge graph alone.

The procedure, deterministic for a seed (everything is sorted before a seeded RNG draws from it; no
hash or set order):

1. **Labels.** One pass over ``kg.iter_labels()`` (at most ``max_entities``) finds the entities whose
   label can stand in brackets for a topic: not empty, no bracket, no line break, no surrounding space,
   at most 100 characters, not an IRI, and unique after the evaluation's normalisation
   (:func:`kg_agents.eval.metrics.normalize_answer`).
2. **Relation paths** (:func:`~kg_agents.synth.schemas.sample_relation_paths`): seeded random walks from
   those entities; a walk never goes on through a hub. A path found from fewer than ``min_topics``
   distinct topics is left out.
3. **Chains.** Each hop count gets its share of ``n`` (``hop_mix``); its relation paths take turns (a
   seeded order each round; ``balance="direction"``: their direction patterns take turns, ``io`` against
   a triple then along one, and each pattern's paths within it), and a path's turn tries its topics until
   one passes every filter. The filters, each counted in ``stats["filters"]`` under its name, in order:

   - ``duplicate_path``: the same topic and relation path as a question already made;
   - ``topic_hub``: the topic has more than ``max_degree`` triples;
   - ``exceeds_cap``: executing the path hit ``cap`` (a frontier of more than ``cap`` entities, or an
     entity with more than ``cap`` neighbours along a step), so the exact answer set is unknown;
   - ``backtrack``: the path goes straight back (a step ``r`` then ``~r`` that only returns to where the
     path was one step before);
   - ``answer_is_topic``: the path only leads back to the topic (the topic is never an answer);
   - ``no_answers``: the path reaches nothing;
   - ``too_many_answers``: more than ``max_answers`` answers;
   - ``intermediate_hub``: an entity the path passes through has more than ``max_degree`` triples;
   - ``answer_label``: an answer's label is empty after normalisation, so no answer could match it;
     with ``unique_answer_labels=True`` also when another entity outside the answer set has the same
     normalised label (the evaluation would take that entity's name for the answer; by default such
     answers are kept, since two entities of one name are one answer to a reader, and on a graph whose
     tags repeat people's names the stricter rule leaves out every well-known person);
   - ``answer_leak``: every form of the path names an answer in the question;
   - ``duplicate_question``: every form gives a question text already made.

4. **Conjunctions** (``kinds`` with ``"conjunction"``): a chain of 1 or 2 hops from one topic with at
   least two answers, one of its answers, and a second topic one hop from that answer; the answers are
   the intersection of the two chains' sets, which must hold 1 to ``max_answers`` entities and be smaller
   than each set (``not_narrower`` counts the pairs that fail). Their hops are the longer chain's.
   **Constraints** (``kinds`` with ``"constraint"``): a chain of 1 or 2 hops from one topic with at least
   two answers, and an attribute of its answers: a step from an answer to a *value*, an entity or literal
   whose every triple is of that one relation in that direction (a year, a language, a genre, a tag;
   ``not_attribute`` counts the others), that is neither the topic, an answer nor on the way. The answers
   are the chain's that have the value, 1 to ``max_answers`` of them and fewer than the chain's
   (``not_narrower``); an answer with more than ``max_degree`` triples leaves the chain out
   (``exceeds_cap``); a value whose label cannot be written in a question is left out (``value_label``).
   The value is written as it is, not in brackets (it is no topic entity); the topic entities are the
   chain's one; the hops the chain's; the gold paths the chain's path to an answer and that answer's
   attribute triple.
5. **Phrasing** (:mod:`kg_agents.synth.phrase`): one form per question drawn by a seeded RNG, among the
   path's generic forms or, with ``paraphrase=True``, the model's rewrites that passed their checks (one
   model call per relation path).
6. **Split.** Within each kind and hop count, questions are ordered by a keyed hash of their topics and
   relation path; the first ``validation_fraction`` go to validation. A question is unique on its topics
   and relation path, so no (topic, path) is in both splits.
"""

from __future__ import annotations

import random
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kg_agents.errors import ConfigError
from kg_agents.eval.metrics import normalize_answer
from kg_agents.kg.base import Hop, KnowledgeGraph, Path, verify_path
from kg_agents.synth import phrase as _phrase
from kg_agents.synth.labels import TopicLabels, read_topic_labels
from kg_agents.synth.phrase import fill_form, forms_for, generic_forms, paraphrase_forms
from kg_agents.synth.questions import QUESTION_KINDS, SynthQuestion, SynthResult
from kg_agents.synth.schemas import (
    CONJUNCTION_SEPARATOR,
    CONSTRAINT_SEPARATOR,
    DEFAULT_CAP,
    MAX_WALKS,
    PathSchema,
    RelationPath,
    Step,
    Walk,
    check_hops,
    format_relation_path,
    gold_path,
    parse_relation_path,
    sample_relation_paths,
    walk,
)
from kg_agents.synth.shares import (
    BALANCES,
    direction_pattern,
    interleave,
    quotas,
    split_questions,
    take_turns,
    weights_of,
    with_changes,
)

__all__ = ["FILTERS", "SYNTHESISED_KINDS", "check_chain", "synthesise"]

#: The kinds :func:`synthesise` makes.
SYNTHESISED_KINDS = ("chain", "conjunction", "constraint")
#: The filters' names in ``stats["filters"]``, in the order they apply (see the module docstring).
FILTERS = (
    "duplicate_path",
    "topic_hub",
    "exceeds_cap",
    "backtrack",
    "answer_is_topic",
    "no_answers",
    "too_many_answers",
    "intermediate_hub",
    "answer_label",
    "not_narrower",
    "not_attribute",
    "value_label",
    "answer_leak",
    "duplicate_question",
)


@dataclass
class _Draft:
    kind: str
    walks: tuple[Walk, ...]
    answers: tuple[str, ...]
    relation_path: str
    constraint: tuple[Step, str] | None = None

    @property
    def topics(self) -> tuple[str, ...]:
        return tuple(w.topic for w in self.walks)

    @property
    def hops(self) -> int:
        return max(len(w.steps) for w in self.walks)


class _Synth:
    """One run's state: the KG, its settings, the filters' counts, what was made."""

    def __init__(self, kg: KnowledgeGraph, labels: TopicLabels, rng: random.Random, **settings: Any) -> None:
        self.kg, self.labels, self.rng = kg, labels, rng
        self.max_answers: int = settings["max_answers"]
        self.max_degree: int = settings["max_degree"]
        self.cap: int = settings["cap"]
        self.unique_labels: bool = settings["unique_answer_labels"]
        self.filters: Counter[str] = Counter()
        self.seen: set[tuple[tuple[str, ...], str]] = set()
        self.good = set(labels.topics)
        self.walks: dict[tuple[str, RelationPath], Walk | str] = {}
        self.degrees: dict[str, int] = {}
        self.value_steps: dict[str, Step | None] = {}
        self.noise: float = settings.get("relation_noise", 0.0)
        self.fillers: list[str] = []
        self.noised = 0

    def degree(self, e: str) -> int:
        if e not in self.degrees:
            self.degrees[e] = self.kg.degree(e, direction="both")
        return self.degrees[e]

    def checked_walk(self, topic: str, steps: RelationPath) -> Walk | str:
        """The walk of ``steps`` from ``topic``, or the name of the first filter it fails (memoised)."""
        key = (topic, steps)
        if key not in self.walks:
            self.walks[key] = self._check(topic, steps)
        return self.walks[key]

    def _check(self, topic: str, steps: RelationPath) -> Walk | str:
        if self.degree(topic) > self.max_degree:
            return "topic_hub"
        w = walk(self.kg, topic, steps, self.cap)
        if w is None:
            return "exceeds_cap"
        if w.backtrack:
            return "backtrack"
        if not w.answers:
            return "answer_is_topic" if w.raw_last == {topic} else "no_answers"
        if any(self.degree(e) > self.max_degree for e in sorted(w.intermediates)):
            return "intermediate_hub"
        return w

    def ambiguous(self, answers: Iterable[str]) -> bool:
        ans = set(answers)
        for a in sorted(ans):
            norm = normalize_answer(self.kg.label(a))
            if not norm:
                return True
            if self.unique_labels and any(o not in ans for o in self.labels.shared.get(norm, ())):
                return True
        return False

    def check_chain(self, topic: str, steps: RelationPath) -> Walk | str:
        """The walk of a chain question, or the name of the first filter it fails."""
        w = self.checked_walk(topic, steps)
        if isinstance(w, str):
            return w
        if len(w.answers) > self.max_answers:
            return "too_many_answers"
        if self.ambiguous(w.answers):
            return "answer_label"
        return w

    def chain(self, schema: PathSchema, topic: str) -> _Draft | None:
        text = schema.text
        if ((topic,), text) in self.seen:
            self.filters["duplicate_path"] += 1
            return None
        w = self.check_chain(topic, schema.steps)
        if isinstance(w, str):
            self.filters[w] += 1
            return None
        self.seen.add(((topic,), text))
        return _Draft("chain", (w,), tuple(sorted(w.answers)), text)

    def base_walk(self, bases: Sequence[PathSchema]) -> tuple[PathSchema, str, Walk] | None:
        """A random base chain, a random topic of it and its walk; None where the walk fails a filter or
        has fewer than two answers (nothing narrower to ask for)."""
        s1 = bases[self.rng.randrange(len(bases))]
        t1 = s1.topics[self.rng.randrange(len(s1.topics))]
        w1 = self.checked_walk(t1, s1.steps)
        if isinstance(w1, str) or len(w1.answers) < 2:
            return None
        return s1, t1, w1

    def conjunction(self, bases: Sequence[PathSchema]) -> _Draft | None:
        """One conjunction from a random base chain, or None (the reason counted)."""
        base = self.base_walk(bases)
        if base is None:
            return None
        s1, t1, w1 = base
        ends = sorted(w1.answers)
        a = ends[self.rng.randrange(len(ends))]
        options: set[tuple[str, Step]] = set()
        for t in self.kg.neighbors(a, direction="both", limit=self.max_degree):
            t2, step = (t.head, (t.relation, "out")) if t.tail == a else (t.tail, (t.relation, "in"))
            if t2 != t1 and t2 not in w1.answers and t2 in self.good:
                options.add((t2, step))
        choices = sorted(options)
        self.rng.shuffle(choices)
        for t2, step in choices[:5]:
            p1, p2 = s1.text, format_relation_path([step])
            text = p1 + CONJUNCTION_SEPARATOR + p2
            if ((t1, t2), text) in self.seen or ((t2, t1), p2 + CONJUNCTION_SEPARATOR + p1) in self.seen:
                self.filters["duplicate_path"] += 1
                continue
            w2 = self.checked_walk(t2, (step,))
            if isinstance(w2, str):
                self.filters[w2] += 1
                continue
            both = w1.answers & w2.answers
            if not both or len(both) >= len(w1.answers) or len(both) >= len(w2.answers):
                self.filters["not_narrower"] += 1
                continue
            if len(both) > self.max_answers:
                self.filters["too_many_answers"] += 1
                continue
            if self.ambiguous(both):
                self.filters["answer_label"] += 1
                continue
            self.seen.add(((t1, t2), text))
            return _Draft("conjunction", (w1, w2), tuple(sorted(both)), text)
        return None

    def value_step(self, value: str) -> Step | None:
        """The one step (from the entities that have it) along which every triple of ``value`` runs, or
        None when its triples are of several relations or directions (memoised)."""
        if value not in self.value_steps:
            out, inn = self.kg.relations(value, "out"), self.kg.relations(value, "in")
            step: Step | None = None
            if not out and len(set(inn)) == 1:
                step = (inn[0], "out")
            elif not inn and len(set(out)) == 1:
                step = (out[0], "in")
            self.value_steps[value] = step
        return self.value_steps[value]

    def attribute_values(self, w: Walk) -> dict[tuple[Step, str], frozenset[str]] | None:
        """Each ``(step, value)`` that some of the walk's answers have, with those answers (the value not the
        topic, an answer nor on the way); None when an answer has more than ``max_degree`` triples."""
        exclude = {w.topic} | w.answers | w.intermediates
        found: dict[tuple[Step, str], set[str]] = {}
        for a in sorted(w.answers):
            tl = self.kg.neighbors(a, direction="both", limit=self.max_degree)
            if tl.truncated:
                return None
            for t in tl:
                step, v = ((t.relation, "out"), t.tail) if t.head == a else ((t.relation, "in"), t.head)
                if v not in exclude:
                    found.setdefault((step, v), set()).add(a)
        return {k: frozenset(v) for k, v in sorted(found.items())}

    def constraint(self, bases: Sequence[PathSchema]) -> _Draft | None:
        """One constraint from a random base chain, or None (the reason counted)."""
        base = self.base_walk(bases)
        if base is None:
            return None
        s1, t1, w1 = base
        found = self.attribute_values(w1)
        if found is None:
            self.filters["exceeds_cap"] += 1
            return None
        choices = sorted(found)
        self.rng.shuffle(choices)
        for step, value in choices[:8]:
            text = s1.text + CONSTRAINT_SEPARATOR + format_relation_path([step])
            kept = found[(step, value)]
            if ((t1, value), text) in self.seen:
                self.filters["duplicate_path"] += 1
            elif len(kept) >= len(w1.answers):
                self.filters["not_narrower"] += 1
            elif self.value_step(value) != step:
                self.filters["not_attribute"] += 1
            elif len(kept) > self.max_answers:
                self.filters["too_many_answers"] += 1
            elif value not in self.good:
                self.filters["value_label"] += 1
            elif self.ambiguous(kept):
                self.filters["answer_label"] += 1
            else:
                self.seen.add(((t1, value), text))
                return _Draft("constraint", (w1,), tuple(sorted(kept)), text, (step, value))
        return None


def check_chain(
    kg: KnowledgeGraph,
    topic: str,
    relation_path: str | Sequence[Step],
    *,
    max_answers: int = 20,
    max_degree: int = 300,
    cap: int = DEFAULT_CAP,
    unique_answer_labels: bool = False,
    labels: TopicLabels | None = None,
) -> Walk | str:
    """The walk of the chain question ``relation_path`` from ``topic`` when it passes every filter of
    :func:`synthesise` that one question can fail alone, else the filter's name (``topic_hub``,
    ``exceeds_cap``, ``backtrack``, ``answer_is_topic``, ``no_answers``, ``too_many_answers``,
    ``intermediate_hub``, ``answer_label``). ``labels`` (from :func:`read_topic_labels`) is read for
    ``unique_answer_labels``.

    Example:
        >>> from kg_agents.kg.memory import MemoryKG
        >>> kg = MemoryKG([("Film", "directed_by", "Ann")])
        >>> sorted(check_chain(kg, "Film", "directed_by").answers)
        ['Ann']
        >>> check_chain(kg, "Film", "directed_by ~directed_by")
        'backtrack'
    """
    if labels is None:
        labels = read_topic_labels(kg) if unique_answer_labels else TopicLabels([], {}, 0, False, 0)
    state = _Synth(
        kg,
        labels,
        random.Random(0),
        max_answers=max_answers,
        max_degree=max_degree,
        cap=cap,
        unique_answer_labels=unique_answer_labels,
    )
    return state.check_chain(topic, parse_relation_path(relation_path))


def _chain_drafts(state: _Synth, schema: PathSchema) -> Iterator[_Draft]:
    topics = list(schema.topics)
    state.rng.shuffle(topics)
    for topic in topics:
        draft = state.chain(schema, topic)
        if draft is not None:
            yield draft


def synthesise(
    kg: KnowledgeGraph,
    *,
    n: int = 1000,
    hops: int | Iterable[int] = (1, 2, 3),
    hop_mix: Mapping[int, float] | Sequence[float] | None = None,
    kinds: Sequence[str] = ("chain",),
    kind_mix: Mapping[str, float] | Sequence[float] | None = None,
    seed: int = 0,
    max_answers: int = 20,
    max_degree: int = 300,
    cap: int = DEFAULT_CAP,
    max_walks: int | None = None,
    min_topics: int = 2,
    max_entities: int = 2_000_000,
    unique_answer_labels: bool = False,
    llm: Any = None,
    paraphrase: bool = False,
    examples: Sequence[str] | None = None,
    relation_noise: float = 0.0,
    balance: str = "path",
    validation_fraction: float = 0.2,
    progress: Callable[[str, int, int], None] | None = None,
) -> SynthResult:
    """Questions with their complete answer sets, from the graph alone (see the module docstring).

    Args:
        kg: the store (any :class:`~kg_agents.kg.base.KnowledgeGraph`).
        n: how many questions (fewer when the graph has fewer that pass; ``stats["shortfall"]`` says where).
        hops: the chains' hop counts (1 to 3).
        hop_mix: the chains' share per hop count (``{1: 0.2, 2: 0.4, 3: 0.4}`` or one weight per hop in
            ``hops``); default equal.
        kinds: question kinds to make: ``chain``, ``conjunction`` and/or ``constraint``.
        kind_mix: the share per kind, as ``hop_mix``; default equal.
        seed: the one seed; two runs with the same arguments give the same questions.
        max_answers: most answers a question may have.
        max_degree: an entity with more triples (both directions) is a hub: never a topic nor passed
            through.
        cap: the execution bound (see :func:`~kg_agents.synth.schemas.walk`).
        max_walks: random walks for the relation paths (default: ``20 * n``, at least
            :data:`~kg_agents.synth.schemas.MAX_WALKS`, at most 200,000).
        min_topics: a relation path the walks followed from fewer distinct topics is left out (counted
            in ``stats["relation_paths"]["rare"]``): one found from a single entity is more often a quirk
            of the data (two things merged under one name) than a question.
        max_entities: most entities read from ``kg.iter_labels()``.
        unique_answer_labels: also leave out questions with an answer whose normalised label another
            entity outside the answer set shares (the ``answer_label`` filter).
        llm: the chat model for ``paraphrase`` (None: the embedded model).
        paraphrase: rewrite each chain relation path's form with ``llm``, once per path.
        examples: a few of the user's own questions, shown to the model for their style.
        relation_noise: the share of chains of 2 or more hops whose question names one hop before the
            last by a common English word instead of its relation's name
            (:func:`~kg_agents.synth.phrase.noised_forms`, ``filler_words``); the record keeps the true
            path and answers. 0 (the default) draws nothing.
        balance: how a hop count's chains are shared: ``"path"`` (the default), equally among the
            relation paths; ``"direction"``, equally among the relation paths' direction patterns (``io``
            for ``~directed_by has_genre``), then among each pattern's paths.
        validation_fraction: the share of each kind and hop count that goes to validation.
        progress: called as ``progress(stage, done, total)`` (stages: ``labels``, ``walks``, ``chains``,
            ``conjunctions``, ``constraints``, ``paraphrase``, ``phrase``).

    Returns:
        A :class:`~kg_agents.synth.questions.SynthResult`; its ``stats`` hold the counts per filter,
        per relation path, per hop and per kind, and the seconds of each stage.

    Raises:
        ConfigError: a bad argument (the message names it).
    """
    t_start = time.perf_counter()
    wanted_hops = check_hops(hops)
    kinds = tuple(dict.fromkeys(kinds))
    bad = [k for k in kinds if k not in SYNTHESISED_KINDS]
    if not kinds or bad:
        raise ConfigError(
            f"kinds must be among {SYNTHESISED_KINDS} (of the vocabulary {QUESTION_KINDS}), got {list(kinds)}"
        )
    for name, value, low in (
        ("n", n, 0),
        ("max_answers", max_answers, 1),
        ("max_degree", max_degree, 1),
        ("min_topics", min_topics, 1),
    ):
        if not isinstance(value, int) or isinstance(value, bool) or value < low:
            raise ConfigError(f"{name} must be an int >= {low}, got {value!r}")
    noise_is_number = isinstance(relation_noise, int | float) and not isinstance(relation_noise, bool)
    if not (noise_is_number and 0 <= relation_noise <= 1):
        raise ConfigError(f"relation_noise must be a number in [0, 1], got {relation_noise!r}")
    if balance not in BALANCES:
        raise ConfigError(f"balance must be one of {BALANCES}, got {balance!r}")
    if not 0.0 <= validation_fraction < 1.0:
        raise ConfigError(f"validation_fraction must be in [0, 1), got {validation_fraction!r}")
    kind_quota = quotas(n, weights_of(kind_mix, kinds, "kind_mix"))
    hop_quota = quotas(kind_quota.get("chain", 0), weights_of(hop_mix, wanted_hops, "hop_mix"))
    seconds: dict[str, float] = {}

    def note(stage: str, t0: float) -> None:
        seconds[stage] = round(time.perf_counter() - t0, 3)

    t0 = time.perf_counter()
    if progress is not None:
        progress("labels", 0, 1)
    labels = read_topic_labels(kg, max_entities)
    if progress is not None:
        progress("labels", 1, 1)
    note("labels", t0)

    t0 = time.perf_counter()
    walk_hops = set(wanted_hops if "chain" in kinds else ())
    if "conjunction" in kinds or "constraint" in kinds:
        walk_hops |= {h for h in (1, 2) if h == 1 or h in wanted_hops}
    walk_stats: dict[str, Any] = {}
    walks_n = max_walks if max_walks is not None else min(200_000, max(MAX_WALKS, 20 * n))
    schemas = sample_relation_paths(
        kg,
        sorted(walk_hops),
        seed=seed,
        starts=labels.topics,
        max_walks=walks_n,
        fanout=max_degree,
        max_topics=max(200, 2 * n // max(1, len(wanted_hops))),
        stats=walk_stats,
        progress=progress,
    )
    rare = [s for s in schemas if s.topics_seen < min_topics]
    schemas = [s for s in schemas if s.topics_seen >= min_topics]
    walk_stats["rare"] = len(rare)
    note("walks", t0)

    rng = random.Random(seed)
    state = _Synth(
        kg,
        labels,
        rng,
        max_answers=max_answers,
        max_degree=max_degree,
        cap=cap,
        unique_answer_labels=unique_answer_labels,
        relation_noise=float(relation_noise),
    )
    drafts: list[_Draft] = []
    t0 = time.perf_counter()
    for h in wanted_hops if "chain" in kinds else ():
        if progress is not None:
            progress("chains", len(drafts), kind_quota["chain"])
        group = {s.text: _chain_drafts(state, s) for s in schemas if s.hops == h}
        if balance == "direction":  # the direction patterns take turns, then their relation paths
            by_pattern: dict[str, dict[str, Iterator[_Draft]]] = {}
            for p, drafts_of in group.items():
                by_pattern.setdefault(direction_pattern(p), {})[p] = drafts_of
            group = {d: interleave(paths, rng) for d, paths in by_pattern.items()}
        drafts += take_turns(group, hop_quota[h], rng)
    if progress is not None and "chain" in kinds:
        progress("chains", len(drafts), kind_quota["chain"])
    note("chains", t0)

    tries = {"conjunction": 0, "constraint": 0}
    bases = [s for s in schemas if s.hops in walk_hops and s.hops <= 2]
    for kind, make in (("conjunction", state.conjunction), ("constraint", state.constraint)):
        t0 = time.perf_counter()
        quota = kind_quota.get(kind, 0)
        found: dict[str, list[_Draft]] = {}
        made = 0
        while quota and bases and made < 3 * quota and tries[kind] < 30 * quota + 100:
            tries[kind] += 1
            if progress is not None and tries[kind] % 500 == 0:
                progress(f"{kind}s", made, 3 * quota)
            d = make(bases)
            if d is not None:
                found.setdefault(d.relation_path, []).append(d)
                made += 1
        drafts += take_turns({k: iter(v) for k, v in found.items()}, quota, rng)
        if progress is not None and quota:
            progress(f"{kind}s", 3 * quota, 3 * quota)
        note(f"{kind}s", t0)

    t0 = time.perf_counter()
    para_stats: dict[str, Any] = {}
    paraphrased: dict[str, list[str]] | None = None
    if paraphrase:
        used = sorted({d.relation_path for d in drafts if d.kind == "chain"})
        paraphrased = paraphrase_forms(llm, used, examples, stats=para_stats, progress=progress)
    note("paraphrase", t0)

    t0 = time.perf_counter()
    if relation_noise:  # no filler is a word of the graph's own relations
        state.fillers = _phrase.filler_words({r for s in schemas for r, _ in s.steps})
    questions = _phrase_all(state, drafts, paraphrased, progress)
    if progress is not None:
        progress("phrase", len(drafts), len(drafts))
    note("phrase", t0)
    questions = split_questions(questions, validation_fraction, seed)
    order = list(range(len(questions)))
    rng.shuffle(order)
    questions = [with_changes(questions[i], id=f"synth-{k:06d}") for k, i in enumerate(order)]
    note("total", t_start)

    chains = [q for q in questions if q.kind == "chain"]
    per_hop = Counter(q.hops for q in chains)
    shortfall = {f"chain_{h}_hop": hop_quota[h] - per_hop.get(h, 0) for h in hop_quota}
    for kind in ("conjunction", "constraint"):
        if kind in kinds:
            shortfall[kind] = kind_quota[kind] - sum(q.kind == kind for q in questions)
    stats = {
        "kg": getattr(kg, "name", None),
        "kg_fingerprint": kg.fingerprint(),
        "seed": seed,
        "settings": {
            "n": n,
            "hops": list(wanted_hops),
            "kinds": list(kinds),
            "max_answers": max_answers,
            "max_degree": max_degree,
            "cap": cap,
            "max_walks": walks_n,
            "min_topics": min_topics,
            "unique_answer_labels": unique_answer_labels,
            "validation_fraction": validation_fraction,
            "paraphrase": paraphrase,
            "balance": balance,
        },
        "n": len(questions),
        "train": sum(q.split == "train" for q in questions),
        "validation": sum(q.split == "validation" for q in questions),
        "per_kind": dict(sorted(Counter(q.kind for q in questions).items())),
        "per_hop": {str(h): per_hop.get(h, 0) for h in wanted_hops},
        "per_relation_path": dict(sorted(Counter(q.relation_path for q in questions).items())),
        "per_direction": dict(sorted(Counter(direction_pattern(q.relation_path) for q in chains).items())),
        "shortfall": shortfall,
        "filters": {f: state.filters.get(f, 0) for f in FILTERS},
        "conjunction_tries": tries["conjunction"],
        "constraint_tries": tries["constraint"],
        "entities": {
            "read": labels.read,
            "capped": labels.capped,
            "topics": len(labels.topics),
            "bad_topic_label": labels.bad_topic_label,
        },
        "relation_paths": {
            "found": len(schemas) + walk_stats["rare"],
            "kept": len(schemas),
            "per_hop": {str(h): sum(s.hops == h for s in schemas) for h in sorted(walk_hops)},
            **walk_stats,
        },
        "paraphrase": para_stats,
        "relation_noise": {"share": float(relation_noise), "questions": state.noised},
        "seconds": seconds,
    }
    return SynthResult(questions, stats)


def _phrase_all(
    state: _Synth,
    drafts: Sequence[_Draft],
    paraphrased: Mapping[str, list[str]] | None,
    progress: Callable[[str, int, int], None] | None,
) -> list[SynthQuestion]:
    kg, rng = state.kg, state.rng
    texts: set[str] = set()
    out: list[SynthQuestion] = []
    for i, d in enumerate(drafts):
        if progress is not None and i % 500 == 0:
            progress("phrase", i, len(drafts))
        topic_labels = [kg.label(t) for t in d.topics]
        answer_labels = [kg.label(a) for a in d.answers]
        value = kg.label(d.constraint[1]) if d.constraint else None
        if d.kind == "chain":
            forms = forms_for(paraphrased, d.relation_path)
            fallback = generic_forms(d.relation_path)
            if d.hops > 1 and state.noise and rng.random() < state.noise:
                word = rng.choice(state.fillers)
                forms = fallback = _phrase.noised_forms(d.relation_path, rng.randrange(d.hops - 1), word)
                state.noised += 1
        else:
            forms = fallback = generic_forms(d.relation_path, d.kind)
        first = list(forms)
        rng.shuffle(first)
        rest = [f for f in fallback if f not in first]
        rng.shuffle(rest)
        chosen = reason = None
        for form in first + rest:
            text = fill_form(form, topic_labels, value)
            if _phrase.leaks_answer(text, topic_labels, answer_labels):
                reason = reason or "answer_leak"
                continue
            if text in texts:
                reason = "duplicate_question"
                continue
            chosen = (form, text)
            break
        if chosen is None:
            state.filters[reason or "answer_leak"] += 1
            continue
        form, text = chosen
        texts.add(text)
        answer = d.answers[0]
        paths = [gold_path(w, answer) for w in d.walks]
        if d.constraint:
            (rel, direction), v = d.constraint
            paths.append(Path((Hop(answer, rel, v, direction == "in"),)))
        if not all(verify_path(kg, p) for p in paths):  # pragma: no cover - a walk follows the KG's triples
            raise AssertionError(f"a gold path of {d.relation_path!r} does not verify")
        out.append(
            SynthQuestion(
                id="",
                question=text,
                answers=d.answers,
                topic_entities=d.topics,
                hops=d.hops,
                kind=d.kind,
                relation_path=d.relation_path,
                gold_path=paths[0].to_text(),
                template=form,
                split="",
                answer_labels=tuple(answer_labels),
                gold_paths=tuple(p.to_text() for p in paths),
                constraint=(format_relation_path([d.constraint[0]]), d.constraint[1]) if d.constraint else (),
            )
        )
    return out
