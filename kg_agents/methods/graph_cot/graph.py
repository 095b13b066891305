"""Graph-CoT, Graph-ToT and Graph-GoT: ``graph_agent`` and ``graph_explore``.

"Grounding LLM Reasoning with Knowledge Graphs" (Amayuelas et al.; sec. 4, app. B, E, F):
a reasoning strategy (4.1) combined with a way for the LLM to interact with the KG (4.2).

Interaction (what one *step* of a chain does):

- ``graph_agent`` (4.2.1, app. F "Agent"): one LLM call gives a thought and an action (ReAct); the
  action is one of Graph-CoT's ``RetrieveNode``, ``NodeFeature``, ``NeighborCheck``, ``NodeDegree``
  (the tools of :mod:`kg_agents.tools`) or ``Finish[answer]``; its result is the observation.
  A chat model that supports tool calling gets the tools bound (plus a ``Finish`` tool); any other
  model writes the paper's text actions, parsed robustly: a malformed action becomes an observation
  saying what is wrong, and the chain goes on.
- ``graph_explore`` (4.2.2, algorithm 1): one LLM call gives the next thought (or ``Finish[answer]``);
  the entities of the question (first step) or of the thought are extracted by the LLM and linked;
  then ``search_depth`` levels of breadth-first search: for every unvisited seen entity the LLM
  prunes its relations, then for every kept relation prunes the neighbour entities (skipped when
  there is only one); the kept triples are collected; after each level the LLM is asked "End?".

Strategy (how steps are organised), the same for both:

- ``cot``: one chain of at most ``max_steps`` steps (k = t = 1, no evaluation).
- ``tot``: from each kept state, ``k`` candidate next steps (one ``expand`` task each, fanned out
  with ``Send``); among the ``k`` children of a state, the ``t`` best are kept, by the *Selection*
  vote (one LLM call per parent: "The best choice is s") or the *Score* vote (one LLM call per
  candidate: a probability in [0, 1]); at most ``depth`` levels.
- ``got``: as ``tot``, and before evaluation the children of a state are merged pairwise
  ((1, 2), (3, 4), ...; one ``merge`` task and one LLM call per pair, eq. 3): the merged chain's next
  thought becomes a new candidate with both chains as parents.

A state ends when it gives ``Finish[...]``; finished states are not expanded. The run ends when no
kept state is unfinished or the level budget is spent; the answer is that of the best finished
state (highest score for ``score``; first in kept order otherwise), else one final LLM call answers
from the best chain ("the step budget ends the run with the best answer so far").

LLM calls, exactly, when no state finishes early and ``k > t`` (ToT/GoT), levels ``D``, ``S =
sum_{i<D} t**i`` states expanded (the paper's table 5: ``k (t**D - 1)/(t - 1)``):

- agent: ``k*S`` step calls; Selection ``S`` or Score ``k*S`` evaluation calls; GoT adds ``S*(k//2)``
  merge calls (and Score evaluates them: ``(k + k//2)*S``); plus 1 final answer call.
- CoT: ``n`` step calls (+1 final answer call when ``Finish`` never came).
- explore: each step and each merge adds its entity extraction, pruning and End? calls.

Several topic entities (``conjunction``, ranked route): one walk from each, the answers where the walks
meet, each with a verified path from every topic entity, instead of the chain of thoughts
(:mod:`~kg_agents.methods.graph_cot.conjunction`).

Reasoning paths: the triples a chain saw (``NeighborCheck`` results, explored triples) are searched for
paths from the chain's start entities (topic entities, retrieved nodes) to the answers; every path goes
through :func:`~kg_agents.core.nodes.verified_paths_update`.

Layout: the nodes are in :mod:`~kg_agents.methods.graph_cot.nodes` (functions over a
:class:`~kg_agents.methods.graph_cot.nodes.GraphCoTDeps`), what a step does in
:mod:`~kg_agents.methods.graph_cot.interaction`, the output parsers in
:mod:`~kg_agents.methods.graph_cot.parsing`, the context and state in
:mod:`~kg_agents.methods.graph_cot.state`; this module wires them and holds the factories.

Example:
    >>> from kg_agents import open_kg
    >>> from kg_agents.methods.graph_cot.graph import create_graph_agent_graph
    >>> kg = open_kg("metaqa")
    >>> g = create_graph_agent_graph(kg, strategy="tot", evaluator="score", k=3, t=1)  # doctest: +SKIP
    >>> g.invoke({"question": "who directed [Splash]"})["answers"]                    # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial
from typing import Any

from langchain_core.language_models.chat_models import BaseChatModel
from langgraph.graph import START
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Checkpointer

from kg_agents.core.constraint import FANOUT, end_with_constraint
from kg_agents.core.decide import Decide
from kg_agents.core.factory import context_defaults, reasoning_graph, setup_method
from kg_agents.core.models import default_calibrate, runs_adapter
from kg_agents.core.prompts import PromptLike
from kg_agents.core.state import ReasoningInput, ReasoningOutput
from kg_agents.errors import ConfigError
from kg_agents.kg.base import KnowledgeGraph
from kg_agents.methods.graph_cot.conjunction import route_prepare, walk_topics
from kg_agents.methods.graph_cot.interaction import (
    AGENT_PROMPTS,
    EXPLORE_PROMPTS,
    THOUGHT_MAX_TOKENS,
    ActionMode,
    AgentInteraction,
    ExploreInteraction,
    load_prompts,
)
from kg_agents.methods.graph_cot.nodes import (
    GraphCoTDeps,
    answer,
    collect,
    collect_merged,
    expand,
    merge,
    prepare,
    read_cap,
    route_evaluate,
    route_expand,
    route_merge,
    score,
    select,
    vote,
)
from kg_agents.methods.graph_cot.state import (
    EVALUATORS,
    MAX_LEVELS,
    STRATEGIES,
    Evaluator,
    GraphCoTContext,
    GraphCoTState,
    Strategy,
    run_settings,
)
from kg_agents.packs import Pack
from kg_agents.tools.kg_tools import KGToolbox

__all__ = [
    "EVALUATORS",
    "STRATEGIES",
    "GraphCoTContext",
    "GraphCoTGraph",
    "GraphCoTState",
    "build_graph",
    "create_graph_agent_graph",
    "create_graph_explore_graph",
    "expected_llm_calls",
]

#: The compiled graph the factories return.
GraphCoTGraph = CompiledStateGraph[GraphCoTState, GraphCoTContext, ReasoningInput, ReasoningOutput]


def build_graph(deps: GraphCoTDeps, *, checkpointer: Checkpointer = None) -> GraphCoTGraph:
    """The Graph-CoT/ToT/GoT graph over ``deps`` (named after its interaction): the nodes of
    :mod:`~kg_agents.methods.graph_cot.nodes` with ``deps`` bound, the routers as they are."""
    g = reasoning_graph(GraphCoTState, GraphCoTContext)  # its first node prepares, linking as it needs
    g.add_node("prepare", partial(prepare, deps))
    g.add_node("expand", partial(expand, deps))
    g.add_node("collect", collect)
    g.add_node("merge", partial(merge, deps))
    g.add_node("collect_merged", collect_merged)
    g.add_node("score", partial(score, deps))
    g.add_node("vote", partial(vote, deps))
    g.add_node("select", select)
    g.add_node("answer", partial(answer, deps))
    g.add_node("walk_topics", partial(walk_topics, deps))
    g.add_edge(START, "prepare")
    g.add_conditional_edges("prepare", route_prepare, ["walk_topics", "expand", "answer"])
    g.add_edge("expand", "collect")
    g.add_conditional_edges("collect", route_merge, ["merge", "score", "vote", "select"])
    g.add_edge("merge", "collect_merged")
    g.add_conditional_edges("collect_merged", route_evaluate, ["score", "vote", "select"])
    g.add_edge("score", "select")
    g.add_edge("vote", "select")
    g.add_conditional_edges("select", route_expand, ["expand", "answer"])
    cap = read_cap(deps.interaction)
    fanout = {} if cap is None else {"fanout": min(cap, FANOUT)}  # every read keeps to the graph's cap
    end_with_constraint(g, deps.interaction.kg, deps.defaults, ["walk_topics", "answer"], **fanout)
    compiled = g.compile(checkpointer=checkpointer, name=deps.interaction.name)
    return compiled.with_config(recursion_limit=8 * MAX_LEVELS + 20)


def create_graph_agent_graph(
    kg: KnowledgeGraph,
    *,
    llm: BaseChatModel | str | None = None,
    adapter: str = "auto",
    pack: str | Pack = "auto",
    prompts: Mapping[str, PromptLike] | None = None,
    checkpointer: Checkpointer = None,
    index: Any = None,
    strategy: Strategy = "cot",
    evaluator: Evaluator = "score",
    k: int = 3,
    t: int = 1,
    depth: int = 3,
    max_steps: int = 10,
    action_mode: ActionMode = "auto",
    max_neighbors: int = 30,
    max_actions: int = 3,
    max_context_triples: int = 40,
    temperature: float | None = 0.7,
    decide: Decide = "rank",
    calibrate: bool | None = None,
    hops: int | str = "auto",
    hop_classifier: Any = None,
    relation_chain: bool = True,
    plan_example: bool | None = None,
    conjunction: bool = True,
    constraint: bool = True,
    whole_set: bool = True,
) -> GraphCoTGraph:
    """Graph-CoT/ToT/GoT *agent*: ReAct over the KG tools (sec. 4.2.1, app. F).

    Args:
        kg: the knowledge graph.
        llm: a LangChain chat model or a model spec (``"local"``, ``"openai:<model>"``); None: the
            embedded local model.
        adapter: the embedded model's LoRA adapter: ``"auto"`` (default: the KG pack's specialist for
            graph_agent: on the MetaQA graph its own, ``kg_agents/specialist/checkpoints/metaqa-ga``, which
            went on from graph_explore's and learnt the relation chain the agent ranks, one relation at 1
            hop; zero-shot without a pack), ``"specialist"`` (that one), ``"none"`` (zero-shot) or a folder
            from ``kg-agents train specialist``; a model of your own is used as it is.
        pack: the KG pack (:mod:`kg_agents.packs`): ``"auto"`` (default: the pack registered for the KG's
            content, the bundled one on MetaQA), ``"none"`` (zero-shot, the walk's length left to the
            chain) or a pack's folder. It settles ``adapter="auto"``, and ``hops="auto"`` where its route
            for graph_agent says ``hops=predict`` (with its hop classifier).
        prompts: overrides of the bundled prompts by name (``agent_step``, ``agent_tools``,
            ``explore_plan_relations``, ``select_vote``, ``score_vote``, ``merge``, ``final_answer``):
            template text, file path or template; an unknown name is a ``ConfigError``.
        checkpointer: a LangGraph checkpointer.
        index: an ``EntityIndex`` for ``RetrieveNode`` and topic entity linking (optional).
        strategy: ``cot`` (one chain), ``tot`` or ``got``.
        evaluator: ``score`` (Score vote) or ``select`` (Selection vote), for ToT/GoT.
        k: candidate thoughts per state (ToT/GoT).
        t: states kept per parent (ToT/GoT).
        depth: tree depth D (ToT/GoT).
        max_steps: chain length n (CoT; the paper's default 10).
        action_mode: ``tools`` (bound tools; the model must support tool calling), ``text`` (the paper's
            ``Action: Name[args]`` lines), or ``auto`` (tools when the model calls tools natively, text
            for the embedded model).
        max_neighbors: ``NeighborCheck`` lists at most this many neighbours.
        max_actions: at most this many actions run per step.
        max_context_triples: at most this many triples shown to evaluators and the final answer.
        temperature: sampling temperature of candidate thoughts when k > 1 (so that a greedy model gives
            different candidates); None leaves the model's own setting.
        decide: ``"rank"`` (default): every step is chosen by ranking the actions that exist (for the
            agent: ``RetrieveNode`` of a topic entity, ``NeighborCheck`` over the relations the last
            step's nodes have, ``Finish`` with the nodes it reached; for the explorer: the relation and
            entity pruning and the End? decision), candidate ``j`` of a ToT/GoT level taking the j-th
            best; the Score and Selection votes rank too. ``"generate"``: the model writes them (the
            paper's prompts). Either way the answers are KG nodes on a verified path.
        calibrate: on the ranked route (default), score each action by how much the question raises
            its log-probability (its score after the step prompt less its score after the same prompt
            whose question is only the topic entities; see :func:`kg_agents.core.decide.rank`), with
            ``Finish`` competing on its own score; two LLM calls a step instead of one. False: the
            plain log-probabilities. None (default): on, except for a specialist adapter (the default
            with a pack, as on MetaQA), which was trained on the plain scores.
        hops: the walk's length on the ranked route (a departure from the paper, whose model decides when
            to stop: the embedded model's End? and ``Finish`` stop after the first hop of most multi-hop
            questions). An integer: ``Finish`` (agent) or the end of the search (explorer, without asking
            End?) comes once the chain has walked that many hops, and not before. ``"predict"``: the
            length is predicted per question by the hop classifier (the pack's, else knowledge_navigator's
            bundled one). ``"chain"``: the length of the relation chain from the topic entities whose
            words are closest to the question (:func:`~kg_agents.core.hops.chain_hops`). ``"auto"``
            (default): what the KG pack's route says (``"predict"`` in the bundled MetaQA pack's, whose
            question forms its classifier was trained on; ``"chain"`` in a pack built from the graph
            alone), or predicted wherever ``hop_classifier`` is given; elsewhere the chain decides, as
            with ``"none"``. The papers' route (``decide="generate"``) ignores it. A run's context may
            set it.
        hop_classifier: an object with ``predict(questions, entities) -> list[int]`` for ``hops``
            (None: the pack's, else the bundled one, loaded on the first question that needs it).
        relation_chain: with a walk length (ranked route; 1 hop too, a chain of one relation), rank the
            relations as one chain of that length once the start node is retrieved (graph_explore's prompt
            ``explore_plan_relations``; calibrated, except with a specialist adapter), and offer at each
            hop only the ``NeighborCheck`` along the chain's relation, on the nodes that have it (default;
            a departure from the paper, whose agent picks each relation). False: the agent ranks every
            relation at every hop.
        plan_example: show the relation-chain prompt's worked example (a 2-hop chain) when the chain
            has 3 hops or more. None (default): for every model but a specialist adapter.
        conjunction: on the ranked route, a question with several topic entities is walked from each
            instead of the agent's steps (:mod:`~kg_agents.methods.graph_cot.conjunction`, as
            graph_explore does): each topic's relation chains ranked against the whole question, the
            answers where the walks meet, best first, each with a verified path from every topic entity;
            no answer (``NoMeeting``) when they do not meet. False: the agent's steps, from all the topic
            entities. A run's context may set it.
        constraint: narrow the answers by a value the question states ("what did [Steven Spielberg]
            direct in 1993"): those holding it, each with its verified path to it
            (:mod:`~kg_agents.core.constraint`); False: the answers as they are. A run's context may
            set it.
        whole_set: a chain question's whole answer set: after the answers the walk ended on, every
            other end of the relation chain of the best answer's verified path from its topic entity,
            walked again from it (:func:`~kg_agents.core.conjunction.complete_answers`), each with its
            verified walk, at most 100 answers in all (``MAX_ANSWERS``). False: the answers as the walk
            chose them. A run's context may set it.

    Returns:
        A compiled graph; input ``{"question", "topic_entities"}``, output ``answers``, ``paths``
        (verified), ``evidence``, ``usage``, ``trace``, ``errors``. A run's context
        (:class:`GraphCoTContext`) overrides ``strategy``, ``evaluator``, ``k``, ``t``, ``depth``,
        ``max_steps``, ``decide`` and ``hops``; the fields it leaves unset keep the values given here.

    Raises:
        ConfigError: an option out of range, an unknown prompt name, or ``action_mode="tools"`` with a
            model without tool calling.

    Example:
        >>> g = create_graph_agent_graph(kg, llm=chat, strategy="tot", evaluator="select")  # doctest: +SKIP
        >>> g.invoke({"question": "who directed [Splash]"}, context={"depth": 2})     # doctest: +SKIP
    """
    # graph_agent's walks never pass a node twice: a run's context asking for `revisit` is refused
    defaults = context_defaults(GraphCoTContext, locals(), search_depth=0, revisit=False)
    run_settings(defaults)  # a bad option is a ConfigError now, at build time
    if not isinstance(relation_chain, bool):
        raise ConfigError(f"relation_chain must be True or False, got {relation_chain!r}")
    if plan_example is not None and not isinstance(plan_example, bool):
        raise ConfigError(f"plan_example must be True, False or None, got {plan_example!r}")
    setup = setup_method(
        kg, "graph_agent", llm=llm, adapter=adapter, pack=pack, hop_classifier=hop_classifier
    )
    adapted = runs_adapter(setup.llm)
    agent = AgentInteraction(
        setup.llm,
        setup.kg,
        KGToolbox(setup.kg, index, max_neighbors=max_neighbors),
        load_prompts(prompts, AGENT_PROMPTS),
        max_context_triples,
        temperature,
        action_mode=action_mode,
        max_actions=max_actions,
        calibrate=default_calibrate(calibrate, setup.llm),
        relation_chain=relation_chain,
        chain_calibrate=not adapted,
        chain_example=not adapted if plan_example is None else plan_example,
    )
    deps = GraphCoTDeps(agent, defaults, index, setup.hop_classifier, setup.auto_hops)
    return build_graph(deps, checkpointer=checkpointer)


def create_graph_explore_graph(
    kg: KnowledgeGraph,
    *,
    llm: BaseChatModel | str | None = None,
    adapter: str = "auto",
    pack: str | Pack = "auto",
    prompts: Mapping[str, PromptLike] | None = None,
    checkpointer: Checkpointer = None,
    index: Any = None,
    strategy: Strategy = "cot",
    evaluator: Evaluator = "score",
    k: int = 3,
    t: int = 1,
    depth: int = 3,
    max_steps: int = 5,
    search_depth: int = 1,
    max_entities: int = 3,
    max_relations: int = 3,
    keep_entities: int = 5,
    fanout_limit: int = 50,
    max_context_triples: int = 40,
    temperature: float | None = 0.7,
    thought_max_tokens: int | None = THOUGHT_MAX_TOKENS,
    decide: Decide = "rank",
    hops: int | str = "auto",
    hop_classifier: Any = None,
    relation_chain: bool | None = None,
    plan_example: bool | None = None,
    conjunction: bool = True,
    constraint: bool = True,
    whole_set: bool = True,
    revisit: bool = False,
) -> GraphCoTGraph:
    """Graph-CoT/ToT/GoT with *automatic graph exploration* (sec. 4.2.2, algorithm 1).

    Args:
        kg: the knowledge graph.
        llm: a LangChain chat model or a model spec; None: the embedded local model.
        adapter: the embedded model's LoRA adapter: ``"auto"`` (default: the KG pack's specialist for
            graph_explore: on the MetaQA graph its own, ``kg_agents/specialist/checkpoints/metaqa-ge``;
            the zero-shot model without a pack), ``"specialist"`` (that one), ``"none"`` (zero-shot) or a
            folder from ``kg-agents train specialist``; a model of your own is used as it is.
        pack: the KG pack: ``"auto"`` (default), ``"none"`` or a pack's folder, as for
            :func:`create_graph_agent_graph`; its route for graph_explore settles ``hops="auto"``.
        prompts: overrides of the bundled prompts by name (``explore_thought``, ``explore_extract``,
            ``explore_prune_relations``, ``explore_prune_entities``, ``explore_plan_relations``,
            ``explore_end``, ``select_vote``,
            ``score_vote``, ``merge``, ``final_answer``); an unknown name is a ``ConfigError``.
        checkpointer: a LangGraph checkpointer.
        index: an ``EntityIndex`` for linking (optional; exact and case-folded labels otherwise).
        strategy: ``cot``, ``tot`` or ``got``.
        evaluator: ``score`` or ``select`` (ToT/GoT).
        k: candidate thoughts per state (ToT/GoT).
        t: states kept per parent (ToT/GoT).
        depth: tree depth D (ToT/GoT).
        max_steps: chain length n (CoT).
        search_depth: KG search depth d per step (0 disables the search).
        max_entities: at most this many unvisited entities explored per search level.
        max_relations: at most this many relations kept per entity.
        keep_entities: at most this many neighbours kept per (entity, relation).
        fanout_limit: at most this many neighbours read per (entity, relation) (hubs are cut; traced).
        max_context_triples: at most this many triples shown in a prompt.
        temperature: sampling temperature of candidate thoughts when k > 1; None leaves the model's own.
        thought_max_tokens: on the ranked route, most new tokens of a step's thought (default 32; None:
            the model's own limit). There ranking, not the thought, chooses what is explored and
            answered; left to its limit, the embedded model repeats itself until it is reached.
        decide: ``"rank"`` (default) or ``"generate"``, as for :func:`create_graph_agent_graph`.
        hops, hop_classifier: the walk's length on the ranked route, as for
            :func:`create_graph_agent_graph`: End? is not asked, the search ends at that depth.
        relation_chain: with a walk length of 2 hops or more (ranked route), choose the relations as
            one chain of that length, ranked once from the topic entities (the prompt
            ``explore_plan_relations``; calibrated, except with a specialist adapter, which learns the
            chain on its plain scores), instead of per entity at each level. None (default): on; an
            adapter trained before the specialist learnt chains (its ``specialist_train.json`` has no
            ``graph_explore/chain`` decision) should run with False.
        plan_example: show the relation-chain prompt's worked example (a 2-hop chain) when the chain
            has 3 hops or more. None (default): for every model but a specialist adapter, which learns
            the chains without it.
        conjunction: on the ranked route, a question with several topic entities is walked from each
            (:mod:`~kg_agents.methods.graph_cot.conjunction`): each topic's relation chains (1 hop to
            the walk's length) ranked against the whole question, the answers where the walks meet, best
            first, each with a verified path from every topic entity; no answer (``NoMeeting``) when they
            do not meet. False: the chain of thoughts from all the topic entities. A run's context may
            set it.
        constraint: narrow the answers by a value the question states ("what did [Steven Spielberg]
            direct in 1993"): those holding it, each with its verified path to it
            (:mod:`~kg_agents.core.constraint`); False: the answers as they are. A run's context may
            set it.
        whole_set: a chain question's whole answer set: after the answers the walk ended on, every
            other end of the relation chain of the best answer's verified path from its topic entity,
            walked again from it (:func:`~kg_agents.core.conjunction.complete_answers`), each with its
            verified walk, at most 100 answers in all (``MAX_ANSWERS``). False: the answers as the walk
            chose them. A run's context may set it.
        revisit: on the ranked route with a walk length and ``relation_chain``, read the relation chain
            as the graph executes a relation path: a walk may pass through an entity again, a topic
            entity included, and end on the topic entity when the chain reaches nothing else
            (:mod:`kg_agents.core.chains`). The chain is ranked at 1 hop too and walked whole; its ends
            are the answers' candidates, each with its walk. False (default): the walk never passes a
            node twice. A run's context may set it.

    Returns:
        A compiled graph, as :func:`create_graph_agent_graph`'s; a run's context may also set
        ``search_depth``.

    Example:
        >>> g = create_graph_explore_graph(kg, llm=chat, strategy="got", k=2, t=1, depth=2)  # doctest: +SKIP
        >>> g.invoke({"question": "who directed [Splash]"})["paths"]                          # doctest: +SKIP
    """
    defaults = context_defaults(GraphCoTContext, locals())
    run_settings(defaults)  # a bad option is a ConfigError now, at build time
    for key, v in (
        ("max_entities", max_entities),
        ("max_relations", max_relations),
        ("keep_entities", keep_entities),
        ("fanout_limit", fanout_limit),
    ):
        if not isinstance(v, int) or v < 1:
            raise ConfigError(f"{key} must be a positive integer, got {v!r}")
    if thought_max_tokens is not None and (
        isinstance(thought_max_tokens, bool)
        or not isinstance(thought_max_tokens, int)
        or thought_max_tokens < 1
    ):
        raise ConfigError(
            f"thought_max_tokens must be a positive integer or None, got {thought_max_tokens!r}"
        )
    for key, flag in (("relation_chain", relation_chain), ("plan_example", plan_example)):
        if flag is not None and not isinstance(flag, bool):
            raise ConfigError(f"{key} must be True, False or None, got {flag!r}")
    setup = setup_method(
        kg, "graph_explore", llm=llm, adapter=adapter, pack=pack, hop_classifier=hop_classifier
    )
    adapted = runs_adapter(setup.llm)
    explorer = ExploreInteraction(
        setup.llm,
        setup.kg,
        KGToolbox(setup.kg, index),
        load_prompts(prompts, EXPLORE_PROMPTS),
        max_context_triples,
        temperature,
        max_entities=max_entities,
        max_relations=max_relations,
        fanout_limit=fanout_limit,
        keep_entities=keep_entities,
        thought_max_tokens=thought_max_tokens,
        relation_chain=True if relation_chain is None else relation_chain,
        # an adapter learns the chain on its plain scores (the specialist's ``chain`` decisions)
        chain_calibrate=not adapted,
        chain_example=not adapted if plan_example is None else plan_example,
    )
    deps = GraphCoTDeps(explorer, defaults, index, setup.hop_classifier, setup.auto_hops)
    return build_graph(deps, checkpointer=checkpointer)


def expected_llm_calls(
    strategy: str, evaluator: str, k: int, t: int, depth: int, max_steps: int = 10, final_answer: bool = True
) -> dict[str, int]:
    """LLM calls of ``graph_agent`` when no state finishes early (appendix E, table 5, made exact).

    ``S = sum_{i<D} t**i`` states are expanded (``(t**D - 1)/(t - 1)``); each makes ``k`` step calls;
    GoT adds ``k//2`` merges per expanded state; Selection makes one call per expanded state, Score one
    per candidate (merges included); a final answer call when no chain finished.

    Example:
        >>> expected_llm_calls("tot", "score", k=3, t=2, depth=3)["step"]
        21
    """
    if strategy == "cot":
        out = {"step": max_steps, "merge": 0, "evaluate": 0}
    else:
        s = sum(t**i for i in range(depth))
        merges = s * (k // 2) if strategy == "got" else 0
        per_group = k + (k // 2 if strategy == "got" else 0)
        ev = 0 if per_group <= t else (s if evaluator == "select" else s * per_group)
        out = {"step": k * s, "merge": merges, "evaluate": ev}
    out["final"] = 1 if final_answer else 0
    out["total"] = sum(out.values())
    return out
