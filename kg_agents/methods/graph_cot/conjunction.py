"""Several topic entities in ``graph_explore`` and ``graph_agent``: one walk from each, the answers where
the walks meet.

A conjunction ("which films starring [Tom Hanks] did [Ron Howard] direct") asks for the entities at the
end of a chain from every topic entity. On the ranked route, a question with several topic entities
(``conjunction``, on by default) takes this route instead of the chain of thoughts: for each topic
entity, the relation chains of 1 hop up to the walk's length (``hops``; 2 where the chain would decide)
are ranked against the whole question (the ``explore_plan_relations`` prompt, as a chain question's plan
is), and :func:`~kg_agents.core.conjunction.meet` walks the best chain of each, then the next
combinations, the best ranks first, until the walks meet. Every entity where they meet is an answer,
ranked best first by the ``final_answer`` prompt over the supporting paths, each with one verified path
from each topic entity. When no combination meets, the question has no answer (a ``NoMeeting`` error):
an answer must be reached from every topic entity.

Example:
    >>> conjunction_route({"topic_entities": ["A", "B"]}, {"decide": "rank", "conjunction": True})
    True
    >>> conjunction_route({"topic_entities": ["A"]}, {"decide": "rank", "conjunction": True})
    False
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kg_agents.core.conjunction import meet
from kg_agents.core.decide import rank
from kg_agents.core.metering import metered
from kg_agents.core.nodes import verified_paths_update
from kg_agents.core.records import error_record, error_update
from kg_agents.errors import KGAgentsError, KGError
from kg_agents.methods.graph_cot.interaction import entity_label, triple_text
from kg_agents.methods.graph_cot.nodes import route_expand
from kg_agents.untrusted import kg_text

__all__ = [
    "CHAINS_KEPT",
    "MAX_ANSWERS",
    "NO_MEETING",
    "WALK_HOPS",
    "conjunction_route",
    "route_prepare",
    "walk_topics",
]

#: The ranked chains of each topic entity the walks may try (the best first).
CHAINS_KEPT = 5
#: The longest walk from each topic entity when the question's depth is not known.
WALK_HOPS = 2
#: The most answers of a conjunction (the whole set where the walks meet, best first).
MAX_ANSWERS = 100
#: The message of a conjunction whose walks do not meet.
NO_MEETING = "the walks from the topic entities do not meet: no entity is reached from every one of them"


def conjunction_route(state: Mapping[str, Any], settings: Mapping[str, Any]) -> bool:
    """Whether a run takes the conjunction route: several distinct topic entities, on the ranked route,
    with ``conjunction`` on."""
    topics = set(state.get("topic_entities") or [])
    return len(topics) > 1 and settings.get("decide", "rank") == "rank" and bool(settings.get("conjunction"))


def route_prepare(state: Mapping[str, Any]) -> Any:
    """After ``prepare``: ``walk_topics`` on the conjunction route, else as :func:`route_expand`."""
    settings = state.get("settings")
    if settings and conjunction_route(state, settings):
        return "walk_topics"
    return route_expand(state)  # type: ignore[arg-type]


@metered
def walk_topics(deps: Any, state: Mapping[str, Any]) -> dict[str, Any]:
    """The conjunction route (see the module): each topic's chains ranked against the whole question,
    the walks until they meet, the answers where they do, best first, each with a path from each topic."""
    method = deps.interaction
    question = state["question"]
    settings = state.get("settings") or {}
    topics = list(dict.fromkeys(state.get("topic_entities") or []))
    lengths = list(range(1, int(settings.get("walk_hops") or WALK_HOPS) + 1))
    trace: list[dict[str, Any]] = []
    ranked: dict[str, list[list[str]]] = {}
    try:
        for t in topics:
            chains, info = method.rank_chains(question, [t], lengths)
            trace.append({"node": "rank_chains", "topic": t, "hops": lengths, **info})
            if chains:
                ranked[t] = chains[:CHAINS_KEPT]
        limit = int(getattr(method, "fanout_limit", 100))
        meeting = meet(method.kg, ranked, top_m=1, limit=limit) if len(ranked) == len(topics) else None
    except KGAgentsError as exc:
        failed = error_update("walk_topics", exc, halted=isinstance(exc, KGError))
        return {"answers": [], "paths": [], **failed, "trace": [*trace, *failed["trace"]]}
    found = meeting.found if meeting else None
    walk = {
        "node": "walk_topics",
        "walks": meeting.walks if meeting else {},
        "met": found is not None,
        "tries": meeting.tries if meeting else 0,
        "ends": found.ends if found else {},
        "fanout_truncated": found.truncated if found else [],
        "checked_back": found.checked_back if found else [],
    }
    if found is None:
        err = error_record("walk_topics", NO_MEETING, type="NoMeeting")
        return {"answers": [], "paths": [], "trace": [*trace, walk], "errors": [err]}
    labels = {entity_label(method.kg, e): e for e in found.answers}
    order = list(labels)
    if len(order) > 1:  # the whole set, best first
        triples = list(dict.fromkeys(t for p in found.paths for t in p.triples))
        chain = "Knowledge Triples:\n" + "\n".join(
            kg_text(triple_text(method.kg, t)) for t in triples[-method.max_context_triples :]
        )
        msgs = method.prompts["final_answer"].format_messages(question=question, chain=chain)
        try:
            ranking = rank(method.model, msgs, order, prefix="Answer: ", role="answer", keys=order)
        except KGAgentsError as exc:
            failed = error_update("walk_topics", exc)
            return {"answers": [], "paths": [], **failed, "trace": [*trace, walk, *failed["trace"]]}
        walk["ranking"] = ranking.as_trace(top=5)
        if ranking.matched:
            order = [ranking.options[i] for i in ranking.order()]
    answers = order[:MAX_ANSWERS]
    update = verified_paths_update(method.kg, [p for a in answers for p in found.support[labels[a]]])
    walk["answers"] = len(answers)
    update["trace"] = [*trace, walk, *update["trace"]]
    update.update(
        answers=answers,
        evidence=[triple_text(method.kg, t) for p in update["paths"] for t in p.triples][:100],
    )
    return update
