"""The nodes and routers of ``graph_agent`` / ``graph_explore``, over an explicit :class:`GraphCoTDeps`.

A *branch* is one state of the search (a chain of steps): a dict with its ``id`` (``r``, ``r.1``,
``r.1+r.2`` for a merge), ``parents``, ``group`` (the parent whose children compete), ``order``,
``level``, ``steps``, ``triples`` seen, ``starts`` (entities paths may start from), ``seen`` and
``visited`` (explorer), ``answers`` and ``done``.

The graph (:func:`~kg_agents.methods.graph_cot.graph.build_graph`) binds ``deps`` with
:func:`functools.partial`; called alone, each node takes ``deps`` and its state or ``Send`` payload:

- ``prepare``: the run's settings (factory options with the run's context laid over them), the topic
  entities, the root branch; a bad setting or an empty question ends the question.
- ``route_expand``: one ``Send("expand")`` per unfinished kept branch and candidate (``k_eff``), or
  ``answer`` once no branch is left or the levels are spent.
- ``expand``: one step of a branch (``think`` then ``ground``) as a child candidate.
- ``route_merge`` / ``merge`` (GoT): siblings merged pairwise into a new candidate.
- ``route_evaluate`` / ``score`` / ``vote``: the Score or Selection vote where a group has more
  than ``t_eff`` candidates.
- ``select``: the ``t_eff`` best of each group kept; finished ones set aside.
- ``answer``: the best finished branch's answers (else one final LLM call from the best chain), with
  the verified paths to them through the triples the branch saw.

Example:
    >>> from kg_agents.core.metering import MeteredKG
    >>> from kg_agents.kg import MemoryKG
    >>> from kg_agents.kg.base import Triple
    >>> from kg_agents.methods.graph_cot.interaction import EXPLORE_PROMPTS, ExploreInteraction, load_prompts
    >>> from kg_agents.tools.kg_tools import KGToolbox
    >>> kg = MeteredKG(MemoryKG([Triple("Splash", "directed_by", "Ron Howard")]))
    >>> explorer = ExploreInteraction(
    ...     None, kg, KGToolbox(kg), load_prompts(None, EXPLORE_PROMPTS), 40,
    ...     max_entities=3, max_relations=3, fanout_limit=50, keep_entities=5)
    >>> deps = GraphCoTDeps(explorer, GraphCoTContext("cot", "score", 3, 1, 3, 5, 1))
    >>> update = prepare(deps, {"question": "who directed [Splash]"})
    >>> update["topic_entities"], update["frontier"][0]["id"]
    (['Splash'], 'r')
    >>> [send.node for send in route_expand({"question": "who directed [Splash]", **update})]
    ['expand']
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from langgraph.runtime import Runtime
from langgraph.types import Send

from kg_agents.core.answers import parse_answers
from kg_agents.core.conjunction import complete_answers
from kg_agents.core.context import run_context
from kg_agents.core.decide import ground_answers, rank
from kg_agents.core.hops import question_hops
from kg_agents.core.metering import invoke_llm, metered
from kg_agents.core.nodes import resolve_entities, verified_paths_update
from kg_agents.core.records import error_record, error_update, guarded
from kg_agents.core.state import ErrorRecord
from kg_agents.errors import ConfigError, KGAgentsError, KGError
from kg_agents.kg.base import Triple
from kg_agents.kg.text import bracketed
from kg_agents.methods.graph_cot.interaction import PATH_HOPS, Interaction, triple_text
from kg_agents.methods.graph_cot.parsing import parse_score, parse_selection
from kg_agents.methods.graph_cot.state import GraphCoTContext, GraphCoTState, run_settings

__all__ = [
    "PATH_HOPS",
    "ROOT",
    "GraphCoTDeps",
    "answer",
    "child_branch",
    "collect",
    "collect_merged",
    "expand",
    "halt_prepare",
    "level_candidates",
    "merge",
    "prepare",
    "read_cap",
    "root_branch",
    "route_evaluate",
    "route_expand",
    "route_merge",
    "score",
    "select",
    "vote",
    "walk_hops",
]

#: The id of the root branch.
ROOT = "r"
#: At most this many answers: the cut of a whole answer set (``whole_set``).
MAX_ANSWERS = 100


@dataclass(frozen=True)
class GraphCoTDeps:
    """What the nodes need, bound when the graph is built.

    Attributes:
        interaction: the agent or the explorer (model, metered KG, toolbox, prompts).
        defaults: the factory's full context (every field set); a run's context is laid over it.
        index: an ``EntityIndex`` for topic entities, or None.
        hop_classifier: an object with ``predict(questions, entities) -> list[int]`` for ``hops``
            ``"auto"``/``"predict"`` (None: knowledge_navigator's bundled hop classifier, loaded on the
            first question that needs it).
        auto_hops: what ``hops="auto"`` follows: True the classifier, ``"chain"`` the closest
            relation chain (the KG pack's route, see :func:`~kg_agents.core.hops.pack_hops`); None:
            where a ``hop_classifier`` is given.
    """

    interaction: Interaction
    defaults: GraphCoTContext
    index: Any = None
    hop_classifier: Any = None
    auto_hops: bool | str | None = None


# --------------------------------------------------------------------------- branches
def read_cap(method: Any) -> int | None:
    """The interaction's own per-entity read cap (graph_explore's ``fanout_limit``; None: it has none),
    which the whole set's walk and the constraint step keep to as well."""
    cap = getattr(method, "fanout_limit", None)
    return cap if isinstance(cap, int) and not isinstance(cap, bool) and cap > 0 else None


