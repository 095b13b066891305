"""DualR (Dual Reasoning) as a LangGraph state machine.

Nodes: ``link_entities`` -> ``encode_question`` -> ``explore`` (the GNN retriever) -> ``backtrack``
(reasoning chains, algorithm 2, each verified against the KG) -> ``build_prompt`` (the
knowledge-enhanced multiple-choice prompt) -> ``determine_answer`` (one LLM call, or none in GNN-only
mode).

With ``llm=None`` the graph is the paper's DualR-w.o.-AD: the explorer's most probable candidates are
the answers and no LLM is called. With a chat model, exactly one call is made per question: the model
picks a labelled option (``A``, ``B``...) or answers freely.

Example:
    >>> from kg_agents import open_kg
    >>> graph = create_dualr_graph(open_kg("metaqa"))                                  # doctest: +SKIP
    >>> out = graph.invoke({"question": "who directed [Splash]"})                      # doctest: +SKIP
    >>> out["answers"], [p.to_text() for p in out["paths"]]                            # doctest: +SKIP
    (['Ron Howard'], ['Splash -> directed_by -> Ron Howard'])
"""

from __future__ import annotations

import re
import string
import threading
from dataclasses import dataclass
from pathlib import Path as FsPath
from typing import Any

from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime

from kg_agents.core.answers import parse_answers
from kg_agents.core.metering import MeteredKG, invoke_llm, metered
from kg_agents.core.models import default_llm
from kg_agents.core.nodes import make_link_entities_node, verified_paths_update
from kg_agents.core.prompts import as_prompt
from kg_agents.core.records import end_on_error, error_record, error_update, guarded, no_answer_error
from kg_agents.core.state import ReasoningInput, ReasoningOutput, ReasoningState
from kg_agents.errors import ConfigError, KGAgentsError
from kg_agents.kg.base import KnowledgeGraph, Path

CHECKPOINT_DIR = FsPath(__file__).resolve().parent / "checkpoints"
DEFAULT_CHECKPOINT = CHECKPOINT_DIR / "metaqa.pt"
LABELS = string.ascii_uppercase


@dataclass
class DualRContext:
    """Per-run options of ``dualr``.

    Args:
        num_candidates: N, the reference answers (top-N candidates) given to the LLM (paper: 3).
        top_k: edges kept per expanded entity at each layer (one value or one per layer; None: the
            graph's).
        layers: exploration steps (None: the graph's).
        answer_ratio: GNN-only mode answers every top-N candidate whose probability is at least this
            fraction of the best one (1.0: only the best).
    """

    num_candidates: int | None = None
    top_k: tuple[int, ...] | None = None
    layers: int | None = None
    answer_ratio: float = 0.5


class DualRState(ReasoningState, total=False):
    question_encoding: list[float]
    candidates: list[dict[str, Any]]
    explored: list[list[tuple[str, str | None, bool, str, float]]]
    chains: dict[str, str]
    options: str


def format_option(label: str, name: str, probability: float, facts: list[tuple[str, str, str]]) -> str:
    """One reference answer of the multiple-choice prompt (its own probability next to it).

    Example:
        >>> format_option("A", "1989", 0.9964, [("Dad", "release_year", "1989")])
        'A. 1989 (correct probability: 0.996) {relevant facts: (Dad, release_year, 1989)}'
    """
    facts_text = ", ".join(f"({h}, {r}, {t})" for h, r, t in facts)
    return f"{label}. {name} (correct probability: {probability:.3f}) {{relevant facts: {facts_text}}}"


def parse_choice(text: str, options: list[str]) -> tuple[int | None, list[str]]:
    """The option the LLM chose, or its free answer.

    Returns ``(index of the chosen option or None, free answers)``. A label is recognised as
    ``B.``/``B)``/``(B)``/``option B``/``answer is B`` or a lone ``B``; failing that, an option named in
    the text (the longest match first); failing that, the answers of
    :func:`~kg_agents.core.answers.parse_answers`.

    Example:
        >>> parse_choice("The correct answer is B. Miller Park.", ["Seattle Pilots", "Miller Park"])
        (1, [])
        >>> parse_choice("Answer: Milwaukee", ["Seattle Pilots", "Miller Park"])
        (None, ['Milwaukee'])
    """
    if not isinstance(text, str) or not text.strip():
        return None, []
    labels = LABELS[: len(options)]
    if labels:
        cls = f"[{labels}]"
        patterns = [
            rf"(?:answer|option|choice)\s*(?:is|:)?\s*[:\-]?\s*\(?({cls})\b(?![a-z'])",
            rf"(?:^|\s|\(|\*)({cls})[.)]\s",
            rf"(?:^|\s|\()({cls})[.)]?\s*$",
            rf"^\s*\(?({cls})\)?\s*[.:)\-]",
        ]
        for pat in patterns:
            m = (
                re.search(pat, text, re.IGNORECASE | re.MULTILINE)
                if "answer" in pat
                else re.search(pat, text, re.MULTILINE)
            )
            if m:
                i = labels.index(m.group(1).upper())
                # "B. 1998" where 1998 is option A's name: trust the content over the label.
                after = text[m.end() :].lstrip(" .:)").lower()
                named = [j for j, o in enumerate(options) if o and after.startswith(o.lower())]
                return (
                    named[0] if named and named[0] != i and not after.startswith(options[i].lower()) else i
                ), []
    low = text.lower()
    found = sorted((low.find(o.lower()), -len(o), j) for j, o in enumerate(options) if o and o.lower() in low)
    if found:
        return found[0][2], []
    marks = list(re.finditer(r"\banswers?\s*(?:is|:)\s*", text, re.IGNORECASE))
    return None, parse_answers(text[marks[-1].end() :] if marks else text)


