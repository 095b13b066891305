"""KnowledgeNavigator as a LangGraph state machine (section 3 of "KnowledgeNavigator: LLMs for Enhanced
Reasoning over KGs", Guo et al., 2024).

Three stages, six nodes after entity linking (:mod:`.nodes`; the pure helpers are in :mod:`.knowledge`)::

    link_entities -> analyse_question -> select_relations <-> expand -> verbalise -> reason -> answer
                     (hops + variants)    (LLM vote, eq. 3-4)          (eq. 5-6 +
                                                                         templates)

- **Question analysis**: the hop count ``h_Q`` comes from :class:`~.hops.HopClassifier` (a frozen
  all-MiniLM-L6-v2 plus a trained head; or the ``hops`` knob), and ``m`` similar questions from the LLM.
- **Knowledge retrieval**, ``h_Q`` iterations: for each core entity its relations in both directions are
  candidates; for each question (the original and each variant) the LLM picks the ``K`` most relevant;
  a weighted vote (original question weight 2, variants 1) ranks them and the top ``M`` are kept; their
  triples are fetched (fan-out bounded) and the unvisited entities become the next core set.
- **Reasoning**: triples sharing head and relation, or relation and tail, are aggregated, turned into
  sentences with templates, and the LLM answers from that knowledge only.

Relations are shown to the LLM readably and with their direction explicit: for the entity ``Ron Howard``
the candidate ``directed_by`` walked backwards reads ``? directed by Ron Howard``; walked forwards from
``Splash`` it reads ``Splash directed by ?``.

Two deviations, on by default and switchable. With a depth of 2 hops or more, the ranked route chooses
the relations as whole chains of that depth, once, at the first hop (``relation_chain``): each question
variant ranks the chains the graph has from the topic entities, the weighted vote keeps the top ``M``,
and each hop follows the kept chains' relation at that hop. Chosen hop by hop, the small model takes the
relation that names the answer's type first, and a wrong first hop cannot be undone.

And (``grouping``) core entities of one hop whose candidate relations are identical share one LLM call per
question variant (the prompt lists them); ``grouping="hop"`` lets all core entities of a hop share one
call over the union of their candidates; ``grouping="none"`` gives every entity its own calls, as in the
paper. In every mode an entity (group) with no more than ``K``
candidates needs no call (every voter would pick them all).

Several topic entities (``conjunction``, on by default on the ranked route): one walk from each topic
entity, its relation chains ranked against the whole question, and the answers where the walks meet,
each with a verified path from every topic entity (:mod:`.walks`; no answer when they do not meet,
unless ``conjunction_fallback``). Ranked answers are the whole set
(``whole_set``): every end the walk reached, best first, cut at ``max_answers``.

Every per-run option (:class:`KnowledgeNavigatorContext`) is also a factory option; a run's context
overrides only the fields it sets. (A factory ``hops`` cannot be reset to prediction per run.)

Example:
    >>> from kg_agents import open_kg
    >>> from kg_agents.methods.knowledge_navigator.graph import create_knowledge_navigator_graph
    >>> graph = create_knowledge_navigator_graph(open_kg("metaqa"))          # doctest: +SKIP
    >>> out = graph.invoke({"question": "who directed the films written by [Babaloo Mandel]"},
    ...                    context={"num_variants": 2})                    # doctest: +SKIP
    >>> out["answers"], [p.to_text() for p in out["paths"]]                # doctest: +SKIP
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path as FsPath
from typing import Any

from langgraph.graph import END
from langgraph.graph.state import CompiledStateGraph

from kg_agents.core.constraint import FANOUT, end_with_constraint
from kg_agents.core.decide import Decide
from kg_agents.core.factory import context_defaults, reasoning_graph, setup_method
from kg_agents.core.models import default_calibrate, runs_adapter
from kg_agents.core.prompts import PromptLike, prompt_templates
from kg_agents.core.records import end_on_error
from kg_agents.core.state import ReasoningState
from kg_agents.errors import ConfigError
from kg_agents.kg.base import KnowledgeGraph, Triple
from kg_agents.methods.knowledge_navigator.knowledge import HEAD_TEMPLATE, TAIL_TEMPLATE, KnowledgeFormat
from kg_agents.methods.knowledge_navigator.nodes import (
    Grouping,
    KnowledgeNavigatorDeps,
    after_analyse,
    after_expand,
    after_link,
    analyse_question,
    answer,
    check_context,
    expand,
    reason,
    select_relations,
    verbalise_knowledge,
)
from kg_agents.methods.knowledge_navigator.walks import walk_topics
from kg_agents.packs import CHAIN, Pack

__all__ = [
    "PROMPT_NAMES",
    "KnowledgeNavigatorContext",
    "KnowledgeNavigatorState",
    "create_knowledge_navigator_graph",
]

PROMPTS_DIR = FsPath(__file__).resolve().parent / "prompts"
#: The bundled prompts, by name (the file stems under ``prompts/``).
PROMPT_NAMES: tuple[str, ...] = tuple(sorted(p.stem for p in PROMPTS_DIR.glob("*.txt")))


@dataclass
class KnowledgeNavigatorContext:
    """Per-run options of ``knowledge_navigator`` (pass as ``context={...}``); a field left None keeps
    the factory's value (the factory's keyword of the same name).

    Args:
        hops: retrieval depth (the factory's None: predict it with the hop classifier, eq. 1-2, or, where
            the KG pack's route says ``hops="chain"``, take the length of the relation chain closest to
            the question, :func:`~kg_agents.core.hops.chain_hops`); ``"chain"``: that length always.
        max_hops: the largest depth ``H`` (a predicted or given depth is clipped to ``1..H``).
        num_variants: ``m``, similar questions generated by the LLM (0 turns them off).
        top_k: ``K``, relations the LLM picks per (question variant, entity).
        top_m: ``M``, relations kept per entity after the vote.
        original_weight: vote weight of the original question (eq. 4).
        variant_weight: vote weight of each similar question (eq. 4).
        knowledge_format: ``single_triples``, ``joined_triples``, ``single_sentences`` or
            ``joined_sentences`` (table 3).
        fewshot: add two worked examples to the reasoning prompt.
        max_core_entities: at most this many core entities per hop (the cut is traced).
        max_triples: at most this many retrieved triples in the reasoning prompt (the cut is traced).
        max_llm_calls: LLM-call budget of the retrieval stage; when spent, retrieval stops and the
            graph reasons over what it has.
        max_answers: answers kept: the cut of a whole answer set (``whole_set``).
        ground_answers: an answer that is not the label of a retrieved entity is replaced by the
            retrieved entities its text names (deepest hop first; topic entities excluded), see
            :func:`~.knowledge.ground_answers`; False keeps the LLM's strings as parsed.
        select_max_tokens: most new tokens of a relation choice (passed as ``max_tokens``).
        variants_max_tokens: most new tokens per similar question asked for.
        answer_max_tokens: most new tokens of the answer.
        decide: ``"rank"``: the model ranks each hop's candidate relations (the top ``K`` are a
            variant's vote) and the reached entities for the answer; ``"generate"``: it writes them
            (the paper's prompts).
        answer_ratio: ranked answers: the best entity and those whose probability is at least this
            share of the best one's.
        calibrate: ranked relation choice scores each relation by how much the question raises its
            log-probability: its score less its score when the question is only the entity's name
            (see :func:`kg_agents.core.decide.rank`). Two LLM calls per ranking instead of one. The
            factory's default (None) is on, except for a specialist adapter (the default with a pack),
            which was trained on the plain scores.
        relation_chain: on the ranked route with a depth of 2 hops or more, the first hop ranks whole
            relation chains of that depth from the topic entities (the ``select_chain_rank`` prompt; each
            question variant ranks them and the weighted vote keeps the top ``M``), and every hop follows
            the kept chains' relation at that hop, with no further choice. A hop's core entities without
            the next relation are left out, unless none has it. False: the paper's choice per hop. The
            factory's default (None) is on.
        plan_example: show the chain prompt's worked example (a 2-hop chain) for chains of 3 hops or
            more. The factory's default (None): shown to every model but a specialist adapter, which learnt
            the chains without it.
        whole_set: ranked answers: every entity the last hop reached (the ends of the chosen chain or
            chains; for a conjunction, every entity where the walks meet), best first, at most
            ``max_answers``; False: the best and those within ``answer_ratio`` of it.
        conjunction: on the ranked route, a question with several topic entities is walked from each
            (:mod:`.walks`): the answers are where the walks meet, each with a verified path from every
            topic entity (no answer when they do not meet); False: one walk from all of them together,
            as for one topic entity.
        conjunction_fallback: a conjunction whose walks do not meet falls back to the first topic
            entity's walk alone (its answers have a path from that topic only); the factory's default
            (False) answers nothing then, as every answer must be reached from every topic entity.
        constraint: the answers are narrowed by a value the question states ("what did [Steven
            Spielberg] direct in 1993"): those holding it, each with its verified path to it
            (:mod:`~kg_agents.core.constraint`); False: the answers as they are.
        revisit: on the ranked route with ``relation_chain``, read the relation chain as the graph
            executes a relation path: a walk may pass through an entity again, a topic entity included,
            and end on the topic entity when the chain reaches nothing else (:mod:`kg_agents.core.chains`).
            The relation chain is ranked at 1 hop too, the kept chains are walked whole, and the answers
            are their ends, each with its walk. The factory's default (False): a walk never passes
            through a topic entity again, and an answer is never one.
    """

    hops: int | str | None = None
    max_hops: int | None = None
    num_variants: int | None = None
    top_k: int | None = None
    top_m: int | None = None
    original_weight: float | None = None
    variant_weight: float | None = None
    knowledge_format: KnowledgeFormat | None = None
    fewshot: bool | None = None
    max_core_entities: int | None = None
    max_triples: int | None = None
    max_llm_calls: int | None = None
    max_answers: int | None = None
    ground_answers: bool | None = None
    select_max_tokens: int | None = None
    variants_max_tokens: int | None = None
    answer_max_tokens: int | None = None
    decide: Decide | None = None
    answer_ratio: float | None = None
    calibrate: bool | None = None
    relation_chain: bool | None = None
    plan_example: bool | None = None
    whole_set: bool | None = None
    conjunction: bool | None = None
    conjunction_fallback: bool | None = None
    constraint: bool | None = None
    revisit: bool | None = None


class KnowledgeNavigatorState(ReasoningState, total=False):
    """State of ``knowledge_navigator`` (on top of :class:`ReasoningState`)."""

    hops: int
    variants: list[str]
    hop: int
    core: list[str]
    visited: list[str]
    selected: dict[str, list[list[str]]]
    chains: list[list[list[str]]]
    retrieved: list[Triple]
    parents: dict[str, Triple]
    retrieval_llm_calls: int
    stop_reason: str
    knowledge: str
    raw_answer: str
    ranked_answers: list[str]
    conjunction_route: bool
    conjunction: dict[str, list[str]]
    walk_ends: dict[str, list[str]]


def create_knowledge_navigator_graph(
    kg: KnowledgeGraph,
    *,
    llm: Any = None,
    adapter: str = "auto",
    pack: str | Pack = "auto",
    prompts: Mapping[str, PromptLike] | None = None,
    index: Any = None,
    hop_classifier: Any = None,
    grouping: Grouping = "candidates",
    fanout_limit: int = 100,
    hops: int | str | None = None,
    max_hops: int = 3,
    num_variants: int = 2,
    top_k: int = 1,
    top_m: int = 1,
    original_weight: float = 2.0,
    variant_weight: float = 1.0,
    knowledge_format: KnowledgeFormat = "joined_sentences",
    fewshot: bool = False,
    max_core_entities: int = 20,
    max_triples: int = 200,
    max_llm_calls: int = 40,
    max_answers: int = 100,
    ground_answers: bool = True,
    select_max_tokens: int = 16,
    variants_max_tokens: int = 40,
    answer_max_tokens: int = 160,
    decide: Decide = "rank",
    answer_ratio: float = 0.5,
    calibrate: bool | None = None,
    relation_chain: bool | None = None,
    plan_example: bool | None = None,
    whole_set: bool = True,
    conjunction: bool = True,
    conjunction_fallback: bool = False,
    constraint: bool = True,
    revisit: bool = False,
    variants_prompt: PromptLike | None = None,
    select_prompt: PromptLike | None = None,
    reason_prompt: PromptLike | None = None,
    head_template: str = HEAD_TEMPLATE,
    tail_template: str = TAIL_TEMPLATE,
    checkpointer: Any = None,
) -> CompiledStateGraph[Any, Any, Any, Any]:
    """Build the KnowledgeNavigator reasoning graph.

    Args:
        kg: the knowledge graph.
        llm: a LangChain chat model, a ``resolve_chat_model`` spec, or None for the embedded local model.
        adapter: the embedded model's LoRA adapter: ``"auto"`` (default: the KG pack's specialist for
            knowledge_navigator: on the MetaQA graph its own, ``kg_agents/specialist/checkpoints/metaqa-kn``;
            the zero-shot model without a pack), ``"specialist"`` (that one), ``"none"`` (zero-shot) or a
            folder from ``kg-agents train specialist``; a model of your own is used as it is (what each
            scored: docs/results.md and its history).
        pack: the KG pack (:mod:`kg_agents.packs`): ``"auto"`` (default: the pack registered for the KG's
            content, the bundled one on MetaQA), ``"none"`` (zero-shot, the bundled hop classifier) or a
            pack's folder. It settles ``adapter="auto"`` and, with ``hop_classifier`` None, the
            classifier of the question's depth (the pack's ``hop_classifier``) or, where the pack's route
            says ``hops="chain"``, the closest relation chain's length.
        prompts: bundled prompts overridden by name (``similar_questions``, ``select_relations``,
            ``reason``, ``reason_fewshot``): template text, a file path or a ``ChatPromptTemplate``.
        index: an ``EntityIndex`` for linking (built on first need when None).
        hop_classifier: an object with ``predict(questions, entities) -> list[int]`` (default: the
            pack's, else the bundled :class:`~.hops.HopClassifier`, loaded on the first question that
            needs it).
        grouping: which core entities of a hop share the LLM's relation choice (one call per question
            variant): ``"candidates"`` (default) those with identical candidate relations; ``"hop"`` all of
            them, over the union of their candidates (cheapest); ``"none"`` every entity on its own (the
            paper). See the module docstring.
        fanout_limit: at most this many triples per (entity, relation, direction); hits are traced.
        hops, max_hops, num_variants, top_k, top_m, original_weight, variant_weight, knowledge_format,
            fewshot, max_core_entities, max_triples, max_llm_calls, max_answers, ground_answers,
            select_max_tokens, variants_max_tokens, answer_max_tokens, decide, answer_ratio, calibrate,
            relation_chain, plan_example, whole_set, conjunction, conjunction_fallback, constraint,
            revisit: the defaults of the per-run options, see :class:`KnowledgeNavigatorContext`.
            ``decide="rank"`` (default) ranks relations and answers by the model's log-probability
            (relations with the ``select_relations_rank`` prompt, chains with ``select_chain_rank``);
            ``"generate"`` is the paper's free-generation route.
        variants_prompt: the ``similar_questions`` prompt (as ``prompts={"similar_questions": ...}``).
        select_prompt: the ``select_relations`` prompt.
        reason_prompt: the ``reason`` prompt, also used for few-shot reasoning unless ``prompts`` names
            ``reason_fewshot``.
        head_template: sentence template for ``(head, relation, [tails])`` groups.
        tail_template: sentence template for ``([heads], relation, tail)`` groups.
        checkpointer: a LangGraph checkpointer.

    Returns:
        A compiled ``StateGraph`` taking ``{"question", "topic_entities"?}`` and returning
        ``answers``, ``paths`` (chains of retrieved triples from a topic entity to an answer, verified),
        ``evidence`` (the knowledge lines), ``usage``, ``trace`` (incl. every relation vote) and ``errors``.

    Raises:
        ConfigError: a bad option or prompt (at creation, not during a run).

    Example:
        >>> g = create_knowledge_navigator_graph(kg, llm=chat_model, num_variants=0)   # doctest: +SKIP
        >>> g.invoke({"question": "what genres are the films directed by [Ron Howard]"},
        ...          context={"hops": 2})                                       # doctest: +SKIP
    """
    if fanout_limit < 1:
        raise ConfigError("fanout_limit must be at least 1")
    if grouping not in ("candidates", "hop", "none"):
        raise ConfigError(f"unknown grouping {grouping!r}; valid: candidates, hop, none")
    setup = setup_method(
        kg, "knowledge_navigator", llm=llm, adapter=adapter, pack=pack, hop_classifier=hop_classifier
    )
    if hops is None and setup.auto_hops == CHAIN:  # the pack's route: the closest relation chain's length
        hops = CHAIN
    defaults = context_defaults(
        KnowledgeNavigatorContext,
        locals(),
        calibrate=default_calibrate(calibrate, setup.llm),
        relation_chain=True if relation_chain is None else relation_chain,
        # an adapter learns the chains without the zero-shot model's worked example
        plan_example=not runs_adapter(setup.llm) if plan_example is None else plan_example,
    )
    bad = check_context(defaults)
    if bad:
        raise ConfigError(bad)
    fewshot_prompt = None if prompts and "reason_fewshot" in prompts else reason_prompt
    templates = prompt_templates(
        "knowledge_navigator",
        PROMPT_NAMES,
        prompts,
        similar_questions=variants_prompt,
        select_relations=select_prompt,
        reason=reason_prompt,
        reason_fewshot=fewshot_prompt,
    )
    deps = KnowledgeNavigatorDeps(
        kg=setup.kg,
        llm=setup.llm,
        prompts=templates,
        defaults=defaults,
        hop_classifier=setup.hop_classifier,
        grouping=grouping,
        fanout_limit=fanout_limit,
        head_template=head_template,
        tail_template=tail_template,
    )

    g = reasoning_graph(KnowledgeNavigatorState, KnowledgeNavigatorContext, setup, index)
    g.add_node("analyse_question", functools.partial(analyse_question, deps))
    g.add_node("select_relations", functools.partial(select_relations, deps))
    g.add_node("walk_topics", functools.partial(walk_topics, deps))
    g.add_node("expand", functools.partial(expand, deps))
    g.add_node("verbalise", functools.partial(verbalise_knowledge, deps))
    g.add_node("reason", functools.partial(reason, deps))
    g.add_node("answer", functools.partial(answer, deps))
    g.add_conditional_edges("link_entities", after_link, {"analyse_question": "analyse_question", "end": END})
    g.add_conditional_edges(
        "analyse_question",
        after_analyse,
        {"select_relations": "select_relations", "walk_topics": "walk_topics", "end": END},
    )
    g.add_conditional_edges(
        "walk_topics", end_on_error("verbalise", on_answers=True), {"verbalise": "verbalise", "end": END}
    )
    g.add_conditional_edges("select_relations", end_on_error("expand"), {"expand": "expand", "end": END})
    g.add_conditional_edges(
        "expand", after_expand, {"select_relations": "select_relations", "verbalise": "verbalise", "end": END}
    )
    g.add_conditional_edges("verbalise", end_on_error("reason"), {"reason": "reason", "end": END})
    g.add_conditional_edges("reason", end_on_error("answer"), {"answer": "answer", "end": END})
    # the constraint step's reads keep to the graph's own cap
    end_with_constraint(g, setup.kg, defaults, ["answer"], fanout=min(fanout_limit, FANOUT))
    return g.compile(checkpointer=checkpointer, name="knowledge_navigator")
