"""The nodes of the ``knowledge_navigator`` graph, each a module-level function over a
:class:`KnowledgeNavigatorDeps`, and the routers between them.

:func:`~kg_agents.methods.knowledge_navigator.graph.create_knowledge_navigator_graph` binds the
dependencies when it builds the graph (``functools.partial(expand, deps)``); a test can call any node
alone with its own deps, a state dict and a runtime whose ``context`` is None (the factory's values) or
a ``KnowledgeNavigatorContext``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from langchain_core.prompts import ChatPromptTemplate
from langgraph.runtime import Runtime

from kg_agents.core.answers import parse_answers
from kg_agents.core.chains import ChainWalk, relation_path, walk_chain
from kg_agents.core.context import run_context
from kg_agents.core.decide import DECIDE_MODES, check_ratio, rank, ranked_answers
from kg_agents.core.hops import CHAIN_MAX_HOPS, chain_hops
from kg_agents.core.metering import invoke_llm, metered
from kg_agents.core.nodes import verified_paths_update
from kg_agents.core.records import error_record, error_update, guarded, halted, no_answer_error
from kg_agents.errors import ConfigError, KGAgentsError
from kg_agents.kg.base import (
    INVERSE_PREFIX,
    Direction,
    Path,
    Triple,
    check_direction,
    joins_in_engine,
    labels_of,
    relations_of,
)
from kg_agents.kg.text import relation_words
from kg_agents.methods.knowledge_navigator.hops import load_hop_classifier
from kg_agents.methods.knowledge_navigator.knowledge import (
    HEAD_TEMPLATE,
    KNOWLEDGE_FORMATS,
    TAIL_TEMPLATE,
    candidate_text,
    ground_answers,
    parse_selection,
    parse_variants,
    verbalise,
    weighted_vote,
)
from kg_agents.methods.knowledge_navigator.walks import rank_chains
from kg_agents.packs import CHAIN
from kg_agents.untrusted import kg_block, kg_text

__all__ = [
    "Grouping",
    "KnowledgeNavigatorDeps",
    "after_analyse",
    "after_expand",
    "after_link",
    "analyse_question",
    "answer",
    "check_context",
    "clip_hops",
    "entity_depths",
    "expand",
    "hop_classifier",
    "parse_answers_lines",
    "rank_chains",
    "rank_options_text",
    "reason",
    "select_relations",
    "traced_relation",
    "verbalise_knowledge",
]

#: Which core entities of a hop share the LLM's relation choice (see the graph module).
Grouping = Literal["candidates", "hop", "none"]


@dataclass(frozen=True)
class KnowledgeNavigatorDeps:
    """What the ``knowledge_navigator`` nodes need, bound once when the graph is built.

    Args:
        kg: the (metered) knowledge graph.
        llm: the chat model.
        prompts: the prompt templates by name (``similar_questions``, ``select_relations``, ``reason``,
            ``reason_fewshot``).
        defaults: the factory's full ``KnowledgeNavigatorContext``; a run's context is laid over it.
        hop_classifier: an object with ``predict(questions, entities) -> list[int]`` (None: the bundled
            classifier, loaded on the first question that needs it).
        grouping: which core entities share one relation choice.
        fanout_limit: at most this many triples per (entity, relation, direction).
        head_template: sentence template for ``(head, relation, [tails])`` groups.
        tail_template: sentence template for ``([heads], relation, tail)`` groups.
    """

    kg: Any
    llm: Any
    prompts: Mapping[str, ChatPromptTemplate]
    defaults: Any
    hop_classifier: Any = None
    grouping: Grouping = "candidates"
    fanout_limit: int = 100
    head_template: str = HEAD_TEMPLATE
    tail_template: str = TAIL_TEMPLATE


# --------------------------------------------------------------------------- helpers
def rank_options_text(options: Sequence[tuple[str, str]], entity: str) -> list[str]:
    """Candidate relations as ranked replies: ``entity → words`` out of it, ``words → entity`` into it.

    Example:
        >>> rank_options_text([("directed_by", "out"), ("directed_by", "in")], "Splash")
        ['Splash → directed by', 'directed by → Splash']
    """
    texts = [
        f"{entity} → {relation_words(r)}" if d == "out" else f"{relation_words(r)} → {entity}"
        for r, d in options
    ]
    seen: dict[str, int] = {}
    for i, t in enumerate(texts):  # distinct ids with the same words stay distinct options
        seen[t] = seen.get(t, 0) + 1
        if seen[t] > 1:
            texts[i] = f"{t} ({options[i][0]})"
    return texts


def traced_relation(relation: str, direction: str) -> str:
    """A relation as the trace names it: ``~relation`` when walked backwards.

    Example:
        >>> traced_relation("written_by", "in"), traced_relation("directed_by", "out")
        ('~written_by', 'directed_by')
    """
    return f"{INVERSE_PREFIX}{relation}" if direction == "in" else relation


def parse_answers_lines(text: str) -> list[str]:
    """The ranked route's answers: one label per line."""
    return [line.strip() for line in text.splitlines() if line.strip()]