def root_branch(topic_entities: list[str]) -> dict[str, Any]:
    """The branch a run starts from: no step yet, its paths starting at ``topic_entities``."""
    return {
        "id": ROOT,
        "parents": [],
        "group": "",
        "order": [0, 0],
        "level": 0,
        "steps": [],
        "triples": [],
        "starts": topic_entities,
        "seen": list(topic_entities),
        "visited": [],
        "depth": 0,
        "plan": None,
        "walks": {},
        "attributes": [],
        "answers": None,
        "done": False,
    }


def child_branch(
    parent: dict[str, Any],
    cid: str,
    parents: list[str],
    group: str,
    order: tuple[int, int],
    grounded: dict[str, Any],
    steps: list[dict[str, Any]],
    triples: list[Triple],
) -> dict[str, Any]:
    """The branch ``cid``: ``parent``'s chain (``steps``, ``triples``) with the grounded step added."""
    answers = grounded.get("answers")
    return {
        "id": cid,
        "parents": parents,
        "group": group,
        "order": list(order),
        "level": parent.get("level", 0) + 1,
        "steps": [*steps, grounded["step"]],
        "triples": list(dict.fromkeys([*triples, *grounded.get("triples", [])])),
        "starts": list(dict.fromkeys([*(parent.get("starts") or []), *grounded.get("starts", [])])),
        "seen": grounded.get("seen", parent.get("seen") or []),
        "visited": grounded.get("visited", parent.get("visited") or []),
        "depth": grounded.get("depth", parent.get("depth") or 0),
        "plan": grounded.get("plan", parent.get("plan")),
        "walks": grounded.get("walks", parent.get("walks") or {}),
        "attributes": parent.get("attributes") or [],
        "answers": answers,
        "done": answers is not None,
    }


def level_candidates(state: GraphCoTState) -> dict[str, list[dict[str, Any]]]:
    """The candidates of the level being built, by group, each group in generation order."""
    lvl = state.get("level", 0) + 1
    groups: dict[str, list[dict[str, Any]]] = {}
    for c in sorted(
        (c for c in state.get("candidates") or [] if c["level"] == lvl), key=lambda c: tuple(c["order"])
    ):
        groups.setdefault(c["group"], []).append(c)
    return groups


