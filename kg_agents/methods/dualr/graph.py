"""DualR (Dual Reasoning) as a LangGraph state machine.

Nodes (:mod:`kg_agents.methods.dualr.nodes`): ``link_entities`` -> ``encode_question`` -> ``explore``
(the GNN retriever) -> ``backtrack`` (reasoning chains, algorithm 2, each verified against the KG) ->
``build_prompt`` (the knowledge-enhanced multiple-choice prompt) -> ``determine_answer``.

``answer_with="llm"`` (the default) makes exactly one LLM call per question: the model (``llm``; None is
the embedded local model, as in every method) picks a labelled option (``A``, ``B``...) or answers
freely. ``answer_with="gnn"`` is the paper's DualR-w.o.-AD: the explorer's most probable candidates are
the answers, no LLM is called and none is loaded.

Example:
    >>> from kg_agents import open_kg
    >>> graph = create_dualr_graph(open_kg("metaqa"), answer_with="gnn")              # doctest: +SKIP
    >>> out = graph.invoke({"question": "who directed [Splash]"})                      # doctest: +SKIP
    >>> out["answers"], [p.to_text() for p in out["paths"]]                            # doctest: +SKIP
    (['Ron Howard'], ['Splash -> directed_by -> Ron Howard'])
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path as FsPath
from typing import Any, Literal

from langgraph.graph import END
from langgraph.graph.state import CompiledStateGraph

from kg_agents.core.constraint import check_constraint, end_with_constraint
from kg_agents.core.decide import Decide, check_decide, check_ratio
from kg_agents.core.factory import context_defaults, reasoning_graph, setup_method
from kg_agents.core.models import check_adapter
from kg_agents.core.prompts import PromptLike, prompt_templates
from kg_agents.core.records import end_on_error
from kg_agents.core.state import ReasoningState
from kg_agents.errors import ConfigError
from kg_agents.kg.base import KnowledgeGraph
from kg_agents.kg.encoder import Encoder
from kg_agents.methods.dualr.gnn.explorer import DualRExplorer
from kg_agents.methods.dualr.nodes import (
    LABELS,
    DualRDeps,
    ExplorerSession,
    backtrack_chains,
    build_prompt,
    determine_answer,
    encode_question,
    explore,
)
from kg_agents.packs import DUALR, Pack, resolve_pack

__all__ = [
    "CHECKPOINT_DIR",
    "DEFAULT_CHECKPOINT",
    "NO_LLM_OPTIONS",
    "PROMPT_NAMES",
    "DualRContext",
    "DualRState",
    "create_dualr_graph",
]

CHECKPOINT_DIR = FsPath(__file__).resolve().parent / "checkpoints"
DEFAULT_CHECKPOINT = CHECKPOINT_DIR / "metaqa.pt"
PROMPTS_DIR = FsPath(__file__).resolve().parent / "prompts"
#: The bundled prompts, by name (the file stems under ``prompts/``).
PROMPT_NAMES: tuple[str, ...] = tuple(sorted(p.stem for p in PROMPTS_DIR.glob("*.txt")))
#: Factory option values with which the graph calls no LLM and loads no model: a caller that resolves a
#: chat model for ``llm`` (the CLI's ``--model``) skips it for these.
NO_LLM_OPTIONS: Mapping[str, tuple[Any, ...]] = {"answer_with": ("gnn",)}


@dataclass
class DualRContext:
    """Per-run options of ``dualr``; a field left None keeps the factory's value.

    Args:
        num_candidates: N, the reference answers (top-N candidates) given to the LLM (paper: 3).
        top_k: edges kept per expanded entity at each layer (one value or one per layer).
        layers: exploration steps (at most the checkpoint's).
        answer_ratio: with ``answer_with="gnn"``, every top-N candidate whose probability is at least
            this fraction of the best one is an answer (1.0: only the best).
        decide: with ``answer_with="llm"``: ``"rank"`` (the model ranks the reference answers) or
            ``"generate"`` (it writes its choice).
        whole_set: after the chosen answers, every explored candidate with at least ``set_ratio`` of
            the best candidate's probability and a verified chain (from every topic entity, for a
            conjunction), by probability; False: only the chosen answers (the paper).
        set_ratio: the share of the best candidate's probability a whole set's member needs.
        max_answers: the most answers of a whole set (the cut is traced).
        path_match: order the candidates by relation path, the path whose relation names read closest
            to the question first (see :func:`~.nodes.match_paths`).
        constraint: narrow the answers by a value the question states (see :func:`create_dualr_graph`).
    """

    num_candidates: int | None = None
    top_k: tuple[int, ...] | None = None
    layers: int | None = None
    answer_ratio: float | None = None
    decide: Decide | None = None
    whole_set: bool | None = None
    set_ratio: float | None = None
    max_answers: int | None = None
    path_match: bool | None = None
    constraint: bool | None = None


class DualRState(ReasoningState, total=False):
    """State of ``dualr`` (on top of :class:`~kg_agents.core.state.ReasoningState`)."""

    question_encoding: list[float]
    candidates: list[dict[str, Any]]
    pool: list[dict[str, Any]]
    explored: list[list[tuple[str, str | None, bool, str, float]]]
    chains: dict[str, str]
    topic_chains: dict[str, list[str]]
    options: str


def create_dualr_graph(
    kg: KnowledgeGraph,
    *,
    llm: Any = None,
    adapter: str = "auto",
    pack: str | Pack = "auto",
    answer_with: Literal["llm", "gnn"] = "llm",
    prompts: Mapping[str, PromptLike] | None = None,
    checkpoint: str | None = None,
    num_candidates: int = 3,
    top_k: list[int] | None = None,
    layers: int | None = None,
    answer_ratio: float = 0.5,
    fanout_limit: int = 1000,
    encoder: Encoder | None = None,
    index: Any = None,
    prompt: PromptLike | None = None,
    checkpointer: Any = None,
    decide: Decide = "rank",
    whole_set: bool = True,
    set_ratio: float = 0.2,
    max_answers: int = 100,
    path_match: bool = False,
    constraint: bool = True,
) -> CompiledStateGraph[Any, Any, Any, Any]:
    """DualR: GNN exploration, reasoning chains and one LLM call for the answer (or none).

    Args:
        kg: the knowledge graph (any :class:`~kg_agents.kg.base.KnowledgeGraph`; the explorer reads it
            through ``neighbors_many`` in batches).
        llm: a LangChain chat model, a model spec for ``resolve_chat_model`` (``"local"``,
            ``"openai:<model>"``), or None for the embedded local model. Not used (not even resolved)
            with ``answer_with="gnn"``.
        adapter: the embedded model's LoRA adapter: ``"auto"`` (default: the KG pack's specialist, the
            bundled shared one on the MetaQA graph; the zero-shot model without a pack), ``"specialist"``,
            ``"none"`` (zero-shot) or a folder from ``kg-agents train specialist``; a model of your own is
            used as it is.
        pack: the KG pack (:mod:`kg_agents.packs`): ``"auto"`` (default: the pack registered for the KG's
            content, the bundled one on MetaQA), ``"none"`` or a pack's folder. It settles
            ``adapter="auto"`` and, with ``checkpoint`` None, the explorer (the pack's ``dualr``).
        answer_with: ``"llm"``: the LLM picks among the reference answers (one call per question);
            ``"gnn"``: the explorer's most probable candidates are the answers (the paper's w.o. AD).
        prompts: bundled prompts overridden by name (``answer``): template text, a file path or a
            ``ChatPromptTemplate``.
        checkpoint: a :class:`~.gnn.DualRExplorer` checkpoint (default: the pack's ``dualr``, else the
            bundled MetaQA one, :data:`DEFAULT_CHECKPOINT`).
        num_candidates: N, reference answers given to the LLM.
        top_k: edges kept per expanded entity at each layer, one value or one per layer (default: the
            checkpoint's).
        layers: exploration steps (default: the checkpoint's; at most that many).
        answer_ratio: with ``answer_with="gnn"``, the answers are the top-N candidates whose probability is
            at least this fraction of the best one's.
        fanout_limit: edges fetched per entity and expansion.
        encoder: the frozen text encoder (default: the one the checkpoint names).
        index: an ``EntityIndex`` for linking (built on first need when None).
        prompt: the ``answer`` prompt (as ``prompts={"answer": ...}``; placeholders ``question``,
            ``options``).
        checkpointer: a LangGraph checkpointer.
        decide: with ``answer_with="llm"``: ``"rank"`` (default): the model ranks the reference answers
            (``Answer: A. <name>``, ...) by log-probability and the option probabilities go in the
            trace; ``"generate"``: it writes its choice, which is kept only when it names a candidate.
        whole_set: the whole answer set: the chosen answers first, then every other explored candidate
            (of the ``max_answers`` most probable) with at least ``set_ratio`` of the best candidate's
            probability and a verified chain (one from each topic entity, for a conjunction), by
            probability; False: the chosen answers only (the paper).
        set_ratio: see ``whole_set`` (0.2: the F1 of the GNN's sets on MetaQA, docs/methods/dualr.md).
        max_answers: the cut of a whole answer set (traced in ``determine_answer``'s ``whole_set``).
        path_match: with one topic entity, group the candidates by the relation path of their chains
            and put first the path whose relation names read closest to the question (cosine of the
            frozen encoder's vectors), the GNN's probability ordering the candidates within a path;
            the whole answer set is then the chosen answer's path's candidates. For a GNN trained on
            synthesised questions asked in other words: on PathQuestion's 2-hop set it turns many
            answers one hop short into right ones, on MetaQA's 1-hop questions it takes longer paths
            than asked (docs/methods/dualr.md). Off by default.
        constraint: narrow the answers by a value the question states ("what did [Steven Spielberg]
            direct in 1993"): those holding it, each with its verified path to it
            (:mod:`~kg_agents.core.constraint`); False: the answers as they are.

    Raises:
        ConfigError: a bad option or a missing checkpoint (at creation, not during a run).
    """
    if answer_with not in ("llm", "gnn"):
        raise ConfigError(f"unknown answer_with {answer_with!r}; valid: llm, gnn")
    check_decide(decide)
    if num_candidates < 1 or num_candidates > len(LABELS):
        raise ConfigError(f"num_candidates must be in 1..{len(LABELS)}, got {num_candidates}")
    if not isinstance(whole_set, bool):
        raise ConfigError(f"whole_set must be True or False, got {whole_set!r}")
    if isinstance(max_answers, bool) or not isinstance(max_answers, int) or max_answers < 1:
        raise ConfigError(f"max_answers must be a positive integer, got {max_answers!r}")
    if not isinstance(path_match, bool):
        raise ConfigError(f"path_match must be True or False, got {path_match!r}")
    check_constraint(constraint)
    check_adapter(adapter)
    templates = prompt_templates("dualr", PROMPT_NAMES, prompts, answer=prompt)
    chosen = resolve_pack(kg, pack)
    packed = chosen.component_path(DUALR) if chosen is not None else None
    model = DualRExplorer.load(checkpoint or packed or DEFAULT_CHECKPOINT)
    if layers is not None and not 1 <= layers <= model.config.layers:
        raise ConfigError(f"layers must be in 1..{model.config.layers} for this checkpoint, got {layers}")
    defaults = context_defaults(
        DualRContext,
        locals(),
        top_k=(top_k,) if isinstance(top_k, int) else (tuple(top_k) if top_k else None),
        set_ratio=check_ratio(set_ratio, "set_ratio"),
    )
    setup = setup_method(
        kg, "dualr", llm=llm, adapter=adapter, pack=chosen, hops_option=None, chat=answer_with == "llm"
    )
    deps = DualRDeps(
        kg=setup.kg,
        explorer=ExplorerSession(model, setup.kg, encoder=encoder, fanout_limit=fanout_limit),
        template=templates["answer"],
        defaults=defaults,
        answer_with=answer_with,
        llm=setup.llm,
    )

    g = reasoning_graph(DualRState, DualRContext, setup, index)
    g.add_node("encode_question", functools.partial(encode_question, deps))
    g.add_node("explore", functools.partial(explore, deps))
    g.add_node("backtrack", functools.partial(backtrack_chains, deps))
    g.add_node("build_prompt", functools.partial(build_prompt, deps))
    g.add_node("determine_answer", functools.partial(determine_answer, deps))
    steps = ["link_entities", "encode_question", "explore", "backtrack", "build_prompt", "determine_answer"]
    for node, nxt in itertools.pairwise(steps):
        g.add_conditional_edges(node, end_on_error(nxt, on_answers=True), {nxt: nxt, "end": END})
    end_with_constraint(g, setup.kg, defaults, ["determine_answer"], fanout=fanout_limit)
    return g.compile(checkpointer=checkpointer, name="dualr")