def check_context(ctx: Any) -> str | None:
    """A message naming the first bad option of a (merged) ``KnowledgeNavigatorContext``, or None."""
    if ctx.knowledge_format not in KNOWLEDGE_FORMATS:
        return f"unknown knowledge_format {ctx.knowledge_format!r}; valid: {', '.join(KNOWLEDGE_FORMATS)}"
    for name in ("max_hops", "top_k", "top_m", "max_core_entities", "max_triples", "max_answers"):
        if int(getattr(ctx, name)) < 1:
            return f"{name} must be at least 1 (got {getattr(ctx, name)!r})"
    if ctx.num_variants < 0 or ctx.max_llm_calls < 0:
        return "num_variants and max_llm_calls must not be negative"
    if (
        ctx.hops is not None
        and ctx.hops != CHAIN
        and not (isinstance(ctx.hops, int) and not isinstance(ctx.hops, bool) and ctx.hops >= 1)
    ):
        return f"hops must be a positive integer, {CHAIN!r} or None (got {ctx.hops!r})"
    if ctx.decide not in DECIDE_MODES:
        return f"decide must be one of {', '.join(DECIDE_MODES)} (got {ctx.decide!r})"
    for name in (
        "calibrate",
        "relation_chain",
        "plan_example",
        "whole_set",
        "conjunction",
        "conjunction_fallback",
        "constraint",
        "revisit",
    ):
        if not isinstance(getattr(ctx, name), bool):
            return f"{name} must be True or False (got {getattr(ctx, name)!r})"
    try:
        check_ratio(ctx.answer_ratio)
    except ConfigError as exc:
        return str(exc)
    return None


def entity_depths(parents: dict[str, Triple], topics: set[str]) -> dict[str, int]:
    """Hop at which each retrieved entity was reached (its parent chain's length)."""
    out: dict[str, int] = {}
    for e in parents:
        d, cur = 0, e
        while cur in parents and cur not in topics and d <= len(parents):
            cur = parents[cur].other(cur)
            d += 1
        out[e] = d
    return out


def clip_hops(h: int, max_hops: int) -> int:
    """``h`` clipped to ``1..max_hops`` (and ``max_hops`` to at least 1).

    Example:
        >>> clip_hops(5, 3), clip_hops(0, 3), clip_hops(2, 0)
        (3, 1, 1)
    """
    return max(1, min(int(h), max(1, int(max_hops))))


def hop_classifier(deps: KnowledgeNavigatorDeps) -> Any:
    """The hop classifier of ``deps``, or the bundled one (loaded once per process).

    Raises:
        ModelError: the bundled checkpoint cannot be read.
    """
    return deps.hop_classifier if deps.hop_classifier is not None else load_hop_classifier()


