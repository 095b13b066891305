"""GCR with several topic entities: paths decoded from each, an answer at the end of a path from every one.

A conjunction ("which films starring [Tom Hanks] did [Ron Howard] direct") asks for the entities reached
from every topic entity. With ``conjunction`` on (default) and the trie on, a question with several topic
entities gets one KG-Trie per topic entity (built and cached as for one) and K paths decoded from each
(:func:`~kg_agents.methods.gcr.nodes.decode`, one decoder call per topic entity, the prompt naming that
topic; each trie holds the paths of 1 to the question's hop count, as a conjunction's chains may differ in
length). :func:`reason_conjunction` then takes, for each topic entity, the relation paths of its verified
decoded paths, the fewest hops first, then in beam order, and walks them
(:func:`~kg_agents.core.conjunction.meet`: the first of each, then the next combinations, the best ranks
first) until the walks meet. Every entity where they
meet is an answer, whether or not a beam ended there (a beam shows one end of a relation path; the walk
reaches all of them), best first, each with one verified path from each topic entity. When no
combination meets, the question has no answer (a ``NoMeeting`` error).

The order: the general model ranks the answers (``decide="rank"``; ``"generate"``: those it names first,
then the rest in the walks' order), or without one (``general_llm=None``) the hypotheses' vote, then the
walks' order.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kg_agents.core.answers import parse_answers
from kg_agents.core.conjunction import meet, path_relations
from kg_agents.core.decide import ground_answers, rank
from kg_agents.core.metering import invoke_llm
from kg_agents.core.nodes import verified_paths_update
from kg_agents.core.records import error_record
from kg_agents.kg.base import Path

__all__ = ["NO_MEETING", "WALK_LIMIT", "decoded_relation_paths", "reason_conjunction"]

#: The message of a conjunction whose decoded paths do not meet.
NO_MEETING = "the paths decoded from the topic entities do not meet: no entity ends a path from every one"
#: The most ends read per topic entity and relation path when the decoded relation paths are walked.
WALK_LIMIT = 500


def decoded_relation_paths(paths: list[Path], topics: list[str]) -> dict[str, list[list[str]]]:
    """For each topic entity, the distinct relation paths of the verified paths that start there, the
    fewest hops first, then in their (beam) order; a topic entity without one is left out. (The walks
    then meet nearest first: the films two actors share before the genres their films share.)

    Example:
        >>> texts = ("A -> r -> X -> g -> G", "B -> s -> X", "A -> r -> Y", "A -> q -> Z")
        >>> decoded_relation_paths([Path.from_text(t) for t in texts], ["A", "B"])
        {'A': [['r'], ['q'], ['r', 'g']], 'B': [['s']]}
    """
    out: dict[str, list[list[str]]] = {}
    for t in topics:
        rels = list(dict.fromkeys(tuple(path_relations(p)) for p in paths if p.start == t and p.hops))
        if rels:
            out[t] = [list(r) for r in sorted(rels, key=len)]
    return out


def reason_conjunction(
    deps: Any, state: Mapping[str, Any], ctx: Any, voted: list[str], messages: Any
) -> dict[str, Any]:
    """The answers of a conjunction from its decoded paths (see the module): the entities where the
    walks along each topic's decoded relation paths meet, best first, each with one verified path from
    each topic entity; none (``NoMeeting``) when they do not meet.

    Args:
        deps: the graph's :class:`~kg_agents.methods.gcr.nodes.GCRDeps`.
        state: the state after ``verify_paths``.
        ctx: the run's :class:`~kg_agents.methods.gcr.graph.GCRContext`.
        voted: the hypothesis answers by vote (:func:`~kg_agents.methods.gcr.nodes.vote`).
        messages: the reasoning prompt over the decoded paths, for the general model.
    """
    topics = list(dict.fromkeys(state.get("topic_entities") or []))
    ranked = decoded_relation_paths(list(state.get("paths") or []), topics)
    trace: dict[str, Any] = {"node": "reason", "conjunction": True, "walks_from": ranked}
    meeting = meet(deps.kg, ranked, top_m=1, limit=WALK_LIMIT) if len(ranked) == len(topics) else None
    found = meeting.found if meeting else None
    trace.update(
        met=found is not None,
        tries=meeting.tries if meeting else 0,
        checked_back=found.checked_back if found else [],
    )
    if found is None:
        err = error_record("reason", NO_MEETING, type="NoMeeting")
        return {"answers": [], "paths": [], "trace": [trace], "errors": [err]}
    trace["walks"] = meeting.walks if meeting else {}
    labels = {deps.kg.label(e): e for e in found.answers}
    support = {lab: list(found.support[e]) for lab, e in labels.items()}
    # the hypotheses that name an answer first, then the walks' order
    named, _, _ = ground_answers(voted, support)
    order = list(dict.fromkeys([*named, *labels]))
    if deps.general is not None and len(order) > 1:
        trace.update(mode="general_llm", decide=ctx.decide)
        if ctx.decide == "rank":
            ranking = rank(deps.general, messages, order, role="answer", keys=order)
            trace.update(ranking.as_trace())
            if ranking.matched:
                order = [ranking.options[i] for i in ranking.order()]
        else:
            raw = str(invoke_llm(deps.general, messages).content)
            written, _, _ = ground_answers(parse_answers(raw), support)
            order = list(dict.fromkeys([*written, *order]))
            trace["raw"] = raw
    else:
        trace["mode"] = "vote" if deps.general is None else "general_llm"
    answers = order[: ctx.max_answers]
    update = verified_paths_update(deps.kg, [p for a in answers for p in support[a]], node="reason")
    update["answers"] = answers
    update["trace"] = [{**trace, "answers": len(answers)}, *update["trace"]]
    return update
