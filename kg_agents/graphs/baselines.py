"""Baselines from the papers: ``llm_only`` (zero-shot) and ``graph_rag`` (1-hop neighbourhood).

They also show the pattern every reasoning graph follows:

- a factory ``create_<method>_graph(kg, *, llm=None, ..., checkpointer=None)`` with keyword-only
  options, returning a compiled ``StateGraph``;
- long-lived dependencies (KG, model, index) bound at creation; per-run knobs in a ``context_schema``
  dataclass read through ``Runtime``;
- nodes are plain functions of state returning partial updates, wrapped with ``metered`` so
  ``usage`` is measured; the KG is wrapped in ``MeteredKG``; LLM calls go through ``invoke_llm``;
- errors are recorded in ``errors``/``trace`` and the graph ends, instead of raising.

Example:
    >>> from kg_agents import open_kg
    >>> from kg_agents.graphs.baselines import create_graph_rag_graph
    >>> graph = create_graph_rag_graph(open_kg("metaqa"))          # doctest: +SKIP
    >>> graph.invoke({"question": "who directed [Splash]"})["answers"]  # doctest: +SKIP
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime

from kg_agents.graphs.nodes import error_update, make_link_entities_node, parse_answers, verified_paths_update
from kg_agents.graphs.state import (
    MeteredKG,
    ReasoningInput,
    ReasoningOutput,
    ReasoningState,
    invoke_llm,
    metered,
)
from kg_agents.kg.base import KnowledgeGraph, Path, Triple
from kg_agents.prompts import as_prompt


def default_llm(llm: Any) -> Any:
    """``llm`` itself, or the embedded local chat model when None."""
    if llm is not None:
        return llm
    from kg_agents.llm import resolve_chat_model

    return resolve_chat_model("local")


# --------------------------------------------------------------------------- llm_only
@dataclass
class LLMOnlyContext:
    """Per-run options of ``llm_only``."""

    max_answers: int = 10


def create_llm_only_graph(
    kg: KnowledgeGraph | None = None,
    *,
    llm: Any = None,
    prompt: Any = None,
    checkpointer: Any = None,
) -> Any:
    """Zero-shot LLM baseline: the question goes to the chat model, no knowledge graph.

    Args:
        kg: unused (accepted so every method has the same signature).
        llm: a LangChain chat model (default: the embedded local model).
        prompt: a prompt template overriding ``prompts/baselines/llm_only.txt``.
        checkpointer: a LangGraph checkpointer.
    """
    model = default_llm(llm)
    template = as_prompt(prompt, "baselines", "llm_only")

    @metered
    def answer(state: ReasoningState, runtime: Runtime[LLMOnlyContext]) -> dict[str, Any]:
        question = (state.get("question") or "").strip()
        if not question:
            return {"answers": [], "paths": [], **error_update("answer", "empty question")}
        msg = invoke_llm(model, template.format_messages(question=question))
        ctx = runtime.context or LLMOnlyContext()
        answers = parse_answers(str(msg.content))[: ctx.max_answers]
        return {"answers": answers, "paths": [], "trace": [{"node": "answer", "raw": str(msg.content)}]}

    g = StateGraph(ReasoningState, context_schema=LLMOnlyContext, input_schema=ReasoningInput,
                   output_schema=ReasoningOutput)
    g.add_node("answer", answer)
    g.add_edge(START, "answer")
    g.add_edge("answer", END)
    return g.compile(checkpointer=checkpointer, name="llm_only")


# --------------------------------------------------------------------------- graph_rag
@dataclass
class GraphRAGContext:
    """Per-run options of ``graph_rag``."""

    max_triples: int = 60
    max_answers: int = 10


class GraphRAGState(ReasoningState, total=False):
    triples: list[Triple]


def create_graph_rag_graph(
    kg: KnowledgeGraph,
    *,
    llm: Any = None,
    index: Any = None,
    fanout_limit: int = 200,
    prompt: Any = None,
    checkpointer: Any = None,
) -> Any:
    """Graph RAG baseline: the 1-hop neighbourhood (both directions) of the topic entities as context.

    Args:
        kg: the knowledge graph.
        llm: a LangChain chat model (default: the embedded local model).
        index: an ``EntityIndex`` (built on first need when None).
        fanout_limit: at most this many triples per topic entity.
        prompt: a prompt template overriding ``prompts/baselines/rag.txt``.
        checkpointer: a LangGraph checkpointer.
    """
    model = default_llm(llm)
    mkg = MeteredKG(kg)
    template = as_prompt(prompt, "baselines", "rag")

    @metered
    def retrieve(state: GraphRAGState, runtime: Runtime[GraphRAGContext]) -> dict[str, Any]:
        ctx = runtime.context or GraphRAGContext()
        ents = state.get("topic_entities") or []
        nbrs = mkg.neighbors_many(ents, direction="both", limit=fanout_limit)
        triples: list[Triple] = []
        truncated = [e for e, tl in nbrs.items() if tl.truncated]
        for e in ents:
            triples.extend(nbrs.get(e, []))
        cut = len(triples) > ctx.max_triples
        triples = triples[: ctx.max_triples]
        return {
            "triples": triples,
            "evidence": [t.to_text() for t in triples],
            "trace": [{"node": "retrieve", "triples": len(triples), "fanout_truncated": truncated,
                       "context_truncated": cut}],
        }

    @metered
    def answer(state: GraphRAGState, runtime: Runtime[GraphRAGContext]) -> dict[str, Any]:
        ctx = runtime.context or GraphRAGContext()
        triples = state.get("triples") or []
        knowledge = "\n".join(
            f"{mkg.label(t.head)} {t.relation.replace('_', ' ')} {mkg.label(t.tail)}" for t in triples
        ) or "(none)"
        msg = invoke_llm(model, template.format_messages(question=state["question"], knowledge=knowledge))
        answers = parse_answers(str(msg.content))[: ctx.max_answers]
        # The supporting paths: 1-hop paths from a topic entity to an answer.
        wanted = {a.lower() for a in answers}
        paths = []
        for t in triples:
            for start in state.get("topic_entities") or []:
                if start in (t.head, t.tail) and mkg.label(t.other(start)).lower() in wanted:
                    paths.append(Path.from_triples(start, [t]))
        update = verified_paths_update(mkg, paths)
        update.update({"answers": answers})
        update["trace"] = [{"node": "answer", "raw": str(msg.content)}, *update["trace"]]
        return update

    def after_link(state: GraphRAGState) -> str:
        return "retrieve" if state.get("topic_entities") else "end"

    g = StateGraph(GraphRAGState, context_schema=GraphRAGContext, input_schema=ReasoningInput,
                   output_schema=ReasoningOutput)
    g.add_node("link_entities", make_link_entities_node(mkg, index))
    g.add_node("retrieve", retrieve)
    g.add_node("answer", answer)
    g.add_edge(START, "link_entities")
    g.add_conditional_edges("link_entities", after_link, {"retrieve": "retrieve", "end": END})
    g.add_edge("retrieve", "answer")
    g.add_edge("answer", END)
    return g.compile(checkpointer=checkpointer, name="graph_rag")