# --------------------------------------------------------------------------- nodes
@metered
@guarded("analyse_question")
def analyse_question(
    deps: KnowledgeNavigatorDeps, state: Mapping[str, Any], runtime: Runtime[Any] | None = None
) -> dict[str, Any]:
    """Question analysis: the hop count (context, else the classifier, eq. 1-2) and ``m`` similar
    questions from the LLM."""
    ctx = run_context(runtime, deps.defaults)
    question = state["question"]
    topics = state.get("topic_entities") or []
    bad = check_context(ctx)
    if bad:
        return {
            "answers": [],
            "paths": [],
            "stop_reason": bad,
            **error_update("analyse_question", bad, type="ConfigError"),
        }
    update: dict[str, Any] = {"errors": [], "trace": []}
    info: dict[str, Any] = {"node": "analyse_question"}
    depth = None
    if ctx.hops == CHAIN and topics:
        cap = clip_hops(ctx.max_hops, CHAIN_MAX_HOPS)
        depth = chain_hops(deps.kg, question, topics, max_hops=cap, revisit=ctx.revisit)
    if depth is not None:
        hops = clip_hops(depth, ctx.max_hops)
        info["hops_source"] = "relation chain"
    elif isinstance(ctx.hops, int):
        hops = clip_hops(ctx.hops, ctx.max_hops)
        info["hops_source"] = "context"
    else:
        try:
            hops = clip_hops(
                hop_classifier(deps).predict([question], [[deps.kg.label(e) for e in topics]])[0],
                ctx.max_hops,
            )
            info["hops_source"] = "classifier"
        except KGAgentsError as exc:
            hops = clip_hops(ctx.max_hops, ctx.max_hops)
            info["hops_source"] = "fallback max_hops"
            update["errors"].append(
                error_record(
                    "analyse_question",
                    f"hop classifier unavailable ({exc}); using {hops}",
                    type="Fallback",
                )
            )
    info["hops"] = hops
    variants: list[str] = []
    if ctx.num_variants > 0:
        msg = invoke_llm(
            deps.llm,
            deps.prompts["similar_questions"].format_messages(question=question, m=ctx.num_variants),
            max_tokens=ctx.variants_max_tokens * ctx.num_variants,
        )
        variants = parse_variants(str(msg.content), question, ctx.num_variants)
        info["variants_raw"] = str(msg.content)
    info["variants"] = variants
    update["trace"].append(info)
    update.update(
        hops=hops,
        variants=variants,
        hop=0,
        core=list(topics),
        visited=list(topics),
        retrieved=[],
        parents={},
        selected={},
        retrieval_llm_calls=1 if ctx.num_variants > 0 else 0,
        # several topic entities on the ranked route: one walk from each (walks.walk_topics)
        conjunction_route=ctx.conjunction and ctx.decide == "rank" and len(set(topics)) > 1,
    )
    return update


