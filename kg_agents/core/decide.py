"""Decisions and grounded answers: what every method does when its LLM chooses, and with its answers.

- :func:`rank` ranks options with the model (:func:`kg_agents.llm.ranking.rank_options`) and counts the
  ranking as one LLM call, with its real token counts, on the node's meter.
- :func:`answer_candidates` collects the KG nodes that end a method's verified paths: the only answers a
  method may return.
- :func:`ground_answers` maps free-text answers (the ``decide="generate"`` route) to those nodes; text
  naming none of them is dropped, and the drop is reported for the ``trace``.
- :func:`ranked_answers` turns a ranking of candidate labels into the answers: the best one and those
  within ``ratio`` of its probability (at most ``max_answers``).

Example:
    >>> from kg_agents.kg.base import Hop, Path
    >>> p = Path((Hop("Splash", "directed_by", "Ron Howard"),))
    >>> cands = answer_candidates(lambda e: e, [p])
    >>> ground_answers(["Ron Howard", "The answer is"], cands)[0], ground_answers(["Tom"], cands)[2]
    (['Ron Howard'], ['Tom'])
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Literal

from langchain_core.messages import BaseMessage

from kg_agents.core.metering import record_usage
from kg_agents.errors import ConfigError
from kg_agents.kg.base import Path
from kg_agents.llm.ranking import Ranking, match_option, rank_options

__all__ = [
    "DECIDE_MODES",
    "ROLES",
    "Decide",
    "Decision",
    "answer_candidates",
    "check_calibrate",
    "check_decide",
    "check_ratio",
    "current_decision",
    "ground_answers",
    "rank",
    "ranked_answers",
    "topic_question",
]

Decide = Literal["rank", "generate"]
DECIDE_MODES: tuple[Decide, ...] = ("rank", "generate")


def check_decide(value: Any) -> Decide:
    """``value`` as a :data:`Decide` mode, or ConfigError naming the valid ones."""
    if value not in DECIDE_MODES:
        raise ConfigError(f"decide must be one of {', '.join(DECIDE_MODES)}, got {value!r}")
    return value  # type: ignore[no-any-return]


def check_calibrate(value: Any) -> bool:
    """``value`` as a ``calibrate`` flag, or ConfigError unless it is True or False."""
    if not isinstance(value, bool):
        raise ConfigError(f"calibrate must be True or False, got {value!r}")
    return value


def topic_question(labels: Iterable[str]) -> str:
    """The question of a calibration baseline (``rank(..., baseline=)``): its words taken out, only its
    topic entities left, each bracketed as KG text.

    Example:
        >>> topic_question(["Splash", "Tom Hanks"])
        '[Splash] [Tom Hanks]'
    """
    from kg_agents.untrusted import kg_text

    return " ".join(f"[{kg_text(label)}]" for label in labels)


def check_ratio(value: Any, name: str = "answer_ratio") -> float:
    """``value`` as a probability ratio in (0, 1], or ConfigError."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= 1:
        raise ConfigError(f"{name} must be a number in (0, 1], got {value!r}")
    return float(value)


#: What a ranked decision chooses (:attr:`Decision.role`): a relation to follow, an entity to keep, whether to
#: stop, the answer among candidate entities, the agent's next action, a vote among thoughts, or a whole
#: chain of relations (one per hop) from the topic entities.
ROLES = ("relation", "entity", "end", "answer", "action", "vote", "chain")


@dataclass(frozen=True)
class Decision:
    """What the ranking in progress decides, for models that learn from or check decisions (the
    specialist's teacher, :mod:`kg_agents.specialist`).

    Attributes:
        role: one of :data:`ROLES`.
        keys: one machine-readable key per option, in the options' order: ``(entity ids, relation,
            direction)`` for ``relation``; an entity id for ``entity`` and ``answer``; ``(stop?, entity
            ids reached)`` for ``end``; the action's parts for ``action``; ``(entity ids, chain)`` for
            ``chain``, the chain one ``(relation, direction)`` per hop. None when the options are
            their own keys.
        complete: the ranking's ``complete`` flag (whether the end-of-turn token is scored).
    """

    role: str
    keys: tuple[Any, ...] | None = None
    complete: bool = True


_DECISION: ContextVar[Decision | None] = ContextVar("kg_agents_decision", default=None)


def current_decision() -> Decision | None:
    """The :class:`Decision` of the ranking in progress in this context (None outside :func:`rank`, or
    when the caller named no role)."""
    return _DECISION.get()


@contextmanager
def _deciding(decision: Decision | None) -> Iterator[None]:
    token = _DECISION.set(decision)
    try:
        yield
    finally:
        _DECISION.reset(token)


