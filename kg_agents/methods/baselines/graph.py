"""Baselines from the papers: ``llm_only`` (zero-shot), ``graph_rag`` (1-hop neighbourhood) and
``text_rag`` (dense retrieval over verbalised triples).

They also show the pattern every reasoning graph follows:

- a factory ``create_<method>_graph(kg, *, llm=None, prompts=None, checkpointer=None, ...)`` with
  keyword-only options, returning a compiled ``StateGraph``;
- long-lived dependencies (KG, model, prompt, index) in a frozen dependencies object bound to the
  nodes at creation (:mod:`kg_agents.methods.baselines.nodes`); per-run knobs in a ``context_schema``
  dataclass whose unset (None) fields keep the factory's values (:mod:`kg_agents.core.context`);
- nodes are module-level functions of (dependencies, state, runtime) returning partial updates,
  wrapped with ``metered`` so ``usage`` is measured; the KG is wrapped in ``MeteredKG``; LLM calls go
  through ``invoke_llm``;
- errors are recorded in ``errors`` (error records) and ``trace``, and the graph ends, instead of
  raising: nodes that call the KG are ``guarded`` and routed with ``end_on_error``.

Example:
    >>> from kg_agents import open_kg
    >>> from kg_agents.methods.baselines.graph import create_graph_rag_graph
    >>> graph = create_graph_rag_graph(open_kg("metaqa"))          # doctest: +SKIP
    >>> graph.invoke({"question": "who directed [Splash]"})["answers"]  # doctest: +SKIP
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, TypedDict

from langchain_core.prompts import ChatPromptTemplate
from langgraph.graph import END, START
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Checkpointer

from kg_agents.core.constraint import check_constraint, end_with_constraint
from kg_agents.core.decide import Decide, check_calibrate, check_decide, check_ratio
from kg_agents.core.factory import MethodSetup, context_defaults, reasoning_graph, setup_method
from kg_agents.core.hops import check_hops
from kg_agents.core.metering import MeteredKG
from kg_agents.core.prompts import PromptLike, prompt_templates
from kg_agents.core.records import end_on_error
from kg_agents.core.state import ReasoningState
from kg_agents.errors import ConfigError
from kg_agents.kg.base import KnowledgeGraph, Triple
from kg_agents.methods.baselines.nodes import (
    GraphRAGDeps,
    LLMOnlyDeps,
    TextRAGDeps,
    after_link,
    graph_rag_answer,
    graph_rag_retrieve,
    llm_only_answer,
    text_rag_after_link,
    text_rag_answer,
    text_rag_retrieve,
)
from kg_agents.methods.baselines.retrieval import TripleEmbeddings
from kg_agents.packs import Pack

__all__ = [
    "GraphRAGContext",
    "GraphRAGState",
    "LLMOnlyContext",
    "TextRAGContext",
    "TextRAGState",
    "check_candidate_text",
    "create_graph_rag_graph",
    "create_llm_only_graph",
    "create_text_rag_graph",
]


def check_candidate_text(value: Any, auto: bool = False) -> None:
    """ConfigError unless ``value`` is ``"label"`` or ``"path"`` (or, with ``auto``, ``"auto"``)."""
    valid = ("auto", "label", "path") if auto else ("label", "path")
    if value not in valid:
        raise ConfigError(f"candidate_text must be one of {', '.join(map(repr, valid))}, got {value!r}")


class _RankedDeps(TypedDict):
    """The dependencies ``graph_rag`` and ``text_rag`` take alike (fields of both
    :class:`~kg_agents.methods.baselines.nodes.GraphRAGDeps` and ``TextRAGDeps``)."""

    kg: MeteredKG
    model: Any
    template: ChatPromptTemplate
    candidate_text: Any
    calibrate: bool
    hop_classifier: Any
    auto_hops: bool | str | None


def _ranked_deps(
    setup: MethodSetup, template: ChatPromptTemplate, candidate_text: Any, calibrate: bool
) -> _RankedDeps:
    """What a RAG baseline's nodes rank with: ``setup``'s metered KG, chat model and hop classifier, the
    RAG prompt, and how a candidate is scored (``candidate_text``, ``calibrate``)."""
    return {
        "kg": setup.kg,
        "model": setup.llm,
        "template": template,
        "candidate_text": candidate_text,
        "calibrate": calibrate,
        "hop_classifier": setup.hop_classifier,
        "auto_hops": setup.auto_hops,
    }


def _ranked_setup(
    kg: KnowledgeGraph, name: str, options: Mapping[str, Any], *, auto_text: bool = False
) -> tuple[MethodSetup, _RankedDeps]:
    """Check the options ``graph_rag`` and ``text_rag`` share, then set the method ``name`` up on ``kg``:
    its :class:`~kg_agents.core.factory.MethodSetup` and the dependencies its nodes rank with (see
    :func:`_ranked_deps`, the ``rag`` prompt overridden by ``prompts`` or ``prompt``).

    Args:
        kg: the knowledge graph.
        name: the method, ``"graph_rag"`` or ``"text_rag"``.
        options: the factory's arguments (its ``locals()``), read by name: ``llm``, ``adapter``,
            ``pack``, ``prompts``, ``prompt``, ``hop_classifier``, ``decide``, ``answer_ratio``,
            ``candidate_text``, ``calibrate``, ``answer_hops``, ``conjunction`` and ``constraint``.
        auto_text: ``candidate_text`` may also be ``"auto"``.

    Raises:
        ConfigError: an unknown ``decide``, ``candidate_text``, ``answer_hops`` or prompt name,
            ``answer_ratio`` outside (0, 1], or a ``calibrate``, ``conjunction`` or ``constraint``
            that is not a bool.
    """
    check_decide(options["decide"])
    check_ratio(options["answer_ratio"])
    check_candidate_text(options["candidate_text"], auto=auto_text)
    check_calibrate(options["calibrate"])
    check_hops(options["answer_hops"], "answer_hops")
    conjunction = options["conjunction"]
    if not isinstance(conjunction, bool):
        raise ConfigError(f"{name} conjunction must be True or False, got {conjunction!r}")
    check_constraint(options["constraint"])
    prompts, prompt = options["prompts"], options["prompt"]
    template = prompt_templates("baselines", ["rag"], prompts, rag=prompt)["rag"]
    setup = setup_method(
        kg,
        name,
        llm=options["llm"],
        adapter=options["adapter"],
        pack=options["pack"],
        hop_classifier=options["hop_classifier"],
        hops_option="answer_hops",
    )
    return setup, _ranked_deps(setup, template, options["candidate_text"], options["calibrate"])


def _rag_graph(
    name: str,
    state: type[Any],
    context: type[Any],
    setup: MethodSetup,
    deps: GraphRAGDeps | TextRAGDeps,
    nodes: tuple[Callable[..., Any], Callable[..., Any], Callable[..., Any]],
    index: Any,
    checkpointer: Checkpointer,
) -> CompiledStateGraph[Any, Any, Any, Any]:
    """The compiled graph of the RAG baseline ``name`` over ``state`` and ``context``: entity linking
    (with ``index``), then ``retrieve`` and ``answer`` (``deps`` bound to each), ending with the
    constraint node (:func:`~kg_agents.core.constraint.end_with_constraint`, its reads capped at
    ``deps.fanout_limit``). ``nodes``: the router after linking (to ``"retrieve"`` or ``"end"``), the
    retrieve node and the answer node; a failed retrieval ends the run."""
    after, retrieve, answer = nodes
    g = reasoning_graph(state, context, setup, index)
    g.add_node("retrieve", functools.partial(retrieve, deps))
    g.add_node("answer", functools.partial(answer, deps))
    g.add_conditional_edges("link_entities", after, {"retrieve": "retrieve", "end": END})
    g.add_conditional_edges("retrieve", end_on_error("answer"), {"answer": "answer", "end": END})
    end_with_constraint(g, setup.kg, deps.defaults, ["answer"], fanout=deps.fanout_limit)
    return g.compile(checkpointer=checkpointer, name=name)


# --------------------------------------------------------------------------- llm_only
@dataclass
class LLMOnlyContext:
    """Per-run options of ``llm_only``; a field left None keeps the default.

    Attributes:
        max_answers: at most this many answers (default 10).
    """

    max_answers: int | None = None


def create_llm_only_graph(
    kg: KnowledgeGraph | None = None,
    *,
    llm: Any = None,
    pack: str | Pack = "auto",
    prompts: Mapping[str, PromptLike] | None = None,
    checkpointer: Checkpointer = None,
    prompt: PromptLike | None = None,
) -> CompiledStateGraph[Any, Any, Any, Any]:
    """Zero-shot LLM baseline: the question goes to the chat model, no knowledge graph.

    Args:
        kg: unused (accepted so every method has the same signature).
        llm: a LangChain chat model (default: the embedded local model, zero-shot).
        pack: accepted so every method has the same options, and a named pack's folder is checked; no
            component of a KG pack applies to a method that reads no KG (the model runs zero-shot).
        prompts: templates overriding the bundled ones by name: ``llm_only``
            (``kg_agents/methods/baselines/prompts/llm_only.txt``).
        checkpointer: a LangGraph checkpointer.
        prompt: a template overriding the ``llm_only`` prompt (not also in ``prompts``).

    Raises:
        ConfigError: an unknown prompt name, or a ``pack`` that is not ``"auto"``, ``"none"`` or a pack.
    """
    # a named pack is checked (a bad folder is an error now, as for every method); the model runs zero-shot
    setup = setup_method(
        kg, "llm_only", llm=llm, adapter="none", pack="none" if pack == "auto" else pack, hops_option=None
    )
    template = prompt_templates("baselines", ["llm_only"], prompts, llm_only=prompt)["llm_only"]
    deps = LLMOnlyDeps(model=setup.llm, template=template, defaults=LLMOnlyContext(max_answers=10))
    g = reasoning_graph(ReasoningState, LLMOnlyContext)
    g.add_node("answer", functools.partial(llm_only_answer, deps))
    g.add_edge(START, "answer")
    g.add_edge("answer", END)
    return g.compile(checkpointer=checkpointer, name="llm_only")


# --------------------------------------------------------------------------- graph_rag
@dataclass
class GraphRAGContext:
    """Per-run options of ``graph_rag``; a field left None keeps the default.

    Attributes:
        max_triples: at most this many triples in the prompt (default 60).
        max_answers: at most this many answers (default 10).
        decide: ``"rank"`` (the model ranks the candidate entities) or ``"generate"`` (free text,
            grounded on the candidates); default: the factory's ``decide``.
        answer_ratio: ranked route: keep candidates whose probability is at least this share of the
            best one's (default: the factory's ``answer_ratio``).
        answer_hops: ranked route: how far from the topic entities the answers lie (default: the
            factory's ``answer_hops``).
        conjunction: several topic entities: the answers are the entities reached from every one of
            them (default: the factory's ``conjunction``).
        constraint: narrow the answers by a value the question states
            (:mod:`~kg_agents.core.constraint`; default: the factory's ``constraint``).
    """

    max_triples: int | None = None
    max_answers: int | None = None
    decide: Decide | None = None
    answer_ratio: float | None = None
    answer_hops: int | str | None = None
    conjunction: bool | None = None
    constraint: bool | None = None


class GraphRAGState(ReasoningState, total=False):
    """``graph_rag``'s state: the triples of the prompt, the answer distance and, when that is two hops
    or more, the whole neighbourhood read."""

    triples: list[Triple]
    answer_hops: int | None
    neighbourhood: list[Triple]


def create_graph_rag_graph(
    kg: KnowledgeGraph,
    *,
    llm: Any = None,
    adapter: str = "auto",
    pack: str | Pack = "auto",
    prompts: Mapping[str, PromptLike] | None = None,
    checkpointer: Checkpointer = None,
    index: Any = None,
    fanout_limit: int = 200,
    prompt: PromptLike | None = None,
    decide: Decide = "rank",
    answer_ratio: float = 0.5,
    candidate_text: Literal["label", "path"] = "label",
    calibrate: bool = False,
    answer_hops: int | str = "auto",
    hop_classifier: Any = None,
    max_hops: int = 2,
    hop_fanout: int = 30,
    max_neighbourhood: int = 300,
    conjunction: bool = True,
    constraint: bool = True,
) -> CompiledStateGraph[Any, Any, Any, Any]:
    """Graph RAG baseline: the 1-hop neighbourhood (both directions) of the topic entities as context.

    On the ranked route the answers' distance from the topic entities (``answer_hops``) can widen it:
    for a question whose answers lie ``h`` hops away (``2 <= h <= max_hops``), the neighbourhood is read
    out to ``h`` hops and the model ranks the entities that far.

    Args:
        kg: the knowledge graph.
        llm: a LangChain chat model (default: the embedded local model).
        adapter: the embedded model's LoRA adapter: ``"auto"`` (default: the KG pack's shared
            specialist, the bundled one on the MetaQA graph; the zero-shot model without a pack),
            ``"specialist"``, ``"none"`` (zero-shot) or a folder from ``kg-agents train specialist``; a
            model of your own is used as it is.
        pack: the KG pack (:mod:`kg_agents.packs`): ``"auto"`` (default: the pack registered for the KG's
            content, the bundled one on MetaQA), ``"none"`` or a pack's folder. It settles
            ``adapter="auto"``, and ``answer_hops="auto"`` where its route for the method says
            ``answer_hops=predict``.
        prompts: templates overriding the bundled ones by name: ``rag``
            (``kg_agents/methods/baselines/prompts/rag.txt``).
        checkpointer: a LangGraph checkpointer.
        index: an ``EntityIndex`` (built on first need when None).
        fanout_limit: at most this many triples per topic entity.
        prompt: a template overriding the ``rag`` prompt (not also in ``prompts``).
        decide: ``"rank"`` (default): the model ranks the retrieved entities (the 1-hop neighbours)
            by log-probability; ``"generate"``: it writes its answer, which is kept only where it names
            a retrieved entity (the papers' route, for large models).
        answer_ratio: ranked route: answers are the best candidate and those whose probability is at
            least this share of the best one's.
        candidate_text: ranked route: a candidate is scored as its ``label`` (default; the better of
            the two on dev 1-hop questions, see docs/dev/results-history.md) or as the facts of its
            ``path`` (``"Splash directed by Ron Howard"``).
        calibrate: ranked route: rank each candidate by how much the question raises its
            log-probability (its score after the prompt less its score after the same prompt whose
            question is only the topic entities; a second LLM call). Default False: it takes twice the
            calls (what it changes: docs/dev/results-history.md).
        answer_hops: ranked route: how many hops from the topic entities the answers lie; only the
            candidates that far are offered (all of them where none is). ``"auto"`` (default): predicted
            by the KG pack's hop classifier where its route says so (the bundled MetaQA pack's, whose
            question forms it was trained on), or wherever ``hop_classifier`` is given, and off
            elsewhere (``"chain"`` where the route says ``"chain"``); ``"predict"``: always predicted;
            ``"chain"``: the length of the relation chain closest to the question
            (:func:`~kg_agents.core.hops.chain_hops`); a positive integer: that distance; ``"none"``:
            off, the 1-hop baseline of the papers. The papers' route (``decide="generate"``) ignores
            it. A run's context may set it.
        hop_classifier: an object with ``predict(questions, entities) -> list[int]`` for
            ``answer_hops`` (default: the pack's, else knowledge_navigator's bundled hop classifier).
        max_hops: the farthest ``answer_hops`` reads (default 2); a larger distance is traced and
            not followed (the 1-hop baseline): reading 3 hops costs many times the seconds, and scored
            below the 1-hop baseline on 3-hop questions (docs/dev/results-history.md).
        hop_fanout: at most this many triples per entity in a neighbourhood of two hops or more.
        max_neighbourhood: at most this many triples read for a neighbourhood of two hops or more (with
            ``hop_fanout``, the bound on the candidates the model ranks; what the defaults keep:
            docs/dev/results-history.md). Several topic entities share it, each its own neighbourhood.
        conjunction: a question with several topic entities: each has its neighbourhood (the prompt's
            triples taken from each in turn), and the answers are every entity the retrieved triples
            connect to all of them, best first, each with its path from each topic entity; none: no
            answer (``NoMeeting``). False: any topic entity's neighbour is a candidate. A run's context
            may set it.
        constraint: narrow the answers by a value the question states ("what did [Steven Spielberg]
            direct in 1993"): those holding it, each with its verified path to it
            (:mod:`~kg_agents.core.constraint`). A run's context may set it.

    Raises:
        ConfigError: an unknown prompt name, ``decide``, ``candidate_text`` or ``answer_hops``,
            ``answer_ratio`` outside (0, 1], a ``calibrate`` that is not a bool, or a ``max_hops``,
            ``hop_fanout`` or ``max_neighbourhood`` below 1.
    """
    if max_hops < 1 or hop_fanout < 1 or max_neighbourhood < 1:
        raise ConfigError(
            "graph_rag max_hops, hop_fanout and max_neighbourhood must be >= 1, "
            f"got {max_hops!r}, {hop_fanout!r} and {max_neighbourhood!r}"
        )
    setup, ranked = _ranked_setup(kg, "graph_rag", locals())
    deps = GraphRAGDeps(
        **ranked,
        fanout_limit=fanout_limit,
        max_hops=max_hops,
        hop_fanout=hop_fanout,
        max_neighbourhood=max_neighbourhood,
        defaults=context_defaults(GraphRAGContext, locals(), max_triples=60, max_answers=10),
    )
    nodes = (after_link, graph_rag_retrieve, graph_rag_answer)
    return _rag_graph("graph_rag", GraphRAGState, GraphRAGContext, setup, deps, nodes, index, checkpointer)


# --------------------------------------------------------------------------- text_rag
@dataclass
class TextRAGContext:
    """Per-run options of ``text_rag``; a field left None keeps the default.

    Attributes:
        top_k: the triples retrieved for the prompt (default 20).
        max_answers: at most this many answers (default 10).
        decide: ``"rank"`` or ``"generate"`` (see :class:`GraphRAGContext`).
        answer_ratio: ranked route: the probability share of the best answer that others need.
        answer_hops: ranked route: how far from the topic entities the answers lie (see
            :func:`create_text_rag_graph`).
        conjunction: several topic entities: the answers are the entities reached from every one of
            them (see :func:`create_text_rag_graph`).
        constraint: narrow the answers by a value the question states
            (:mod:`~kg_agents.core.constraint`; default: the factory's ``constraint``).
    """

    top_k: int | None = None
    max_answers: int | None = None
    decide: Decide | None = None
    answer_ratio: float | None = None
    answer_hops: int | str | None = None
    conjunction: bool | None = None
    constraint: bool | None = None


class TextRAGState(ReasoningState, total=False):
    """``text_rag``'s state: the retrieved triples and the answer distance."""

    triples: list[Triple]
    answer_hops: int | None


def create_text_rag_graph(
    kg: KnowledgeGraph,
    *,
    llm: Any = None,
    adapter: str = "auto",
    pack: str | Pack = "auto",
    prompts: Mapping[str, PromptLike] | None = None,
    checkpointer: Checkpointer = None,
    index: Any = None,
    encoder: Any = None,
    scope: Literal["neighborhood", "kg"] = "neighborhood",
    hops: int = 2,
    fanout_limit: int = 30,
    max_candidates: int = 300,
    index_dir: str | None = None,
    prompt: PromptLike | None = None,
    decide: Decide = "rank",
    answer_ratio: float = 0.5,
    candidate_text: Literal["auto", "label", "path"] = "auto",
    calibrate: bool = False,
    answer_hops: int | str = "auto",
    hop_classifier: Any = None,
    conjunction: bool = True,
    constraint: bool = True,
) -> CompiledStateGraph[Any, Any, Any, Any]:
    """Text RAG baseline: dense (FAISS) retrieval of verbalised triples as the context.

    Triples are written as sentences (``"Splash directed by Ron Howard"``) and embedded with the shared
    MiniLM sentence encoder; the ``top_k`` nearest to the question go to the chat model. With
    ``scope="neighborhood"`` the candidates are the triples within ``hops`` of the topic entities
    (bounded by ``fanout_limit`` per entity and ``max_candidates`` in all; embeddings are cached per
    graph); with ``scope="kg"`` they are all the KG's triples, in a FAISS index built once and
    persisted (:class:`~kg_agents.methods.baselines.retrieval.TripleTextIndex`). The answer candidates
    are the entities the retrieved triples chain to a topic entity within ``hops``; the model ranks
    them (or, ``decide="generate"``, names them), and their paths are verified against the KG.

    Args:
        kg: the knowledge graph.
        llm: a LangChain chat model (default: the embedded local model).
        adapter: the embedded model's LoRA adapter: ``"auto"`` (default: the KG pack's shared
            specialist, the bundled one on the MetaQA graph; the zero-shot model without a pack),
            ``"specialist"``, ``"none"`` (zero-shot) or a folder from ``kg-agents train specialist``; a
            model of your own is used as it is.
        pack: the KG pack (:mod:`kg_agents.packs`): ``"auto"`` (default: the pack registered for the KG's
            content, the bundled one on MetaQA), ``"none"`` or a pack's folder. It settles
            ``adapter="auto"``, and ``answer_hops="auto"`` where its route for the method says
            ``answer_hops=predict``.
        prompts: templates overriding the bundled ones by name: ``rag``
            (``kg_agents/methods/baselines/prompts/rag.txt``).
        checkpointer: a LangGraph checkpointer.
        index: an ``EntityIndex`` (built on first need when None).
        encoder: an ``Encoder`` (``encoder(texts) -> array``; default: the shared all-MiniLM-L6-v2,
            ``kg_agents.kg.encoder.get_sentence_encoder()``).
        scope: ``"neighborhood"`` (default) or ``"kg"``.
        hops: radius of the neighbourhood, and the longest supporting path.
        fanout_limit: at most this many triples per entity and hop.
        max_candidates: at most this many candidate triples per question (neighbourhood scope).
        index_dir: where the whole-KG index lives (default: the kg-agents cache).
        prompt: a template overriding the ``rag`` prompt (not also in ``prompts``).
        decide: ``"rank"`` (default) or ``"generate"`` (see :func:`create_graph_rag_graph`).
        answer_ratio: ranked route: the probability share of the best answer that others need.
        candidate_text: ranked route: a candidate is scored as the facts of its ``path`` or as its
            ``label``. ``"auto"`` (default): the label where every candidate lies at one distance from
            the topic entities (as ``answer_hops`` makes them), else the path. Among candidates at
            several distances a bare label lures the small model to entities two hops away; among
            candidates at one distance the label is the better (docs/dev/results-history.md).
        calibrate: ranked route: rank each candidate by how much the question raises it (see
            :func:`create_graph_rag_graph`). Default False. Without ``answer_hops``, for questions of
            two hops or more, ``candidate_text="label", calibrate=True`` is the better choice, but not
            at 1 hop; see docs/methods/baselines.md.
        answer_hops: ranked route: how many hops from the topic entities the answers lie; only the
            candidates that far are offered (all of them where none is). ``"auto"`` (default),
            ``"predict"``, a positive integer or ``"none"``, as for :func:`create_graph_rag_graph`. A
            distance beyond ``hops`` is traced and not followed (widening the neighbourhood to 3 hops
            scored below it on 3-hop questions: docs/dev/results-history.md).
        hop_classifier: predicts ``answer_hops`` (default: the pack's, else knowledge_navigator's
            bundled one).
        conjunction: a question with several topic entities (neighbourhood scope): each has its own
            neighbourhood (its share of ``max_candidates``) and its share of the ``top_k`` nearest
            triples, and the answers are every entity the retrieved triples connect to all of them, best
            first, each with its path from each topic entity; none: no answer (``NoMeeting``). False:
            any topic entity's is a candidate. A run's context may set it.
        constraint: narrow the answers by a value the question states ("what did [Steven Spielberg]
            direct in 1993"): those holding it, each with its verified path to it
            (:mod:`~kg_agents.core.constraint`). A run's context may set it.

    Raises:
        ConfigError: an unknown ``scope``, ``decide``, ``candidate_text``, ``answer_hops`` or prompt
            name, a bound below 1, ``answer_ratio`` outside (0, 1], or a ``calibrate`` that is not a
            bool.

    Example:
        >>> g = create_text_rag_graph(open_kg("metaqa"))                       # doctest: +SKIP
        >>> out = g.invoke({"question": "who directed [Splash]"}, context={"top_k": 10})  # doctest: +SKIP
    """
    if scope not in ("neighborhood", "kg"):
        raise ConfigError(f"text_rag scope must be 'neighborhood' or 'kg', got {scope!r}")
    if hops < 1 or fanout_limit < 1 or max_candidates < 1:
        raise ConfigError("text_rag hops, fanout_limit and max_candidates must be >= 1")
    setup, ranked = _ranked_setup(kg, "text_rag", locals(), auto_text=True)
    deps = TextRAGDeps(
        **ranked,
        embeddings=TripleEmbeddings(encoder, index_dir=index_dir),
        scope=scope,
        hops=hops,
        fanout_limit=fanout_limit,
        max_candidates=max_candidates,
        defaults=context_defaults(TextRAGContext, locals(), top_k=20, max_answers=10),
    )
    nodes = (functools.partial(text_rag_after_link, deps), text_rag_retrieve, text_rag_answer)
    return _rag_graph("text_rag", TextRAGState, TextRAGContext, setup, deps, nodes, index, checkpointer)