# ------------------------------------------------------------ select relations (vote)
@metered
@guarded("select_relations")
def select_relations(
    deps: KnowledgeNavigatorDeps, state: Mapping[str, Any], runtime: Runtime[Any] | None = None
) -> dict[str, Any]:
    """One hop's relation choice: per entity group, each question variant picks ``K`` candidates and
    the weighted vote keeps the top ``M`` (eq. 3-4)."""
    ctx = run_context(runtime, deps.defaults)
    hop = state.get("hop", 0)
    core = state.get("core") or []
    voters = [state["question"], *(state.get("variants") or [])]
    weights = [ctx.original_weight] + [ctx.variant_weight] * (len(voters) - 1)
    calls = state.get("retrieval_llm_calls", 0)
    chains = state.get("chains")
    update: dict[str, Any] = {}
    if (
        chains is None
        and hop == 0
        and ctx.decide == "rank"
        and ctx.relation_chain
        and (state.get("hops", 1) >= 2 or ctx.revisit)  # revisit: a 1-hop chain may end on the topic
    ):
        chain_info, chains, calls = rank_chains(deps, ctx, state, voters, weights, calls, revisit=ctx.revisit)
        update = {"chains": chains, "trace": [chain_info]}
        if chain_info.get("budget_hit"):
            update["stop_reason"] = f"max_llm_calls={ctx.max_llm_calls} reached ranking the relation chains"
            return {**update, "selected": {}, "retrieval_llm_calls": calls}
    if chains:  # the kept chains' relation at this hop, for every core entity that has it
        at_hop = list(dict.fromkeys((c[hop][0], c[hop][1]) for c in chains if hop < len(c)))
        selected_on_chain: dict[str, list[list[str]]] = {e: [] for e in core}
        for r, d in at_hop:  # one KG call per relation: which core entities have it
            for e, ts in deps.kg.neighbors_many(core, r, check_direction(d), limit=1).items():
                if ts and e in selected_on_chain:
                    selected_on_chain[e].append([r, d])
        info = {
            "node": "select_relations",
            "hop": hop + 1,
            "core": core[:20],
            "n_core": len(core),
            "chain_relations": [traced_relation(r, d) for r, d in at_hop],
            "budget_hit": False,
        }
        return {
            **update,
            "selected": selected_on_chain,
            "retrieval_llm_calls": calls,
            "trace": [*update.get("trace", []), info],
        }
    # candidates per entity, both directions
    cands: dict[str, tuple[tuple[str, Direction], ...]] = {}
    outs, ins = relations_of(deps.kg, core, "out"), relations_of(deps.kg, core, "in")
    for e in core:
        out = [(r, "out") for r in sorted(outs[e])]
        inn = [(r, "in") for r in sorted(ins[e])]
        cands[e] = tuple(out + inn)  # type: ignore[arg-type]
    groups: dict[Any, list[str]] = {}
    for e in core:
        if not cands[e]:
            continue
        key = {"none": (e,), "candidates": cands[e], "hop": "all"}[deps.grouping]
        groups.setdefault(key, []).append(e)
    selected: dict[str, list[list[str]]] = {}
    votes: list[dict[str, Any]] = []
    budget_hit = False
    for members in groups.values():
        union = dict.fromkeys(c for e in members for c in cands[e] if c[1] == "out")
        union.update(dict.fromkeys(c for e in members for c in cands[e] if c[1] == "in"))
        options_rd = tuple(union)
        if len(options_rd) <= ctx.top_k:  # every voter would pick all of them
            kept = list(range(len(options_rd)))[: ctx.top_m]
            scores = [float(sum(weights))] * len(options_rd)
            choices: list[list[int]] = [list(range(len(options_rd)))] * len(voters)
            asked = False
        else:
            per_vote = 2 if ctx.decide == "rank" and ctx.calibrate else 1  # calibration: a second call
            if calls + per_vote * len(voters) > ctx.max_llm_calls:
                budget_hit = True
                break
            name = kg_text(deps.kg.label(members[0]))  # shown to the model: KG text
            options = [candidate_text(r, d, name) for r, d in options_rd]
            phrases = [relation_words(r) for r, _ in options_rd]
            entity_text = name
            if len(members) > 1:
                others = ", ".join(kg_text(deps.kg.label(x)) for x in members[1:6])
                entity_text += f" (and likewise {others}{', ...' if len(members) > 6 else ''})"
            listing = "\n".join(f"{i + 1}. {o}" for i, o in enumerate(options))
            choices = []
            for q in voters:
                if ctx.decide == "rank":
                    tpl = deps.prompts["select_relations_rank"]
                    ranking = rank(
                        deps.llm,
                        tpl.format_messages(question=q, entity=name),
                        rank_options_text(options_rd, name),
                        role="relation",
                        keys=[(tuple(members), r, d) for r, d in options_rd],
                        # the question's words taken out: how much the question raises each relation
                        baseline=tpl.format_messages(question=f"[{name}]", entity=name)
                        if ctx.calibrate
                        else None,
                    )
                    choices.append(ranking.order()[: ctx.top_k])
                    continue
                msg = invoke_llm(
                    deps.llm,
                    deps.prompts["select_relations"].format_messages(
                        question=q, entity=entity_text, options=listing, k=ctx.top_k
                    ),
                    max_tokens=ctx.select_max_tokens,
                )
                choices.append(parse_selection(str(msg.content), options, ctx.top_k, phrases))
            calls += per_vote * len(voters)
            scores, kept = weighted_vote(choices, weights, len(options_rd), ctx.top_m)
            asked = True
        chosen = [[options_rd[i][0], options_rd[i][1]] for i in kept]
        for e in members:
            selected[e] = [c for c in chosen if (c[0], c[1]) in cands[e]]
        votes.append(
            {
                "entities": members[:10],
                "n_entities": len(members),
                "candidates": [traced_relation(r, d) for r, d in options_rd],
                "choices": [[traced_relation(*options_rd[i]) for i in c] for c in choices],
                "scores": scores,
                "kept": [traced_relation(r, d) for r, d in chosen],
                "asked_llm": asked,
            }
        )
    update = {
        **update,
        "selected": selected,
        "retrieval_llm_calls": calls,
        "trace": [
            *update.get("trace", []),
            {
                "node": "select_relations",
                "hop": hop + 1,
                "core": core[:20],
                "n_core": len(core),
                "weights": weights,
                "votes": votes,
                "budget_hit": budget_hit,
            },
        ],
    }
    if budget_hit:
        update["stop_reason"] = f"max_llm_calls={ctx.max_llm_calls} reached at hop {hop + 1}"
    return update


