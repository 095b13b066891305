"""KnowledgeNavigator's whole relation chains: the chain vote (:func:`rank_chains`) and the conjunction
route (:func:`walk_topics`), a question with several topic entities walked from each of them.

A conjunction ("which films starring [Tom Hanks] did [Ron Howard] direct") is answered by one walk from
each topic entity: for each, the relation chains of one hop up to the question's depth (from the hop
classifier, or the ``hops`` option: a walk of a conjunction is at most as deep as the question) are
ranked against the whole question (each question variant votes, as for a chain question), the top
``M`` are kept, and :func:`~kg_agents.core.conjunction.answer_set` walks them: the answers are the
entities every topic's walk reaches, each with one verified path from each topic entity. When they do not
meet, the next combinations of each topic's ranked chains are tried, the best ranks first
(:func:`~kg_agents.core.conjunction.meet`: which relation of the question belongs to which topic entity is
what a small model most often gets wrong). When none meets (traced as ``met: false``), the question has no
answer (a ``NoMeeting`` error): an answer must be reached from every topic entity. With
``conjunction_fallback`` it falls back to the first topic entity's walk alone, whose answers then have a
path from that topic only. The reasoning step ranks the answers as it ranks a chain question's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from langgraph.runtime import Runtime

from kg_agents.core.chains import chain_example, chain_text, relation_chains, relation_path
from kg_agents.core.conjunction import MAX_TRIES, answer_set, meet
from kg_agents.core.context import run_context
from kg_agents.core.decide import rank
from kg_agents.core.metering import metered
from kg_agents.core.records import error_record, guarded
from kg_agents.methods.knowledge_navigator.knowledge import weighted_vote
from kg_agents.untrusted import kg_text

__all__ = ["MAX_TRIES", "NO_MEETING", "RUNNERS_UP", "rank_chains", "walk_topics"]

#: Runners-up kept per topic entity of a conjunction, after its ``M`` best chains: when the best chains'
#: walks do not meet, the next combinations are tried, best ranks first (at most :data:`MAX_TRIES`).
RUNNERS_UP = 4
#: The message of a conjunction whose walks do not meet.
NO_MEETING = "the walks from the topic entities do not meet: no entity is reached from every one of them"


def rank_chains(
    deps: Any,
    ctx: Any,
    state: Mapping[str, Any],
    voters: Sequence[str],
    weights: Sequence[float],
    calls: int,
    *,
    starts: Sequence[str] | None = None,
    lengths: Sequence[int] | None = None,
    more: int = 0,
    revisit: bool = False,
) -> tuple[dict[str, Any], list[list[list[str]]], int]:
    """The relation chains of the question's depth from its topic entities, each question variant
    ranking them (its top ``K`` are its vote) and the weighted vote keeping the top ``M`` (eq. 3-4, over
    chains instead of one hop's relations).

    ``starts`` (default: the state's ``core``) and ``lengths`` (default: the state's ``hops``) choose
    other walks: one topic entity of a conjunction, chains of each of several lengths. ``more`` adds up
    to that many runners-up after the kept chains, in the original question's order (a conjunction's
    next tries). ``revisit`` lists the chains as :func:`~kg_agents.core.chains.relation_chains` does
    with it (a chain question's walk; a conjunction's walks never revisit).

    Returns ``(trace record, kept chains as [[relation, direction], ...], LLM calls so far)``; no chains
    are kept when the graph has none of that depth (the hops then choose their relations one by one) or
    when the call budget would be passed (``budget_hit`` in the record).
    """
    starts = list(dict.fromkeys(state.get("core") or [] if starts is None else starts))
    lengths = [int(state.get("hops", 1))] if lengths is None else list(lengths)
    options = []
    truncated = False
    for length in lengths:
        found, cut = relation_chains(deps.kg, starts, length, revisit=revisit)
        options += found
        truncated = truncated or cut
    info: dict[str, Any] = {
        "node": "select_chains",
        "hops": lengths[0] if len(lengths) == 1 else lengths,
        "chains": len(options),
        "truncated": truncated,
    }
    if not options:
        return info, [], calls
    if len(options) <= ctx.top_k:  # every voter would pick all of them
        kept = list(range(len(options)))[: ctx.top_m + more]
        info.update(asked_llm=False)
    else:
        per_vote = 2 if ctx.calibrate else 1  # calibration: a second call
        if calls + per_vote * len(voters) > ctx.max_llm_calls:
            info["budget_hit"] = True
            return info, [], calls
        entity = ", ".join(kg_text(deps.kg.label(e)) for e in starts)
        example = chain_example(max(lengths), ctx.plan_example)
        tpl = deps.prompts["select_chain_rank"]
        texts = [chain_text(c) for c in options]
        choices: list[list[int]] = []
        rankings = []
        first_order: list[int] = []
        for q in voters:
            ranking = rank(
                deps.llm,
                tpl.format_messages(question=q, entity=entity, example=example),
                texts,
                role="chain",
                keys=[(tuple(starts), c) for c in options],
                baseline=tpl.format_messages(question=f"[{entity}]", entity=entity, example=example)
                if ctx.calibrate
                else None,
            )
            choices.append(ranking.order()[: ctx.top_k])
            rankings.append(ranking.as_trace(top=5))
            if not first_order:
                first_order = ranking.order()
        calls += per_vote * len(voters)
        scores, kept = weighted_vote(choices, weights, len(options), ctx.top_m)
        info.update(asked_llm=True, example=bool(example), rankings=rankings, scores=scores[:50])
        if more:
            kept = list(dict.fromkeys([*kept, *first_order]))[: len(kept) + more]
    chosen = [[[r, d] for r, d in options[i]] for i in kept]
    info["kept"] = [relation_path(tuple((r, d) for r, d in c)) for c in chosen]
    return info, chosen, calls


@metered
@guarded("walk_topics")
def walk_topics(deps: Any, state: Mapping[str, Any], runtime: Runtime[Any] | None = None) -> dict[str, Any]:
    """The conjunction route (see the module): one walk from each topic entity, its relation chains
    (1 to ``hops`` hops) ranked against the whole question, and the answers where the walks meet, each
    with a verified path from every topic entity; no answer when they do not meet (with
    ``conjunction_fallback``: the first topic's walk alone)."""
    ctx = run_context(runtime, deps.defaults)
    topics = list(dict.fromkeys(state.get("topic_entities") or []))
    voters = [state["question"], *(state.get("variants") or [])]
    weights = [ctx.original_weight] + [ctx.variant_weight] * (len(voters) - 1)
    calls = state.get("retrieval_llm_calls", 0)
    lengths = list(range(1, int(state.get("hops", 1)) + 1))
    trace: list[dict[str, Any]] = []
    ranked: dict[str, list[list[str]]] = {}  # per topic: the kept chains, then the runners-up
    for t in topics:
        info, chains, calls = rank_chains(
            deps, ctx, state, voters, weights, calls, starts=[t], lengths=lengths, more=RUNNERS_UP
        )
        trace.append({**info, "topic": t})
        if info.get("budget_hit"):
            stop = f"max_llm_calls={ctx.max_llm_calls} reached ranking the relation chains of {t}"
            return {"trace": trace, "retrieval_llm_calls": calls, "stop_reason": stop, "conjunction": {}}
        if chains:
            ranked[t] = [relation_path(tuple((r, d) for r, d in c)) for c in chains]
    met = len(ranked) == len(topics) and len(ranked) > 0
    meeting = meet(deps.kg, ranked, top_m=ctx.top_m, limit=deps.fanout_limit) if met else None
    got = meeting.found if meeting else None
    walks = meeting.walks if meeting else {}
    tries = meeting.tries if meeting else 0
    fallback = False
    if got is None:
        met = False
        first = next(iter(ranked), None)
        if ctx.conjunction_fallback and first:  # the option: the first topic's walk alone
            fallback = True
            walks = {first: ranked[first][: ctx.top_m]}
            got = answer_set(deps.kg, walks, limit=deps.fanout_limit, exclude=topics)
    support = {} if got is None else {e: [p.to_text() for p in got.support[e]] for e in got.answers}
    retrieved = list(
        dict.fromkeys(t for ps in (got.support.values() if got else ()) for p in ps for t in p.triples)
    )
    trace.append(
        {
            "node": "walk_topics",
            "walks": walks,
            "met": met,
            "fallback": fallback,
            "tries": tries,
            "ends": got.ends if got else {},
            "answers": len(support),
            "fanout_truncated": got.truncated if got else [],
            "checked_back": got.checked_back if got else [],
        }
    )
    update: dict[str, Any] = {
        "conjunction": support,
        "retrieved": retrieved,
        "retrieval_llm_calls": calls,
        "trace": trace,
    }
    if got is None:  # no answer: none is reached from every topic entity
        update.update(
            answers=[], paths=[], errors=[error_record("walk_topics", NO_MEETING, type="NoMeeting")]
        )
    return update
