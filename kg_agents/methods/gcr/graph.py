"""GCR, graph-constrained reasoning, as a LangGraph graph (sections 4.2-4.4 of "Graph-Constrained
Reasoning: Faithful Reasoning on Knowledge Graphs with LLMs", Luo et al.).

Nodes: ``link_entities`` -> ``get_trie`` (the question's KG-Trie, from the cache or built on demand)
-> ``decode`` (K paths + hypothesis answers by KG-Trie-constrained beam search) -> ``verify_paths``
(every path parsed back and checked against the KG) -> ``reason`` (graph inductive reasoning: the
general chat model reads all K paths and hypotheses in one call, figure 10; or, with
``general_llm=None``, a vote over the hypotheses: the paper's "w/o general LLM" ablation).

``constrained=False`` runs the same beam search without the trie (the figure-5 ablation): the paths
the model writes are still parsed and verified; ``trace`` says how many were not in the KG.

The nodes are the functions of :mod:`kg_agents.methods.gcr.nodes` over a
:class:`~kg_agents.methods.gcr.nodes.GCRDeps`; per-run options (:class:`GCRContext`) left unset keep
the factory's values.

Example:
    >>> from kg_agents import open_kg
    >>> from kg_agents.methods.gcr.graph import create_gcr_graph
    >>> graph = create_gcr_graph(open_kg("metaqa"))                                   # doctest: +SKIP
    >>> out = graph.invoke({"question": "who directed [Splash]"}, context={"num_beams": 5})  # doctest: +SKIP
    >>> out["answers"], [p.to_text() for p in out["paths"]]                          # doctest: +SKIP
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from langchain_core.prompts import ChatPromptTemplate
from langgraph.graph import END
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Checkpointer

from kg_agents.core.constraint import check_constraint, end_with_constraint
from kg_agents.core.decide import Decide, check_calibrate, check_decide, check_ratio
from kg_agents.core.factory import context_defaults, reasoning_graph, setup_method
from kg_agents.core.hops import check_hops
from kg_agents.core.prompts import prompt_templates
from kg_agents.core.state import ReasoningState
from kg_agents.errors import ConfigError
from kg_agents.kg.base import KnowledgeGraph
from kg_agents.llm.chat import LocalChatModel
from kg_agents.methods.gcr.adapter import load_gcr_decoder
from kg_agents.methods.gcr.decoding import check_path_scores
from kg_agents.methods.gcr.local_decoder import LocalConstrainedDecoder
from kg_agents.methods.gcr.nodes import (
    GCRDeps,
    after_decode,
    after_link,
    after_trie,
    decode,
    end_empty,
    get_trie,
    reason,
    verify,
)
from kg_agents.methods.gcr.resolve import resolve_decoder
from kg_agents.methods.gcr.trie import TrieCache
from kg_agents.packs import GCR_PATH_GENERATOR, Pack

__all__ = [
    "CANDIDATE_TEXTS",
    "PROMPT_NAMES",
    "PROMPT_STYLES",
    "GCRContext",
    "GCRState",
    "PromptStyle",
    "create_gcr_graph",
]

_DEFAULT: Any = object()
PromptStyle = Literal["zero_shot", "few_shot"]
PROMPT_STYLES: tuple[PromptStyle, ...] = ("zero_shot", "few_shot")
#: The bundled prompts, by the name ``prompts=`` overrides them with (``prompts/<name>.txt``).
PROMPT_NAMES = ("decode_few_shot", "decode_zero_shot", "reason")
#: What the general model ranks for each candidate answer (``candidate_text``).
CANDIDATE_TEXTS = ("label", "path")
#: At most this many final answers, unless the run's context says otherwise (the cut of a whole set).
MAX_ANSWERS = 100


@dataclass
class GCRContext:
    """Per-run options of ``gcr``; a field left None keeps the factory's value.

    Attributes:
        num_beams: K, the paths (and hypothesis answers) decoded per question.
        max_hops: L for the KG-Trie.
        max_answers: at most this many final answers (default 100): the cut of a whole set.
        decide: the general model's route: ``"rank"`` (it ranks the candidate answers) or
            ``"generate"`` (it writes them; kept where they name a candidate).
        answer_ratio: ranked route: the probability share of the best answer that others need.
        hops: the trie's depth per question: an integer, ``"predict"``, ``"auto"`` or ``"none"`` (see
            :func:`create_gcr_graph`).
        conjunction: several topic entities: paths decoded from each, the answers where they meet (see
            :func:`create_gcr_graph`).
        constraint: narrow the answers by a value the question states (see :func:`create_gcr_graph`).
        whole_set: add the other ends of the best answer's relation chain (see :func:`create_gcr_graph`).
    """

    num_beams: int | None = None
    max_hops: int | None = None
    max_answers: int | None = None
    decide: Decide | None = None
    answer_ratio: float | None = None
    hops: int | str | None = None
    conjunction: bool | None = None
    constraint: bool | None = None
    whole_set: bool | None = None


class GCRState(ReasoningState, total=False):
    """GCR's state: the decoded paths (as dicts: path text, hypothesis, score, in_trie), the trie's size
    and depth."""

    decoded: list[dict[str, Any]]
    trie_size: int
    trie_hops: int
    trie_exact: bool
    conjunction_route: bool


def create_gcr_graph(
    kg: KnowledgeGraph,
    *,
    llm: Any = None,
    prompts: Mapping[str, str | Path | ChatPromptTemplate] | None = None,
    checkpointer: Checkpointer = None,
    general_llm: Any = _DEFAULT,
    decoder: Any = None,
    adapter: str | None = "auto",
    general_adapter: str = "auto",
    pack: str | Pack = "auto",
    index: Any = None,
    num_beams: int = 10,
    max_hops: int = 2,
    constrained: bool = True,
    prompt_style: PromptStyle = "zero_shot",
    fanout_limit: int | None = 500,
    max_paths: int | None = 20_000,
    trie_cache: TrieCache | None = None,
    trie_dir: str | None = None,
    cache_size: int = 1024,
    decode_prompt: str | Path | ChatPromptTemplate | None = None,
    reason_prompt: str | Path | ChatPromptTemplate | None = None,
    decide: Decide = "rank",
    answer_ratio: float = 0.5,
    hops: int | str = "auto",
    hop_classifier: Any = None,
    path_scores: str = "trie",
    calibrate: bool = False,
    candidate_text: str = "label",
    conjunction: bool = True,
    constraint: bool = True,
    whole_set: bool = True,
) -> CompiledStateGraph[Any, Any, Any, Any]:
    """Graph-constrained reasoning: KG-Trie-constrained path decoding, then inductive reasoning.

    Args:
        kg: the knowledge graph.
        llm: the general chat model for inductive reasoning (default: the embedded local model).
        general_llm: overrides ``llm``; ``None`` answers by voting over the hypothesis answers
            (the paper's "w/o general LLM" ablation: one LLM call per question).
        decoder: a ``ConstrainedDecoder`` (the KG-specialised model; default: the embedded local
            model in a :class:`~kg_agents.methods.gcr.local_decoder.LocalConstrainedDecoder`), or a spec for
            :func:`~kg_agents.methods.gcr.decoding.resolve_decoder`: ``"local"``, ``"vllm:http://HOST:PORT/v1"``.
        adapter: a GCR LoRA adapter for the local decoder (the fine-tuned KG-specialised model of
            eq. 8): ``"auto"`` (default): the KG pack's ``gcr_path_generator`` with the local decoder (on
            the MetaQA graph the bundled one), none without one; ``"bundled"`` (the package's MetaQA
            adapter); a directory from ``kg-agents train gcr``; ``"none"`` or None: the zero-shot local
            model. Other than ``auto`` and ``none``, only with ``decoder`` None or ``"local"``.
        general_adapter: the LoRA adapter of the embedded model as the general reasoner:
            ``"auto"`` (default: the KG pack's specialist for gcr: on the MetaQA graph gcr's own, trained on
            its answer decisions over K = 5 decoded paths; the zero-shot model without a pack),
            ``"specialist"`` (that one), ``"none"`` (zero-shot) or a folder from ``kg-agents train
            specialist`` (``--set methods=gcr`` learns gcr's own answer decisions); a general model of your
            own is used as it is.
        pack: the KG pack (:mod:`kg_agents.packs`): ``"auto"`` (default: the pack registered for the KG's
            content, the bundled one on MetaQA), ``"none"`` (the zero-shot decoder and reasoner, every
            path of 1..``max_hops``) or a pack's folder. It settles ``adapter="auto"``,
            ``general_adapter="auto"``, and ``hops="auto"`` where its route for gcr says ``hops=predict``.
        index: an ``EntityIndex`` for linking (built on first need when None).
        num_beams: default K (per run: ``context={"num_beams": ...}``).
        max_hops: default L of the KG-Trie.
        constrained: False runs the decoder without the trie (faithfulness ablation).
        prompt_style: ``zero_shot`` (figure 9) or ``few_shot`` (figure 11) decoding prompt.
        fanout_limit, max_paths: KG-Trie construction bounds per entity (hits are in ``trace``).
        trie_cache: a shared :class:`~kg_agents.methods.gcr.trie.TrieCache` (else one is made for this graph).
        trie_dir: an offline trie directory (``kg-agents build-tries``) the cache reads first.
        cache_size: entities kept in the in-memory LRU of the graph's own cache.
        prompts: templates overriding the bundled ones by name (``decode_zero_shot``,
            ``decode_few_shot``, ``reason``: the files under ``kg_agents/methods/gcr/prompts/``).
        decode_prompt, reason_prompt: a template overriding the decoding prompt of ``prompt_style``,
            the reasoning prompt (not also in ``prompts``).
        checkpointer: a LangGraph checkpointer.
        decide: how the general model answers: ``"rank"`` (default) ranks the candidate answers (the
            KG nodes ending the verified paths, hypothesis answers that name one first) by
            log-probability; ``"generate"`` lets it write its answers (the paper's prompt), kept where
            they name a candidate. Every answer ends a returned, verified path on both routes, and on
            the vote route (``general_llm=None``).
        answer_ratio: ranked route: the best candidate and those whose probability is at least this
            share of the best one's.
        hops: the KG-Trie per question holds the paths of exactly this many hops (a departure from the
            paper, whose trie holds every path of 1..L hops for every question): an
            integer; ``"predict"``: the question's hop count from the hop classifier
            (the pack's, else knowledge_navigator's bundled one); ``"chain"``: the length of the relation
            chain closest to the question (:func:`~kg_agents.core.hops.chain_hops`); ``"auto"``: what
            the KG pack's route says (the bundled MetaQA pack's, whose question forms its classifier was
            trained on), or wherever ``hop_classifier`` is given, every path of 1..``max_hops``
            elsewhere (default); ``"none"``: every path of 1..``max_hops`` hops (the paper's). A run's
            context may set it.
        hop_classifier: an object with ``predict(questions, entities) -> list[int]`` for ``hops``
            (None: the pack's, else the bundled one, loaded on the first question that needs it).
        path_scores: how the decoder the graph builds (the local one, an adapter's, a ``"vllm:..."``
            spec) scores and ranks paths: ``"trie"`` (default): each token's log-probability
            renormalised over the tokens the trie allows there, summed, so the forced rest of an
            entity's name costs nothing and a path's score is its log-probability among the trie's
            paths (the vote then weighs each path by that probability); ``"model"``: the paper's,
            transformers' beam scores (full-vocabulary log-probabilities divided by the length). A
            decoder instance given as ``decoder`` keeps its own.
        calibrate: ranked route: rank each candidate by how much the question raises it, its
            log-probability after the reasoning prompt less that after the same prompt with only the
            question's topic entities left (one more LLM call per question; see
            :func:`~kg_agents.core.decide.rank`).
        candidate_text: ranked route: what the general model ranks for each candidate: ``"label"``
            (default): its name; ``"path"``: the first verified path that reaches it (``Splash ->
            directed_by -> Ron Howard``), so the relations that lead to it are in the option it scores.
        conjunction: a question with several topic entities (the trie on): one KG-Trie per topic
            entity, K paths decoded from each (a decoder call each), and the answers are the entities
            where the walks along each topic's decoded relation paths meet, best first (cut at
            ``max_answers``), each with one verified path from each topic entity; none (``NoMeeting``)
            when they do not meet (:mod:`~kg_agents.methods.gcr.conjunction`). False: one trie and one
            decoding from all of them together, as the paper does. A run's context may set it.
        constraint: narrow the answers by a value the question states ("what did [Steven Spielberg]
            direct in 1993"): those holding it, each with its verified path to it
            (:mod:`~kg_agents.core.constraint`); False: the answers as they are. A run's context may
            set it.
        whole_set: a chain question's whole answer set: after the answers the reasoner chose, every
            other end of the relation chain of the best answer's first verified path, walked again from
            its topic entity (:func:`~kg_agents.core.conjunction.complete_answers`), each with its
            verified walk, at most ``max_answers`` in all; the K decoded paths alone end on at most K
            entities. False: the reasoner's answers only. A run's context may set it.

    Raises:
        ConfigError: an unknown ``prompt_style``, ``decide``, ``path_scores``, ``candidate_text`` or
            prompt name, a bad ``general_adapter`` (or one with a general model other than the embedded
            one), ``answer_ratio`` outside (0, 1], ``adapter`` with a decoder other than the local one, no
            adapter at ``adapter``, or a decoder whose tokenizer differs from the cache's.

    Example:
        >>> graph = create_gcr_graph(kg, general_llm=None, num_beams=5)                # doctest: +SKIP
        >>> tuned = create_gcr_graph(kg, adapter="bundled")  # fine-tuned path generator  # doctest: +SKIP
        >>> graph.invoke({"question": "who directed Splash", "topic_entities": ["Splash"]})  # doctest: +SKIP
    """
    if prompt_style not in PROMPT_STYLES:
        raise ConfigError(f"prompt_style must be one of {PROMPT_STYLES}, got {prompt_style!r}")
    if num_beams < 1 or max_hops < 1:
        raise ConfigError(f"num_beams and max_hops must be >= 1, got {num_beams}, {max_hops}")
    check_hops(hops)
    check_path_scores(path_scores)
    check_decide(decide)
    check_calibrate(calibrate)
    if candidate_text not in CANDIDATE_TEXTS:
        raise ConfigError(f"candidate_text must be one of {CANDIDATE_TEXTS}, got {candidate_text!r}")
    check_ratio(answer_ratio)
    for name, flag in (("conjunction", conjunction), ("whole_set", whole_set)):
        if not isinstance(flag, bool):
            raise ConfigError(f"{name} must be True or False, got {flag!r}")
    check_constraint(constraint)
    templates = prompt_templates(
        "gcr", PROMPT_NAMES, prompts, **{f"decode_{prompt_style}": decode_prompt, "reason": reason_prompt}
    )
    # general_llm=None: the vote; else a model, a spec ("local", "openai:M") or None for llm: the local
    # model (with its adapter)
    setup = setup_method(
        kg,
        "gcr",
        llm=llm if general_llm is _DEFAULT else general_llm,
        adapter=general_adapter,
        pack=pack,
        hop_classifier=hop_classifier,
        chat=general_llm is not None,
    )
    # the embedded decoder runs in the dtype of the embedded chat model it is given with
    dtype = setup.llm.dtype if isinstance(setup.llm, LocalChatModel) else None
    decoder = _decoder(
        decoder, _adapter_for(adapter, setup.pack, decoder), dtype=dtype, path_scores=path_scores
    )
    if trie_cache is None:
        tokenizer = getattr(decoder, "tokenizer", None)
        if tokenizer is None:
            raise ConfigError("the decoder has no .tokenizer; pass trie_cache= built with its tokenizer")
        trie_cache = TrieCache(
            setup.kg,
            tokenizer,
            max_hops=max_hops,
            fanout_limit=fanout_limit,
            max_paths=max_paths,
            capacity=cache_size,
            directory=trie_dir,
        )
    deps = GCRDeps(
        kg=setup.kg,
        decoder=decoder,
        cache=trie_cache,
        general=setup.llm,
        decode_template=templates[f"decode_{prompt_style}"],
        reason_template=templates["reason"],
        constrained=constrained,
        defaults=context_defaults(GCRContext, locals(), max_answers=MAX_ANSWERS),
        hop_classifier=setup.hop_classifier,
        calibrate=calibrate,
        candidate_text=candidate_text,
        auto_hops=setup.auto_hops,
    )

    g = reasoning_graph(GCRState, GCRContext, setup, index)
    g.add_node("get_trie", functools.partial(get_trie, deps))
    g.add_node("decode", functools.partial(decode, deps))
    g.add_node("end_empty", end_empty)
    g.add_node("verify_paths", functools.partial(verify, deps))
    g.add_node("reason", functools.partial(reason, deps))
    g.add_conditional_edges("link_entities", after_link, {"get_trie": "get_trie", "end": END})
    g.add_conditional_edges("get_trie", after_trie, {"decode": "decode", "end": END})
    g.add_conditional_edges(
        "decode", after_decode, {"verify_paths": "verify_paths", "end_empty": "end_empty"}
    )
    g.add_edge("end_empty", END)
    g.add_edge("verify_paths", "reason")
    end_with_constraint(g, setup.kg, deps.defaults, ["reason"])
    return g.compile(checkpointer=checkpointer, name="gcr")


def _adapter_for(adapter: str | None, pack: Pack | None, decoder: Any) -> str | None:
    """The adapter option resolved: ``auto`` is the pack's path generator with the local decoder, none
    elsewhere; ``none`` is None."""
    if adapter == "auto":
        folder = pack.component_path(GCR_PATH_GENERATOR) if pack is not None else None
        return str(folder) if folder is not None and decoder in (None, "local") else None
    return None if adapter == "none" else adapter


def _decoder(
    decoder: Any, adapter: str | None, *, dtype: str | None = None, path_scores: str = "model"
) -> Any:
    """The constrained decoder: the adapter's, a spec resolved, the given one, or the local model's."""
    if adapter is not None:
        if decoder not in (None, "local"):
            raise ConfigError(
                "adapter= applies to the local decoder only; with decoder= a vLLM server or "
                "your own decoder, merge the adapter into the model it runs instead"
            )
        return load_gcr_decoder(adapter, dtype=dtype, path_scores=path_scores)
    if isinstance(decoder, str):
        return resolve_decoder(decoder, path_scores=path_scores)
    return LocalConstrainedDecoder(dtype=dtype, path_scores=path_scores) if decoder is None else decoder