# ------------------------------------------------------------ expand
@metered
@guarded("expand")
def expand(
    deps: KnowledgeNavigatorDeps, state: Mapping[str, Any], runtime: Runtime[Any] | None = None
) -> dict[str, Any]:
    """The kept relations' triples (fan-out bounded); the unvisited entities are the next core. With kept
    relation chains on a store with chain queries, or with ``revisit``, the first hop walks each chain
    whole instead: its ends (``fanout_limit`` per topic entity) with one walk to each (with ``revisit``,
    the ends and their walks are the answers' candidates and support, ``walk_ends``)."""
    ctx = run_context(runtime, deps.defaults)
    hop = state.get("hop", 0)
    selected = state.get("selected") or {}
    retrieved = list(state.get("retrieved") or [])
    seen_triples = set(retrieved)
    parents = dict(state.get("parents") or {})
    visited = list(state.get("visited") or [])
    visited_set = set(visited)
    nxt: list[str] = []
    truncated: list[str] = []
    chains = state.get("chains") or []
    steps: list[tuple[str, Triple]] = []  # (the entity a triple was reached from, the triple)
    whole = hop == 0 and bool(chains) and (joins_in_engine(deps.kg) or ctx.revisit)
    walk_ends: dict[str, list[str]] = {}
    if whole:  # the store walks each kept chain to its ends (fanout_limit of them per topic entity)
        core = state.get("core") or []
        walks = [
            walk_chain(deps.kg, core, relation_path(c), limit=deps.fanout_limit, revisit=ctx.revisit)
            for c in chains
        ]
        if ctx.revisit:  # a walk may end on a topic entity, which `parents` cannot hold
            walk_ends = ChainWalk(paths=[p for w in walks for p in w.paths]).support()
        steps = [(h.source, h.triple) for w in walks for p in w.paths for h in p.hops]
        truncated = [t for w in walks for t in w.truncated]
        hop = len(chains[0]) - 1  # the walks end at the chains' ends: this is the last hop
    core = [] if whole else state.get("core") or []
    kept = [(e, rel, check_direction(d)) for e in core for rel, d in selected.get(e, [])]
    by_relation: dict[tuple[str, Direction], list[str]] = {}  # each kept relation's entities: one read
    for e, rel, d in kept:
        by_relation.setdefault((rel, d), []).append(e)
    lists = {
        (rel, d): deps.kg.neighbors_many(ents, rel, d, limit=deps.fanout_limit)
        for (rel, d), ents in by_relation.items()
    }
    for e, rel, d in kept:
        tl = lists[(rel, d)][e]
        if tl.truncated:
            truncated.append(f"{e} {traced_relation(rel, d)}")
        steps.extend((e, t) for t in tl)
    for e, t in steps:
        if t not in seen_triples:
            seen_triples.add(t)
            retrieved.append(t)
        other = t.other(e)
        if other not in visited_set:
            visited_set.add(other)
            visited.append(other)
            parents[other] = t
            nxt.append(other)
    off_chain = 0
    following = [c[hop + 1] for c in chains if hop + 1 < len(c)]
    if following and nxt:
        # the next core: the entities with a kept chain's next relation (a film with no genre is off a
        # chain that asks its genre next), unless none has it
        on = {
            e
            for r, d in dict.fromkeys((r, d) for r, d in following)
            for e, ts in deps.kg.neighbors_many(nxt, r, check_direction(d), limit=1).items()
            if ts
        }
        if on:
            off_chain = sum(1 for e in nxt if e not in on)
            nxt = [e for e in nxt if e in on]
    cut = len(nxt) > ctx.max_core_entities
    update: dict[str, Any] = {
        "retrieved": retrieved,
        "parents": parents,
        "visited": visited,
        "core": nxt[: ctx.max_core_entities],
        "hop": hop + 1,
        "walk_ends": walk_ends,
        "trace": [
            {
                "node": "expand",
                "hop": hop + 1,
                "triples": len(retrieved),
                "new_entities": len(nxt),
                "core_cut": cut,
                "off_chain": off_chain,
                "whole_chains": whole,
                "fanout_truncated": truncated,
            }
        ],
    }
    return update