def rank(
    llm: Any,
    messages: Sequence[BaseMessage] | str,
    options: Sequence[str],
    *,
    prefix: str = "",
    complete: bool = True,
    per_token: bool = False,
    role: str | None = None,
    keys: Sequence[Any] | None = None,
    baseline: Sequence[BaseMessage] | str | None = None,
) -> Ranking:
    """Rank ``options`` with ``llm``; one LLM call and its tokens go on the current node's meter (none for
    a single option, which needs no call).

    ``role`` and ``keys`` say what is decided (see :class:`Decision`); the model sees them through
    :func:`current_decision` while it ranks, and nothing else changes.

    ``baseline`` calibrates the ranking: the same options are also scored after ``baseline`` (the prompt
    with the question's words taken out, say), and each option's score becomes its log-probability after
    ``messages`` less its log-probability after ``baseline``: how much the question raises it. This is
    the domain-conditional PMI of "Surface Form Competition: Why the Highest Probability Answer Isn't
    Always Right"; it stops an option that the model finds likely whatever the question (a common
    relation, the one the prompt's example uses) from winning every decision. It costs a second LLM
    call (counted on the meter), and applies on the log-probability route only (another route's ranking is
    returned as it is, with ``extra["calibrated"]`` False). The uncalibrated scores are kept in
    ``extra["uncalibrated"]``.
    """
    if role is not None and role not in ROLES:
        raise ConfigError(f"role must be one of {', '.join(ROLES)}, got {role!r}")
    if keys is not None and len(keys) != len(options):
        raise ConfigError(f"{len(keys)} keys for {len(options)} options")
    decision = None
    if role is not None:
        decision = Decision(role, tuple(keys) if keys is not None else None, complete)
    with _deciding(decision):
        ranking = rank_options(llm, messages, options, prefix=prefix, complete=complete, per_token=per_token)
        if ranking.route != "only":
            record_usage(llm_calls=1, input_tokens=ranking.input_tokens, output_tokens=ranking.output_tokens)
        if baseline is None or ranking.route == "only":
            return ranking
        if ranking.route != "logprobs":
            ranking.extra["calibrated"] = False
            return ranking
    # the baseline decides nothing: a model that learns from decisions (the specialist's teacher) must
    # not take it for one
    base = rank_options(llm, baseline, options, prefix=prefix, complete=complete, per_token=per_token)
    record_usage(llm_calls=1, input_tokens=base.input_tokens, output_tokens=base.output_tokens)
    if base.route != "logprobs":
        ranking.extra["calibrated"] = False
        return ranking
    scores = tuple(a - b for a, b in zip(ranking.scores, base.scores, strict=True))
    return Ranking(
        ranking.options,
        scores,
        ranking.route,
        input_tokens=ranking.input_tokens + base.input_tokens,
        output_tokens=ranking.output_tokens + base.output_tokens,
        extra={**ranking.extra, "calibrated": True, "uncalibrated": ranking.scores},
    )


def answer_candidates(
    label: Callable[[str], str], paths: Iterable[Path], exclude: Iterable[str] = ()
) -> dict[str, list[Path]]:
    """``{label of the node ending a path: the paths ending there}``, in path order.

    Args:
        label: the KG's ``label`` (entity id -> display name).
        paths: verified paths.
        exclude: entity ids never to offer (the question's topic entities).
    """
    skip = set(exclude)
    out: dict[str, list[Path]] = {}
    for p in paths:
        end = p.end
        if end is None or end in skip:
            continue
        out.setdefault(label(end), []).append(p)
    return out


def ground_answers(
    texts: Sequence[str], candidates: Mapping[str, Sequence[Path]]
) -> tuple[list[str], list[Path], list[str]]:
    """Map free-text answers to candidate KG nodes.

    A text maps to the candidate label it equals after normalisation, else to the longest label it
    names (see :func:`kg_agents.llm.ranking.match_option`).

    Returns:
        ``(answers, paths, dropped)``: the candidate labels named, best first and distinct; the paths
        ending at them; the texts that named no candidate.
    """
    labels = list(candidates)
    answers: list[str] = []
    dropped: list[str] = []
    for text in texts:
        i = match_option(text, labels) if labels else None
        if i is None:
            dropped.append(text)
        elif labels[i] not in answers:
            answers.append(labels[i])
    paths = [p for a in answers for p in candidates[a]]
    return answers, paths, dropped


def ranked_answers(ranking: Ranking, *, max_answers: int, ratio: float) -> list[str]:
    """The best option and every other whose probability is at least ``ratio`` times the best's.

    Example:
        >>> r = Ranking(("a", "b", "c"), (-1.0, -1.2, -5.0), "logprobs")
        >>> ranked_answers(r, max_answers=5, ratio=0.5), ranked_answers(r, max_answers=5, ratio=1.0)
        (['a', 'b'], ['a'])
    """
    if not ranking.matched or not ranking.options:
        return []
    probs = ranking.probabilities()
    order = ranking.order()
    top = probs[order[0]]
    return [ranking.options[i] for i in order if probs[i] >= ratio * top and probs[i] > 0][:max_answers]
