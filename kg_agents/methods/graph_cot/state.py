"""Graph-CoT's per-run context, its graph state, and the validated settings of one run.

The factories build a full :class:`GraphCoTContext` from their options; a run's context sets some
fields (the others are ``None``) and :func:`~kg_agents.core.context.run_context` lays them over the
factory's. :func:`run_settings` validates the result and adds the derived values (``k_eff``,
``t_eff``, ``levels``) that the nodes read from ``state["settings"]``.

Example:
    >>> from kg_agents.core.context import merge_context
    >>> ctx = merge_context(GraphCoTContext("tot", "score", 3, 1, 3, 10, 0), {"k": 2})
    >>> s = run_settings(ctx)
    >>> s["strategy"], s["k_eff"], s["t_eff"], s["levels"]
    ('tot', 2, 1, 3)
"""

from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from kg_agents.core.hops import HOPS_MODES, check_hops
from kg_agents.core.state import ReasoningState
from kg_agents.errors import ConfigError

__all__ = [
    "EVALUATORS",
    "HOPS_MODES",
    "MAX_LEVELS",
    "STRATEGIES",
    "Evaluator",
    "GraphCoTContext",
    "GraphCoTState",
    "Strategy",
    "check_hops",
    "merge_dicts",
    "run_settings",
]

Strategy = Literal["cot", "tot", "got"]
Evaluator = Literal["select", "score"]
STRATEGIES = ("cot", "tot", "got")
EVALUATORS = ("select", "score")
#: The most levels (``depth`` or ``max_steps``) a run may take.
MAX_LEVELS = 60


@dataclass
class GraphCoTContext:
    """Per-run overrides of the factory's options (``None`` keeps the factory's value).

    Attributes:
        strategy: ``cot``, ``tot`` or ``got``.
        evaluator: ``select`` (Selection vote) or ``score`` (Score vote).
        k: candidate thoughts per state (ToT/GoT).
        t: states kept per parent (ToT/GoT).
        depth: tree depth D (ToT/GoT).
        max_steps: chain length n (CoT).
        search_depth: KG search depth d (``graph_explore``).
        decide: ``rank`` (choices ranked by the model's log-probability) or ``generate`` (written).
        hops: the walk's length on the ranked route: ``"auto"``, ``"predict"``, ``"none"`` or a positive
            integer (see the factories).
        conjunction: on the ranked route, a question with several topic entities is walked from each,
            its answers where the walks meet (:mod:`~kg_agents.methods.graph_cot.conjunction`); None: on.
        constraint: the answers narrowed by a value the question states
            (:mod:`~kg_agents.core.constraint`); None: on.
        whole_set: the best answer's relation chain walked again for the rest of its ends
            (:func:`~kg_agents.core.conjunction.complete_answers`); None: on.
        revisit: ``graph_explore``'s relation chain read as the graph executes a relation path (a walk
            may pass through an entity again and end on a topic entity, :mod:`kg_agents.core.chains`);
            None: off.
    """

    strategy: Strategy | None = None
    evaluator: Evaluator | None = None
    k: int | None = None
    t: int | None = None
    depth: int | None = None
    max_steps: int | None = None
    search_depth: int | None = None
    decide: Literal["rank", "generate"] | None = None
    hops: int | str | None = None
    conjunction: bool | None = None
    constraint: bool | None = None
    whole_set: bool | None = None
    revisit: bool | None = None


def run_settings(ctx: GraphCoTContext) -> dict[str, Any]:
    """The settings of a run from its full context (every field set), validated, with ``k_eff``,
    ``t_eff`` (1 for CoT) and ``levels`` (``max_steps`` for CoT, else ``depth``) added.

    Raises:
        ConfigError: a field is unset or out of range.
    """
    s: dict[str, Any] = {
        "strategy": ctx.strategy,
        "evaluator": ctx.evaluator,
        "k": ctx.k,
        "t": ctx.t,
        "depth": ctx.depth,
        "max_steps": ctx.max_steps,
        "search_depth": ctx.search_depth,
        "decide": ctx.decide or "rank",
        "hops": check_hops("none" if ctx.hops is None else ctx.hops),
        "conjunction": True if ctx.conjunction is None else ctx.conjunction,
        "constraint": True if ctx.constraint is None else ctx.constraint,
        "whole_set": True if ctx.whole_set is None else ctx.whole_set,
        "revisit": False if ctx.revisit is None else ctx.revisit,
    }
    for key in ("conjunction", "constraint", "whole_set", "revisit"):
        if not isinstance(s[key], bool):
            raise ConfigError(f"{key} must be True or False, got {s[key]!r}")
    if s["decide"] not in ("rank", "generate"):
        raise ConfigError(f"decide must be 'rank' or 'generate', got {s['decide']!r}")
    if s["strategy"] not in STRATEGIES:
        raise ConfigError(f"strategy must be one of {STRATEGIES}, got {s['strategy']!r}")
    if s["evaluator"] not in EVALUATORS:
        raise ConfigError(f"evaluator must be one of {EVALUATORS}, got {s['evaluator']!r}")
    for key in ("k", "t", "depth", "max_steps", "search_depth"):
        v = s[key]
        if not isinstance(v, int) or isinstance(v, bool) or v < (0 if key == "search_depth" else 1):
            raise ConfigError(f"{key} must be a positive integer, got {v!r}")
    if s["strategy"] == "cot":
        s.update(k_eff=1, t_eff=1, levels=s["max_steps"])
    else:
        s.update(k_eff=s["k"], t_eff=s["t"], levels=s["depth"])
    if s["levels"] > MAX_LEVELS:
        raise ConfigError(f"at most {MAX_LEVELS} levels (depth/max_steps), got {s['levels']}")
    return s


def merge_dicts(a: dict[str, Any] | None, b: dict[str, Any] | None) -> dict[str, Any]:
    """The reducer of ``scores`` and ``votes``: ``b``'s entries laid over ``a``'s."""
    return {**(a or {}), **(b or {})}


class GraphCoTState(ReasoningState, total=False):
    """State of ``graph_agent`` / ``graph_explore``.

    ``frontier``: the kept states (branches) of the current level; ``candidates``: every generated
    state (filtered by level); ``scores``/``votes``: evaluator results; ``finished``: states that gave
    an answer; ``level``: levels done; ``settings``: the validated options of this run.
    """

    settings: dict[str, Any]
    level: int
    frontier: list[dict[str, Any]]
    candidates: Annotated[list[dict[str, Any]], operator.add]
    finished: Annotated[list[dict[str, Any]], operator.add]
    scores: Annotated[dict[str, float], merge_dicts]
    votes: Annotated[dict[str, list[str]], merge_dicts]