def after_expand(state: Mapping[str, Any]) -> str:
    """Router after ``expand``: another hop, the knowledge, or the end."""
    if halted(state):
        return "end"
    if state.get("stop_reason"):
        return "verbalise"
    if state.get("hop", 0) < state.get("hops", 1) and state.get("core"):
        return "select_relations"
    return "verbalise"


# ------------------------------------------------------------ verbalise
@metered
@guarded("verbalise")
def verbalise_knowledge(
    deps: KnowledgeNavigatorDeps, state: Mapping[str, Any], runtime: Runtime[Any] | None = None
) -> dict[str, Any]:
    """The retrieved triples as knowledge lines (eq. 5-6 and the templates; the deepest kept when cut)."""
    ctx = run_context(runtime, deps.defaults)
    triples = list(state.get("retrieved") or [])
    cut = len(triples) > ctx.max_triples
    # keep the deepest hops when cutting: the answers are at the end of the chains
    kept = triples[-ctx.max_triples :] if cut else triples
    lines = verbalise(
        kept,
        ctx.knowledge_format,
        label=deps.kg.label,
        head_template=deps.head_template,
        tail_template=deps.tail_template,
    )
    return {
        "knowledge": kg_block(kg_text(line) for line in lines) if lines else "",
        "evidence": lines,
        "trace": [
            {
                "node": "verbalise",
                "format": ctx.knowledge_format,
                "triples": len(kept),
                "lines": len(lines),
                "triples_cut": cut,
                "stop_reason": state.get("stop_reason"),
            }
        ],
    }


# ------------------------------------------------------------ reason
@metered
@guarded("reason")
def reason(
    deps: KnowledgeNavigatorDeps, state: Mapping[str, Any], runtime: Runtime[Any] | None = None
) -> dict[str, Any]:
    """The LLM answers from the knowledge only: it ranks the entities the last hop reached
    (``decide="rank"``), or writes its answer (``"generate"``)."""
    ctx = run_context(runtime, deps.defaults)
    template = deps.prompts["reason_fewshot" if ctx.fewshot else "reason"]
    knowledge = state.get("knowledge") or "(no knowledge found)"
    messages = template.format_messages(question=state["question"], knowledge=knowledge)
    if ctx.decide == "rank":
        parents = state.get("parents") or {}
        topics = set(state.get("topic_entities") or [])
        depths = entity_depths(parents, topics)
        deepest = max(depths.values(), default=0)
        ends = [e for e, d in depths.items() if d == deepest and d > 0]
        if state.get("conjunction_route"):  # the entities where the topics' walks meet
            ends = list(state.get("conjunction") or {})
        elif state.get("walk_ends"):  # `revisit`: the kept chains' ends
            ends = list(state["walk_ends"])
        labels = list(dict.fromkeys(labels_of(deps.kg, ends)))
        if not labels:
            return {"raw_answer": "", "trace": [{"node": "reason", "decide": "rank", "candidates": 0}]}
        ranking = rank(deps.llm, messages, labels, prefix="Answer: ", role="answer", keys=labels)
        answers = ranked_answers(ranking, max_answers=ctx.max_answers, ratio=ctx.answer_ratio)
        if ctx.whole_set and ranking.matched:  # every end the walk reached, best first
            answers = [ranking.options[i] for i in ranking.order()][: ctx.max_answers]
        info = {"node": "reason", "decide": "rank", "candidates": len(labels), **ranking.as_trace()}
        # the labels themselves, not their lines: a label may hold a line break
        return {"raw_answer": "\n".join(answers), "ranked_answers": answers, "trace": [info]}
    msg = invoke_llm(deps.llm, messages, max_tokens=ctx.answer_max_tokens)
    return {
        "raw_answer": str(msg.content),
        "trace": [{"node": "reason", "decide": "generate", "raw": str(msg.content), "fewshot": ctx.fewshot}],
    }