# --------------------------------------------------------------------------- prepare
def walk_hops(deps: GraphCoTDeps, settings: dict[str, Any], question: str, topics: list[str]) -> int | None:
    """The walk length of a run's ranked route (None: the chain decides when to stop).

    ``hops`` an integer is taken as it is; ``"predict"`` asks the hop classifier (the question with its
    topic entities masked, as knowledge_navigator does); ``"auto"`` does so where the KG pack's route
    says so (``deps.auto_hops``: the bundled MetaQA pack's does), and nowhere else; ``"none"`` and the
    papers' route (``decide="generate"``) give None.
    """
    if settings.get("decide", "rank") != "rank":
        return None
    mode = settings.get("hops", "none")
    return question_hops(
        mode,
        deps.interaction.kg,
        question,
        topics,
        deps.hop_classifier,
        auto=deps.auto_hops,
        revisit=settings.get("revisit", False),
    )


def halt_prepare(error: BaseException | str, *, type: str | None = None, **extra: Any) -> dict[str, Any]:
    """The ``prepare`` update that ends a question before any thought: no answers, the error recorded
    (``type`` names a message's kind; an exception's is its class name)."""
    return {
        "answers": [],
        "paths": [],
        "frontier": [],
        "level": 0,
        **extra,
        **error_update("prepare", error, type=type),
    }


@metered
def prepare(
    deps: GraphCoTDeps, state: GraphCoTState, runtime: Runtime[GraphCoTContext] | None = None
) -> dict[str, Any]:
    """The run's settings, its topic entities (given, else the question's ``[bracketed]`` names, else
    the index's guess) and the root branch."""
    box, index = deps.interaction.box, deps.index
    question = (state.get("question") or "").strip()
    try:
        settings = run_settings(run_context(runtime, deps.defaults))
    except ConfigError as exc:
        return halt_prepare(exc)
    if settings["revisit"] and not deps.interaction.revisits:
        return halt_prepare(ConfigError(f"revisit is not an option of {deps.interaction.name}"))
    if not question:
        return halt_prepare("empty question", type="EmptyQuestion", settings=settings)
    given = state.get("topic_entities") or []
    errors: list[ErrorRecord] = []
    ids: list[str] = []
    try:
        if given:
            ids, unknown = resolve_entities(deps.interaction.kg, index, given)
            if unknown:
                errors.append(error_record("prepare", f"unknown topic entities {unknown}", type="NoEntity"))
        else:
            for m in bracketed(question):  # MetaQA marks the topic entity [so]
                ids.extend(box.lookup(m)[:1])
    except KGError as exc:  # the KG failed (e.g. its endpoint): the question ends here
        return halt_prepare(exc, settings=settings)
    if not given and not ids and index is not None and hasattr(index, "topic_entities"):
        try:
            ids = list(index.topic_entities(question))
        except KGAgentsError as exc:
            errors.append(error_record("prepare", exc))
    try:
        settings["walk_hops"] = walk_hops(deps, settings, question, ids)
    except KGAgentsError as exc:
        return halt_prepare(exc, settings=settings)
    return {
        "topic_entities": ids,
        "settings": settings,
        "frontier": [root_branch(ids)],
        "level": 0,
        "errors": errors,
        "trace": [
            {
                "node": "prepare",
                "topic_entities": ids,
                "strategy": settings["strategy"],
                "evaluator": settings["evaluator"],
                "mode": deps.interaction.mode,
                "hops": settings["walk_hops"],
            }
        ],
    }


# --------------------------------------------------------------------------- expand
def route_expand(state: GraphCoTState) -> Any:
    """One ``Send("expand")`` per unfinished kept branch and candidate; ``"answer"`` when none is left
    or the levels are spent."""
    settings = state.get("settings")
    frontier = [b for b in state.get("frontier") or [] if not b.get("done")]
    if not settings or not frontier or state.get("level", 0) >= settings["levels"]:
        return "answer"
    return [
        Send(
            "expand",
            {"question": state["question"], "settings": settings, "parent": b, "pos": pos, "j": j},
        )
        for pos, b in enumerate(frontier)
        for j in range(settings["k_eff"])
    ]


