"""Supervision for every ranked decision, derived from the KG and a question's gold answers.

The :class:`Teacher` is a chat model that knows the right options. It is given a question's topic
entities, gold answers and, where known, hop count. It finds the gold paths between them in the KG: the
walks of that many hops along the relation chains that best explain the answers (:func:`best_chain_hops`),
or all shortest paths when the hop count is not known (as GCR derives its path supervision). While a
method's graph runs, it scores each ranked decision so that the options on a gold path come first
(:func:`kg_agents.core.decide.rank` publishes what is decided as a
:class:`~kg_agents.core.decide.Decision`):

- ``relation``: a relation (with its direction) that a gold path takes from one of the deciding entities;
- ``entity``: an entity on a gold path;
- ``end``: stop once a gold answer has been reached, go on before;
- ``answer``: a gold answer;
- ``action`` (Graph-CoT's agent): ``Finish`` with a gold answer among the finished labels, else a
  ``NeighborCheck`` along a gold hop, else ``RetrieveNode`` of a gold path's start;
- ``chain`` (a relation chain ranked whole, by graph_explore and knowledge_navigator): a relation chain
  that best explains the answers, when the question's hop count is known.

Running a method's own graph with the teacher walks the gold trajectory and meets every prompt exactly as
the method writes it; each decision is kept as a training example (the prompt, the options and which are
right). Decisions with no right option (the gold answers are off the method's reach) are counted, not
faked, and the teacher then ranks the options as given; decisions whose every option is right are counted
and not kept either (training on the first of them would only teach the options' order). Free-text
calls (a method's similar-question generation, say) get an empty reply.

Example:
    >>> from kg_agents.kg.memory import MemoryKG
    >>> kg = MemoryKG([("Splash", "directed_by", "Ron Howard"), ("Splash", "release_year", "1984")])
    >>> teacher = Teacher(kg)
    >>> teacher.set_question("q1", ["Splash"], ["Ron Howard"])
    True
    >>> sorted(teacher.gold_hops)
    [('Splash', 'directed_by', 'out')]
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import PrivateAttr

from kg_agents.core.decide import Decision, current_decision
from kg_agents.eval.metrics import normalize_answer
from kg_agents.kg.base import Hop, KnowledgeGraph
from kg_agents.kg.paths import best_chains, chain_step, shortest_paths

__all__ = ["Example", "Teacher", "best_chain_hops", "best_chains", "right_options"]

RIGHT, WRONG = 0.0, -10.0


@dataclass
class Example:
    """One ranked decision met on a gold trajectory: the prompt (chat dicts), the scored replies and
    the indices of the right ones."""

    role: str
    method: str
    question_id: str
    chat: list[dict[str, str]]
    replies: list[str]
    right: list[int]
    complete: bool = True

    def to_json(self) -> dict[str, Any]:
        return {
            "role": self.role,
            "method": self.method,
            "id": self.question_id,
            "chat": self.chat,
            "replies": self.replies,
            "right": self.right,
            "complete": self.complete,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Example:
        """The example :meth:`to_json` wrote."""
        return cls(
            data["role"],
            data["method"],
            data["id"],
            data["chat"],
            data["replies"],
            data["right"],
            data["complete"],
        )


@dataclass
class Gold:
    """What a question's gold paths say: hops ``(source, relation, direction)``, node labels on them,
    their starts, the answers' labels (normalised) and, where the question's hop count is known, its
    best relation chains (one ``(relation, direction)`` per hop)."""

    hops: set[tuple[str, str, str]] = field(default_factory=set)
    chains: set[tuple[tuple[str, str], ...]] = field(default_factory=set)
    nodes: set[str] = field(default_factory=set)
    starts: set[str] = field(default_factory=set)
    answers: set[str] = field(default_factory=set)


def right_options(decision: Decision, options: Sequence[str], gold: Gold) -> list[int]:
    """The indices of ``options`` that a gold path supports, for ``decision`` (see the module docstring).

    Options without keys are their own keys (labels). A role with no rule (``vote``) has none.
    """
    keys: tuple[Any, ...] = decision.keys if decision.keys is not None else tuple(options)
    role = decision.role
    if role == "relation":
        return [i for i, (ents, rel, d) in enumerate(keys) if any((e, rel, d) in gold.hops for e in ents)]
    if role == "entity":
        return [i for i, k in enumerate(keys) if normalize_answer(str(k)) in gold.nodes]
    if role == "chain":
        return [i for i, (_, chain) in enumerate(keys) if tuple(map(tuple, chain)) in gold.chains]
    if role == "answer":
        return [i for i, k in enumerate(keys) if normalize_answer(str(k)) in gold.answers]
    if role == "end":
        reached = any(normalize_answer(str(x)) in gold.answers for _, labels in keys for x in labels)
        return [i for i, (stop, _) in enumerate(keys) if bool(stop) == reached]
    if role == "action":
        finish = [
            i
            for i, k in enumerate(keys)
            if k[0] == "finish" and any(normalize_answer(str(x)) in gold.answers for x in k[1])
        ]
        if finish:
            return finish
        hops = [
            i
            for i, k in enumerate(keys)
            if k[0] == "neighbor" and any((n, k[2], k[3]) in gold.hops for n in k[1])
        ]
        if hops:
            return hops
        return [i for i, k in enumerate(keys) if k[0] == "retrieve" and k[1] in gold.starts]
    return []


def best_chain_hops(
    kg: KnowledgeGraph, topics: Sequence[str], answers: Sequence[str], length: int, *, limit: int = 2000
) -> list[Hop]:
    """The hops of the walks (exactly ``length`` hops, from a topic entity to a gold answer) that follow
    the relation chains best explaining the answers (:func:`best_chains`). Empty: no walk.

    Example:
        >>> from kg_agents.kg.memory import MemoryKG
        >>> kg = MemoryKG([("X", "written_by", "W"), ("F", "written_by", "W"), ("F", "starred", "A"),
        ...                ("X", "year", "1999"), ("G", "year", "1999"), ("G", "starred", "A"),
        ...                ("G", "starred", "B")])
        >>> sorted((h.source, h.relation) for h in best_chain_hops(kg, ["X"], ["A"], 3))
        [('F', 'starred'), ('W', 'written_by'), ('X', 'written_by')]
    """
    return _hops_of(best_chains(kg, topics, answers, length, limit=limit))


def _hops_of(chains: Sequence[tuple[Any, list[Hop]]]) -> list[Hop]:
    """The hops of :func:`best_chains`' chains, each once, in order."""
    return list(dict.fromkeys(h for _, hops in chains for h in hops))