# ------------------------------------------------------------ answer (+ paths)
@metered
@guarded("answer")
def answer(
    deps: KnowledgeNavigatorDeps, state: Mapping[str, Any], runtime: Runtime[Any] | None = None
) -> dict[str, Any]:
    """The parsed answers, grounded on retrieved entities, with their verified paths from a topic entity."""
    ctx = run_context(runtime, deps.defaults)
    parsed = parse_answers(state.get("raw_answer") or "")
    parents = state.get("parents") or {}
    topics = set(state.get("topic_entities") or [])
    support = (state.get("conjunction") if state.get("conjunction_route") else state.get("walk_ends")) or {}
    labelled = list(support or parents)
    labels = dict(zip(labelled, labels_of(deps.kg, labelled), strict=True))
    by_label: dict[str, list[str]] = {}
    for e, lab in labels.items():
        by_label.setdefault(lab.lower(), []).append(e)
    if ctx.decide == "rank":
        ranked = state.get("ranked_answers")
        answers = list(ranked) if ranked is not None else parse_answers_lines(state.get("raw_answer") or "")
    else:
        answers = parsed
    if ctx.ground_answers:
        answers = ground_answers(answers, labels, entity_depths(parents, topics), topics)
    # every answer is a retrieved entity: text naming none is dropped (and traced)
    dropped = [a for a in answers if a.lower() not in by_label]
    answers = list(dict.fromkeys(a for a in answers if a.lower() in by_label))[: ctx.max_answers]
    paths: list[Path] = []
    for a in answers:
        for e in by_label.get(a.lower(), []):
            if support:  # a conjunction's answer (its path from each topic entity), or a walk's end
                paths.extend(Path.from_text(t) for t in support.get(e, []))
                continue
            chain: list[Triple] = []
            cur = e
            while cur in parents and cur not in topics and len(chain) <= len(parents):
                t = parents[cur]
                chain.append(t)
                cur = t.other(cur)
            if cur in topics and chain:
                paths.append(Path.from_triples(cur, list(reversed(chain))))
    update = verified_paths_update(deps.kg, paths, node="answer")
    update["answers"] = answers
    update["trace"] = [
        {
            "node": "answer",
            "parsed": parsed,
            "answers": answers,
            "dropped": dropped,
        },
        *update["trace"],
    ]
    if not answers:
        update["errors"] = (
            no_answer_error("answer", state.get("raw_answer") or "")
            if not parsed
            else [
                error_record(
                    "answer",
                    "none of the model's answers is an entity the navigator reached",
                    type="UngroundedAnswer",
                )
            ]
        )
    return update


def after_link(state: Mapping[str, Any]) -> str:
    """Router after ``link_entities``: analysis when topic entities were found."""
    return "analyse_question" if state.get("topic_entities") else "end"


def after_analyse(state: Mapping[str, Any]) -> str:
    """Router after ``analyse_question``: the end on a bad option or a halting error; the conjunction
    route (``walk_topics``) for several topic entities on the ranked route."""
    if state.get("stop_reason") or halted(state):
        return "end"
    return "walk_topics" if state.get("conjunction_route") else "select_relations"