@metered
def expand(deps: GraphCoTDeps, payload: dict[str, Any]) -> dict[str, Any]:
    """Candidate ``j`` of a branch: one step (``think``, then ``ground``) added to its chain."""
    method = deps.interaction
    parent, settings, question = payload["parent"], payload["settings"], payload["question"]
    cid = f"{parent['id']}.{payload['j'] + 1}"
    try:
        out = method.think(parent, question, {**settings, "candidate": payload["j"]})
        grounded = method.ground(parent, out, question, settings)
    except KGAgentsError as exc:
        return error_update("expand", exc)
    child = child_branch(
        parent,
        cid,
        [parent["id"]],
        parent["id"],
        (payload["pos"], payload["j"]),
        grounded,
        parent.get("steps") or [],
        parent.get("triples") or [],
    )
    rec = {
        "node": "expand",
        "id": cid,
        "thought": grounded["step"].get("thought", ""),
        "action": grounded["step"].get("action"),
        "done": child["done"],
    }
    if grounded.get("malformed"):
        rec["malformed"] = True
    if grounded.get("trace"):
        rec.update(grounded["trace"])
    return {"candidates": [child], "trace": [rec]}


def collect(state: GraphCoTState) -> dict[str, Any]:
    """Joins the ``expand`` tasks of a level."""
    return {}


# --------------------------------------------------------------------------- merge (GoT)
def route_merge(state: GraphCoTState) -> Any:
    """GoT: one ``Send("merge")`` per pair of unfinished siblings ((1, 2), (3, 4), ...); else the
    evaluation (:func:`route_evaluate`)."""
    settings = state["settings"]
    if settings["strategy"] == "got":
        sends = []
        for group, cands in level_candidates(state).items():
            firsts = [c for c in cands if len(c["parents"]) == 1 and not c["done"]]
            for m, i in enumerate(range(0, len(firsts) - 1, 2)):
                sends.append(
                    Send(
                        "merge",
                        {
                            "question": state["question"],
                            "settings": settings,
                            "a": firsts[i],
                            "b": firsts[i + 1],
                            "m": m,
                            "group": group,
                        },
                    )
                )
        if sends:
            return sends
    return route_evaluate(state)


@metered
def merge(deps: GraphCoTDeps, payload: dict[str, Any]) -> dict[str, Any]:
    """The merged chain of siblings ``a`` and ``b`` (eq. 3), its next step a new candidate with both as
    parents."""
    method = deps.interaction
    a, b, question, settings = payload["a"], payload["b"], payload["question"], payload["settings"]
    a_steps = a.get("steps") or []
    merged_steps = a_steps + [s for s in b.get("steps") or [] if s not in a_steps]
    base = {
        **a,
        "steps": merged_steps,
        "triples": list(dict.fromkeys([*(a.get("triples") or []), *(b.get("triples") or [])])),
        "starts": list(dict.fromkeys([*(a.get("starts") or []), *(b.get("starts") or [])])),
        "seen": list(dict.fromkeys([*(a.get("seen") or []), *(b.get("seen") or [])])),
        "visited": list(dict.fromkeys([*(a.get("visited") or []), *(b.get("visited") or [])])),
        "depth": max(int(a.get("depth") or 0), int(b.get("depth") or 0)),
        "level": a["level"] - 1,
    }
    cid = f"{a['id']}+{b['id']}"
    try:
        msg = invoke_llm(
            method.model,
            method.prompts["merge"].format_messages(
                question=question,
                chain_1=method.chain_text(a),
                chain_2=method.chain_text(b),
                merged_chain=method.chain_text({**base, "steps": merged_steps}),
            ),
        )
        grounded = method.ground(base, msg, question, settings)
    except KGAgentsError as exc:
        return error_update("merge", exc)
    grounded["step"]["merged_from"] = [a["id"], b["id"]]
    child = child_branch(
        base,
        cid,
        [a["id"], b["id"]],
        payload["group"],
        (a["order"][0], settings["k_eff"] + payload["m"]),
        grounded,
        merged_steps,
        base["triples"],
    )
    return {
        "candidates": [child],
        "trace": [
            {
                "node": "merge",
                "id": cid,
                "parents": [a["id"], b["id"]],
                "thought": grounded["step"].get("thought", ""),
                "done": child["done"],
            }
        ],
    }


def collect_merged(state: GraphCoTState) -> dict[str, Any]:
    """Joins the ``merge`` tasks of a level."""
    return {}