def create_dualr_graph(
    kg: KnowledgeGraph,
    *,
    llm: Any = None,
    checkpoint: str | None = None,
    num_candidates: int = 3,
    top_k: list[int] | None = None,
    layers: int | None = None,
    fanout_limit: int = 1000,
    encoder: Any = None,
    index: Any = None,
    prompt: Any = None,
    checkpointer: Any = None,
) -> Any:
    """DualR: GNN exploration, reasoning chains and (optionally) one LLM call for the answer.

    Args:
        kg: the knowledge graph (any :class:`~kg_agents.kg.base.KnowledgeGraph`; the explorer reads it
            through ``neighbors_many`` in batches).
        llm: a LangChain chat model, a model spec for ``resolve_chat_model`` (``"local"``,
            ``"openai:<model>"``), or None/``"none"`` for GNN-only answering (no LLM call).
        checkpoint: a :class:`~.gnn.DualRExplorer` checkpoint (default: the bundled MetaQA one).
        num_candidates: N, reference answers given to the LLM.
        top_k: edges kept per expanded entity at each layer, one value or one per layer (default: the
            checkpoint's).
        layers: exploration steps (default: the checkpoint's; at most that many).
        fanout_limit: edges fetched per entity and expansion.
        encoder: the frozen text encoder (default: the one the checkpoint names).
        index: an ``EntityIndex`` for linking (built on first need when None).
        prompt: a template overriding ``prompts/dualr/answer.txt`` (placeholders ``question``, ``options``).
        checkpointer: a LangGraph checkpointer.

    Raises:
        ConfigError: a bad option or a missing checkpoint (at creation, not during a run).
    """
    import torch

    from kg_agents.methods.dualr.gnn.encoding import encoder_dim, get_text_encoder
    from kg_agents.methods.dualr.gnn.explorer import DualRExplorer, ExplorationGraph, backtrack

    if num_candidates < 1 or num_candidates > len(LABELS):
        raise ConfigError(f"num_candidates must be in 1..{len(LABELS)}, got {num_candidates}")
    model_llm = _resolve_llm(llm)
    model = DualRExplorer.load(checkpoint or DEFAULT_CHECKPOINT)
    mkg = MeteredKG(kg)
    default_k = (top_k,) if isinstance(top_k, int) else (tuple(top_k) if top_k else None)
    default_layers = layers
    if default_layers is not None and not 1 <= default_layers <= model.config.layers:
        raise ConfigError(f"layers must be in 1..{model.config.layers} for this checkpoint, got {layers}")
    template = as_prompt(prompt, "dualr", "answer")
    cache: dict[str, Any] = {}
    # The explorer's neighbour cache is shared by all runs of this graph; batch() runs nodes in threads.
    lock = threading.Lock()

    def get_encoder() -> Any:
        if "enc" not in cache:
            cache["enc"] = encoder if encoder is not None else get_text_encoder(model.config.encoder)
            dim = encoder_dim(cache["enc"])
            if dim != model.config.encoder_dim:
                raise ConfigError(
                    f"encoder gives {dim}-d vectors, the checkpoint expects {model.config.encoder_dim}"
                )
        return cache["enc"]

    def get_graph() -> ExplorationGraph:
        if "graph" not in cache:
            cache["graph"] = ExplorationGraph(mkg, get_encoder(), fanout_limit=fanout_limit)
        return cache["graph"]  # type: ignore[no-any-return]

    def ctx_of(runtime: Runtime[DualRContext]) -> DualRContext:
        return runtime.context or DualRContext()

    @metered
    @guarded("encode_question")
    def encode_question(state: DualRState) -> dict[str, Any]:
        try:
            vec = get_encoder()([state["question"]])[0]
        except KGAgentsError as exc:
            return {"answers": [], "paths": [], **error_update("encode_question", exc)}
        return {"question_encoding": [float(x) for x in vec]}

    @metered
    @guarded("explore")
    def explore(state: DualRState, runtime: Runtime[DualRContext]) -> dict[str, Any]:
        ctx = ctx_of(runtime)
        n = ctx.num_candidates or num_candidates
        ks = ctx.top_k or default_k
        try:
            q = torch.tensor([state["question_encoding"]], dtype=torch.float32)
            with lock, torch.no_grad():
                graph = get_graph()
                before_trunc = graph.truncated
                ex = model.explore(
                    q,
                    [state.get("topic_entities") or []],
                    graph,
                    top_k=ks,
                    layers=ctx.layers or default_layers,
                )
                top = ex.top_candidates(0, n)
                cands = [{"entity": graph.id2ent[e], "probability": p} for e, p in top]
                explored = ex.kept_edges(0)
                truncated = graph.truncated - before_trunc
        except KGAgentsError as exc:
            return {"answers": [], "paths": [], **error_update("explore", exc)}
        trace = {
            "node": "explore",
            "candidates": len(ex.entity),
            "before_pruning": [int(c[0]) for c in ex.before_pruning],
            "after_pruning": [int(c[0]) for c in ex.after_pruning],
            "fanout_truncated": truncated,
        }
        update: dict[str, Any] = {"candidates": cands, "explored": explored, "trace": [trace]}
        if not cands:
            update.update(
                answers=[],
                paths=[],
                errors=[
                    error_record(
                        "explore", "no candidate reached from the topic entities", type="NoCandidate"
                    )
                ],
            )
        return update

    @metered
    @guarded("backtrack")
    def backtrack_chains(state: DualRState) -> dict[str, Any]:
        explored = state.get("explored") or []
        chains = {c["entity"]: backtrack(explored, c["entity"]) for c in state.get("candidates") or []}
        checked = verified_paths_update(mkg, [p for p in chains.values() if len(p)], node="backtrack")
        ok = {p.to_text() for p in checked["paths"]}
        kept = {e: p.to_text() for e, p in chains.items() if p.to_text() in ok}
        trace = [{"node": "backtrack", "chains": kept}, *checked["trace"]]
        return {"chains": kept, "evidence": sorted(set(kept.values())), "trace": trace}

    @metered
    @guarded("build_prompt")
    def build_prompt(state: DualRState) -> dict[str, Any]:
        chains = state.get("chains") or {}
        lines = []
        for label, c in zip(LABELS, state.get("candidates") or [], strict=False):
            facts = []
            if c["entity"] in chains:
                facts = [
                    (mkg.label(t.head), t.relation, mkg.label(t.tail))
                    for t in Path.from_text(chains[c["entity"]]).triples
                ]
            lines.append(format_option(label, mkg.label(c["entity"]), c["probability"], facts))
        return {"options": "\n".join(lines)}

    @metered
    @guarded("determine_answer")
    def determine_answer(state: DualRState, runtime: Runtime[DualRContext]) -> dict[str, Any]:
        ctx = ctx_of(runtime)
        cands = state.get("candidates") or []
        chains = state.get("chains") or {}
        trace: dict[str, Any] = {"node": "determine_answer"}
        if model_llm is None:
            best = cands[0]["probability"]
            chosen = [c["entity"] for c in cands if c["probability"] >= ctx.answer_ratio * best]
            answers = [mkg.label(e) for e in chosen]
            trace["mode"] = "gnn_only"
        else:
            msg = invoke_llm(
                model_llm,
                template.format_messages(question=state["question"], options=state.get("options") or ""),
            )
            raw = str(msg.content)
            names = [mkg.label(c["entity"]) for c in cands]
            idx, free = parse_choice(raw, names)
            if idx is not None:
                chosen, answers = [cands[idx]["entity"]], [names[idx]]
            else:
                chosen, answers = [], free[:1]
            trace.update(mode="llm", raw=raw, choice=None if idx is None else LABELS[idx])
        update = verified_paths_update(mkg, [Path.from_text(chains[e]) for e in chosen if e in chains])
        update["answers"] = answers
        update["trace"] = [trace, *update["trace"]]
        if not answers:
            update["errors"] = no_answer_error("determine_answer", trace.get("raw", ""))
        return update

    g = StateGraph(
        DualRState, context_schema=DualRContext, input_schema=ReasoningInput, output_schema=ReasoningOutput
    )
    g.add_node("link_entities", make_link_entities_node(mkg, index))
    g.add_node("encode_question", encode_question)
    g.add_node("explore", explore)
    g.add_node("backtrack", backtrack_chains)
    g.add_node("build_prompt", build_prompt)
    g.add_node("determine_answer", determine_answer)
    g.add_edge(START, "link_entities")
    g.add_conditional_edges(
        "link_entities",
        end_on_error("encode_question", on_answers=True),
        {"encode_question": "encode_question", "end": END},
    )
    g.add_conditional_edges(
        "encode_question", end_on_error("explore", on_answers=True), {"explore": "explore", "end": END}
    )
    g.add_conditional_edges(
        "explore", end_on_error("backtrack", on_answers=True), {"backtrack": "backtrack", "end": END}
    )
    g.add_conditional_edges(
        "backtrack",
        end_on_error("build_prompt", on_answers=True),
        {"build_prompt": "build_prompt", "end": END},
    )
    g.add_conditional_edges(
        "build_prompt",
        end_on_error("determine_answer", on_answers=True),
        {"determine_answer": "determine_answer", "end": END},
    )
    g.add_edge("determine_answer", END)
    return g.compile(checkpointer=checkpointer, name="dualr")


def _resolve_llm(llm: Any) -> Any:
    if llm is None or (isinstance(llm, str) and llm.strip().lower() in ("none", "")):
        return None
    return default_llm(llm)