class Teacher(BaseChatModel):
    """A chat model that ranks the options a gold path supports first, and records each decision.

    Args:
        kg: the knowledge graph.
        max_hops: longest gold path searched (the methods' hop limit).
        method: the method name written on the examples.
        golds: a dict shared by teachers of the same questions (one per method): each question's gold
            paths are then found once.
        roles: record only the decisions of these roles (None: every role); the others are still
            answered right, so the run walks the gold trajectory to the decisions wanted.
    """

    max_hops: int = 3
    method: str = ""
    roles: frozenset[str] | None = None
    _kg: Any = PrivateAttr(default=None)
    _gold: Gold = PrivateAttr(default_factory=Gold)
    _qid: str = PrivateAttr(default="")
    _examples: list[Example] = PrivateAttr(default_factory=list)
    _counts: Counter[str] = PrivateAttr(default_factory=Counter)
    _golds: dict[Any, Any] = PrivateAttr(default_factory=dict)

    def __init__(self, kg: KnowledgeGraph, *, golds: dict[Any, Any] | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._kg = kg
        if golds is not None:
            self._golds = golds

    @property
    def _llm_type(self) -> str:
        return "kg-agents-teacher"

    @property
    def gold_hops(self) -> set[tuple[str, str, str]]:
        return self._gold.hops

    @property
    def examples(self) -> list[Example]:
        """The decisions recorded so far (with at least one right option)."""
        return self._examples

    @property
    def counts(self) -> Counter[str]:
        """``shortest_fallback`` (questions with no walk of their hop count: see :meth:`set_question`),
        ``role`` (decisions recorded), ``role:no_right`` (skipped: no option on a gold path),
        ``role:all_right`` (skipped: every option is on a gold path, so the decision teaches nothing),
        ``unlabelled`` (rankings that named no role, and the baselines of calibrated rankings: see
        :func:`kg_agents.core.decide.rank`)."""
        return self._counts

    def set_question(
        self,
        question_id: str,
        topic_entities: Sequence[str],
        answers: Sequence[str],
        hops: int | None = None,
    ) -> bool:
        """Derive the gold paths of the next question; False when no answer is reachable within
        ``max_hops`` (the question should be skipped).

        With ``hops`` (the question's own hop count, which MetaQA and PathQuestion give), the gold paths
        are the walks of the relation chains of that length that best explain the answers (see
        :func:`best_chain_hops`): a 3-hop question whose answer is also one hop from its topic entity
        is taught its 3-hop chain, not the shortcut. Where no walk of that length exists, the shortest
        paths are used and ``shortest_fallback`` is counted. Without ``hops``, the shortest paths (at
        most ``max_hops``)."""
        self._qid = question_id
        key = (question_id, tuple(topic_entities), tuple(answers), hops, self.max_hops)
        if key not in self._golds:
            self._golds[key] = self._derive_gold(topic_entities, answers, hops)
        self._gold, fallback = self._golds[key]
        if fallback:
            self._counts["shortest_fallback"] += 1
        return bool(self._gold.hops)

    def _derive_gold(
        self, topic_entities: Sequence[str], answers: Sequence[str], hops: int | None
    ) -> tuple[Gold, bool]:
        """A question's :class:`Gold` and whether it fell back to the shortest paths (see
        :meth:`set_question`)."""
        kg = self._kg
        golds = [a for a in answers if kg.has_entity(a)]
        gold = Gold(answers={normalize_answer(a) for a in answers})
        gold.answers |= {normalize_answer(kg.label(a)) for a in golds}
        hop_list: list[Hop] = []
        fallback = False
        if topic_entities and golds:
            if hops is not None and 1 <= hops <= self.max_hops:
                best = best_chains(kg, list(topic_entities), golds, hops)
                gold.chains = {chain for chain, _ in best}
                hop_list = _hops_of(best)
                gold.starts = {h.source for h in hop_list if h.source in topic_entities}
                fallback = not hop_list
            if not hop_list:
                res = shortest_paths(kg, list(topic_entities), golds, self.max_hops, max_paths=200)
                for p in res.paths:
                    if p.start is not None:
                        gold.starts.add(p.start)
                    hop_list.extend(p.hops)
        for h in hop_list:
            gold.hops.add((h.source, *chain_step(h)))
            gold.nodes.add(normalize_answer(kg.label(h.target)))
        return gold, fallback

    def score_options(self, messages: Sequence[BaseMessage], options: Sequence[str]) -> list[float]:
        from kg_agents.llm.chat import messages_to_chat

        decision = current_decision()
        if decision is None:
            self._counts["unlabelled"] += 1
            return [0.0] * len(options)
        right = right_options(decision, options, self._gold)
        if self.roles is not None and decision.role not in self.roles:
            return [RIGHT if i in right else WRONG for i in range(len(options))]
        if not right:
            self._counts[f"{decision.role}:no_right"] += 1
            return [0.0] * len(options)
        if len(right) == len(options):  # every option is right: nothing to learn, nothing to steer
            self._counts[f"{decision.role}:all_right"] += 1
            return [RIGHT] * len(options)
        self._counts[decision.role] += 1
        self._examples.append(
            Example(
                decision.role,
                self.method,
                self._qid,
                messages_to_chat(list(messages)),
                list(options),
                right,
                decision.complete,
            )
        )
        return [RIGHT if i in right else WRONG for i in range(len(options))]

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        self._counts["free_text"] += 1
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=""))])