# --------------------------------------------------------------------------- evaluation
def route_evaluate(state: GraphCoTState) -> Any:
    """Where a group has more than ``t_eff`` candidates: one ``Send("score")`` per candidate (Score
    vote) or one ``Send("vote")`` per group (Selection vote); else ``"select"``."""
    settings = state["settings"]
    sends = []
    for group, cands in level_candidates(state).items():
        if len(cands) <= settings["t_eff"]:
            continue
        if settings["evaluator"] == "score":
            sends += [
                Send("score", {"question": state["question"], "cand": c, "decide": settings.get("decide")})
                for c in cands
            ]
        else:
            payload = {"question": state["question"], "group": group, "cands": cands}
            sends.append(Send("vote", {**payload, "decide": settings.get("decide")}))
    return sends or "select"


@metered
def score(deps: GraphCoTDeps, payload: dict[str, Any]) -> dict[str, Any]:
    """The Score vote of one candidate: a probability in [0, 1] (0 when unreadable or failed)."""
    method = deps.interaction
    cand = payload["cand"]
    messages = method.prompts["score_vote"].format_messages(
        question=payload["question"], thoughts=method.chain_text(cand)
    )
    try:
        if (payload.get("decide") or "rank") == "rank":
            # the expected value of the score under the model's distribution over the ten grades
            grades = [f"{g / 10:.1f}" for g in range(11)]
            probs = rank(method.model, messages, grades).probabilities()
            value: float | None = round(sum(p * g / 10 for g, p in enumerate(probs)), 4)
            return {
                "scores": {cand["id"]: value},
                "trace": [{"node": "score", "id": cand["id"], "score": value}],
            }
        msg = invoke_llm(method.model, messages)
    except KGAgentsError as exc:  # the state keeps score 0 and the run goes on
        return {"scores": {cand["id"]: 0.0}, **error_update("score", exc)}
    value = parse_score(str(msg.content))
    rec: dict[str, Any] = {"node": "score", "id": cand["id"], "score": value}
    if value is None:
        rec["unparsed"] = str(msg.content)[:200]
    return {"scores": {cand["id"]: 0.0 if value is None else value}, "trace": [rec]}


@metered
def vote(deps: GraphCoTDeps, payload: dict[str, Any]) -> dict[str, Any]:
    """The Selection vote of one group: its candidates ranked (the chosen one first, then generation
    order)."""
    method = deps.interaction
    cands = payload["cands"]
    choices = "\n\n".join(f"Choice {i}:\n{method.chain_text(c)}" for i, c in enumerate(cands, 1))
    messages = method.prompts["select_vote"].format_messages(question=payload["question"], choices=choices)
    try:
        if (payload.get("decide") or "rank") == "rank":
            ranking = rank(method.model, messages, [f"Choice {i}" for i in range(1, len(cands) + 1)])
            ranked = [i + 1 for i in ranking.order()]
        else:
            ranked = parse_selection(str(invoke_llm(method.model, messages).content), len(cands))
    except KGAgentsError as exc:  # generation order is kept and the run goes on
        return error_update("vote", exc)
    order = [cands[i - 1]["id"] for i in ranked]
    order += [c["id"] for c in cands if c["id"] not in order]
    return {
        "votes": {payload["group"]: order},
        "trace": [{"node": "vote", "group": payload["group"], "ranking": order, "parsed": bool(ranked)}],
    }


def select(state: GraphCoTState) -> dict[str, Any]:
    """The ``t_eff`` best candidates of each group kept: finished ones into ``finished``, the others
    the next ``frontier``; one level done."""
    settings = state["settings"]
    scores, votes = state.get("scores") or {}, state.get("votes") or {}
    frontier: list[dict[str, Any]] = []
    finished: list[dict[str, Any]] = []
    kept_ids: list[str] = []
    for group, cands in level_candidates(state).items():
        if len(cands) > settings["t_eff"]:
            if settings["evaluator"] == "score":
                cands = sorted(cands, key=lambda c: -scores.get(c["id"], 0.0))
            else:
                rank = {cid: i for i, cid in enumerate(votes.get(group, []))}
                cands = sorted(cands, key=lambda c: rank.get(c["id"], len(rank)))
        kept = cands[: settings["t_eff"]]
        for c in kept:
            c = {**c, "score": scores.get(c["id"])}
            kept_ids.append(c["id"])
            (finished if c["done"] else frontier).append(c)
    level = state.get("level", 0) + 1
    return {
        "frontier": frontier,
        "finished": finished,
        "level": level,
        "trace": [{"node": "select", "level": level, "kept": kept_ids}],
    }


# --------------------------------------------------------------------------- answer
@metered
@guarded("answer")
def answer(deps: GraphCoTDeps, state: GraphCoTState) -> dict[str, Any]:
    """The best finished branch's answers (highest score with the Score vote, else the first kept),
    else one final LLM call from the best unfinished chain; the verified paths to the answers."""
    method = deps.interaction
    settings = state.get("settings") or {}
    if not (state.get("question") or "").strip() or not settings:
        return {"answers": [], "paths": []}
    finished = state.get("finished") or []
    frontier = state.get("frontier") or []
    use_score = settings.get("evaluator") == "score" and settings.get("strategy") != "cot"
    best: dict[str, Any] | None = None
    info: dict[str, Any] = {}
    if finished:
        best = max(finished, key=lambda c: c.get("score") or 0.0) if use_score else finished[0]
        answers = list(best.get("answers") or [])
        how = "finished"
    else:
        pool = [b for b in frontier if b.get("steps")]
        answers = []
        how = "no state"
        if pool:
            best = max(pool, key=lambda c: c.get("score") or 0.0) if use_score else pool[0]
            chain = method.chain_text(best) or "(none)"
            how = "budget spent: final answer from the best chain"
            messages = method.prompts["final_answer"].format_messages(question=state["question"], chain=chain)
            try:
                if settings.get("decide", "rank") == "rank":
                    labels = list(method.candidates(best))
                    if labels:
                        ranking = rank(
                            method.model, messages, labels, prefix="Answer: ", role="answer", keys=labels
                        )
                        answers = [ranking.best] if ranking.best else []
                        info["ranking"] = ranking.as_trace(top=5)
                else:
                    answers = parse_answers(str(invoke_llm(method.model, messages).content))
            except KGAgentsError as exc:
                failed = error_update("answer", exc)
                return {"answers": [], "paths": [], **failed}
    answers = [a for a in answers if a][:MAX_ANSWERS]
    # every answer is a node the chain reached, on a verified path from a start: the rest is dropped
    candidates = method.candidates(best) if best else {}
    answers, paths, dropped = ground_answers(answers, candidates)
    walked = bool(best and best.get("walks"))
    if answers and walked and settings.get("whole_set", True):
        # `revisit`: the walked chain's ends are the candidates already, each with its walk
        rest = [lab for lab in candidates if lab not in answers][: MAX_ANSWERS - len(answers)]
        answers, paths = [*answers, *rest], [*paths, *(candidates[lab][0] for lab in rest)]
    update = verified_paths_update(method.kg, paths)
    if answers and settings.get("whole_set", True) and not walked:
        # the whole set of the best answer's chain, each added answer with its verified walk
        done = complete_answers(
            method.kg,
            answers,
            candidates,
            topics=state.get("topic_entities") or [],
            limit=MAX_ANSWERS,
            read_limit=read_cap(method),
        )
        info.update(done.as_trace(len(answers)))
        answers = done.answers
        update["paths"] = [*update["paths"], *done.paths]
    evidence = [triple_text(method.kg, t) for t in (best.get("triples") or [])] if best else []
    update["trace"] = [
        {
            "node": "answer",
            "best": best["id"] if best else None,
            "how": how,
            "levels": state.get("level", 0),
            "dropped": dropped,
            **info,
        },
        *update["trace"],
    ]
    update.update(answers=answers, evidence=evidence[:100])
    if not answers:
        kind = "UngroundedAnswer" if dropped else "NoAnswer"
        update["errors"] = [error_record("answer", f"no answer on a path the chain saw ({how})", type=kind)]
    return update
