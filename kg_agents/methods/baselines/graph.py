"""Baselines from the papers: ``llm_only`` (zero-shot), ``graph_rag`` (1-hop neighbourhood) and
``text_rag`` (dense retrieval over verbalised triples).

They also show the pattern every reasoning graph follows:

- a factory ``create_<method>_graph(kg, *, llm=None, ..., checkpointer=None)`` with keyword-only
  options, returning a compiled ``StateGraph``;
- long-lived dependencies (KG, model, index) bound at creation; per-run knobs in a ``context_schema``
  dataclass read through ``Runtime``;
- nodes are plain functions of state returning partial updates, wrapped with ``metered`` so
  ``usage`` is measured; the KG is wrapped in ``MeteredKG``; LLM calls go through ``invoke_llm``;
- errors are recorded in ``errors``/``trace`` and the graph ends, instead of raising: nodes that
  call the KG are ``guarded`` and routed with ``end_on_error``.

Example:
    >>> from kg_agents import open_kg
    >>> from kg_agents.methods.baselines.graph import create_graph_rag_graph
    >>> graph = create_graph_rag_graph(open_kg("metaqa"))          # doctest: +SKIP
    >>> graph.invoke({"question": "who directed [Splash]"})["answers"]  # doctest: +SKIP
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime

from kg_agents.core.answers import parse_answers
from kg_agents.core.metering import MeteredKG, invoke_llm, metered
from kg_agents.core.models import default_llm
from kg_agents.core.nodes import make_link_entities_node, verified_paths_update
from kg_agents.core.prompts import as_prompt
from kg_agents.core.records import end_on_error, error_update, guarded, no_answer_error
from kg_agents.core.state import ReasoningInput, ReasoningOutput, ReasoningState
from kg_agents.kg.base import KnowledgeGraph, Path, Triple


def _named_in(label: str, answers: list[str]) -> bool:
    """True when an answer names ``label`` (the evaluation's match: normalised, on word boundaries).

    Used to pick the supporting paths of a free-text answer ("The Son's Room was directed by ...").
    """
    from kg_agents.eval.metrics import answer_matches

    return any(answer_matches(a, label) for a in answers)


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
    @guarded("answer")
    def answer(state: ReasoningState, runtime: Runtime[LLMOnlyContext]) -> dict[str, Any]:
        question = (state.get("question") or "").strip()
        if not question:
            return {"answers": [], "paths": [], **error_update("answer", "empty question")}
        msg = invoke_llm(model, template.format_messages(question=question))
        ctx = runtime.context or LLMOnlyContext()
        answers = parse_answers(str(msg.content))[: ctx.max_answers]
        update = {"answers": answers, "paths": [], "trace": [{"node": "answer", "raw": str(msg.content)}]}
        return update | ({} if answers else {"errors": no_answer_error("answer", msg.content)})

    g = StateGraph(
        ReasoningState,
        context_schema=LLMOnlyContext,
        input_schema=ReasoningInput,
        output_schema=ReasoningOutput,
    )
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
    @guarded("retrieve")
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
            "trace": [
                {
                    "node": "retrieve",
                    "triples": len(triples),
                    "fanout_truncated": truncated,
                    "context_truncated": cut,
                }
            ],
        }

    @metered
    @guarded("answer")
    def answer(state: GraphRAGState, runtime: Runtime[GraphRAGContext]) -> dict[str, Any]:
        ctx = runtime.context or GraphRAGContext()
        triples = state.get("triples") or []
        knowledge = (
            "\n".join(
                f"{mkg.label(t.head)} {t.relation.replace('_', ' ')} {mkg.label(t.tail)}" for t in triples
            )
            or "(none)"
        )
        msg = invoke_llm(model, template.format_messages(question=state["question"], knowledge=knowledge))
        answers = parse_answers(str(msg.content))[: ctx.max_answers]
        # The supporting paths: 1-hop paths from a topic entity to an answer.
        starts = list(state.get("topic_entities") or [])
        paths = []
        for t in triples:
            for start in starts:
                if (
                    start in (t.head, t.tail)
                    and t.other(start) not in starts
                    and _named_in(mkg.label(t.other(start)), answers)
                ):
                    paths.append(Path.from_triples(start, [t]))
        update = verified_paths_update(mkg, paths)
        update.update({"answers": answers})
        update["trace"] = [{"node": "answer", "raw": str(msg.content)}, *update["trace"]]
        if not answers:
            update["errors"] = no_answer_error("answer", msg.content)
        return update

    def after_link(state: GraphRAGState) -> str:
        return "retrieve" if state.get("topic_entities") else "end"

    g = StateGraph(
        GraphRAGState,
        context_schema=GraphRAGContext,
        input_schema=ReasoningInput,
        output_schema=ReasoningOutput,
    )
    g.add_node("link_entities", make_link_entities_node(mkg, index))
    g.add_node("retrieve", retrieve)
    g.add_node("answer", answer)
    g.add_edge(START, "link_entities")
    g.add_conditional_edges("link_entities", after_link, {"retrieve": "retrieve", "end": END})
    g.add_conditional_edges("retrieve", end_on_error("answer"), {"answer": "answer", "end": END})
    g.add_edge("answer", END)
    return g.compile(checkpointer=checkpointer, name="graph_rag")


# --------------------------------------------------------------------------- text_rag
def verbalize(kg: Any, t: Triple) -> str:
    """A triple as a sentence for retrieval: ``"Splash directed by Ron Howard"``."""
    return f"{kg.label(t.head)} {t.relation.replace('_', ' ').replace('.', ' ')} {kg.label(t.tail)}"


def _encode(encoder: Any, texts: list[str]) -> Any:
    """L2-normalised float32 embeddings from an ``Encoder`` (``encoder(texts) -> array``)."""
    import numpy as np

    vecs = np.asarray(encoder(texts), dtype="float32").reshape(len(texts), -1)
    norms = np.linalg.norm(vecs, axis=1, keepdims=True)
    return vecs / np.where(norms > 0, norms, 1.0)


class TripleTextIndex:
    """FAISS inner-product index over the verbalised triples of a whole KG, persisted on disk.

    Built once per (KG, encoder) into ``directory`` (default:
    ``<cache>/text_index/<kg name>-<fingerprint>[-<encoder name>]``, cache as for the entity index):
    ``triples.faiss`` and ``triples.tsv``, each written to a temporary file and renamed into place.
    The KG must be able to list its triples (``iter_triples()``, as ``MemoryKG`` does).

    Example:
        >>> idx = TripleTextIndex.open(open_kg("metaqa"), encoder)     # doctest: +SKIP
        >>> idx.search(encoder.encode(["who directed Splash"]), 5)     # doctest: +SKIP
    """

    def __init__(self, index: Any, triples: list[Triple]) -> None:
        self.index = index
        self.triples = triples

    @classmethod
    def open(cls, kg: Any, encoder: Any, directory: str | None = None) -> TripleTextIndex:
        """Load the persisted index of ``kg`` or build and save it."""
        import os
        from pathlib import Path as FsPath

        import faiss

        from kg_agents.errors import ConfigError
        from kg_agents.files import cache_root, safe_name

        if directory:
            folder = FsPath(directory)
        else:
            from kg_agents.kg.encoder import DEFAULT_ENCODER

            name = str(getattr(encoder, "name", DEFAULT_ENCODER))
            suffix = "" if name == DEFAULT_ENCODER else "-" + safe_name(name)
            folder = cache_root() / "text_index" / f"{safe_name(str(kg.name))}-{kg.fingerprint()}{suffix}"
        fi, ft = folder / "triples.faiss", folder / "triples.tsv"
        if fi.is_file() and ft.is_file():
            with open(ft, encoding="utf-8") as fh:
                triples = [Triple(*line.rstrip("\n").split("\t")) for line in fh]
            return cls(faiss.read_index(str(fi)), triples)
        if not hasattr(kg, "iter_triples"):
            raise ConfigError(
                f"text_rag scope='kg' needs a KG that lists its triples; {kg!r} does not "
                "(use scope='neighborhood')"
            )
        triples = list(kg.iter_triples())
        vecs = _encode(encoder, [verbalize(kg, t) for t in triples])
        index = faiss.IndexFlatIP(vecs.shape[1])
        index.add(vecs)
        folder.mkdir(parents=True, exist_ok=True)
        tmp_i, tmp_t = (folder / f".{f.name}.{os.getpid()}.tmp" for f in (fi, ft))
        faiss.write_index(index, str(tmp_i))
        with open(tmp_t, "w", encoding="utf-8") as fh:
            fh.writelines(f"{t.head}\t{t.relation}\t{t.tail}\n" for t in triples)
        os.replace(tmp_t, ft)
        os.replace(tmp_i, fi)
        return cls(index, triples)

    def search(self, query: Any, k: int) -> list[Triple]:
        """The ``k`` triples nearest to the (normalised) query vector."""
        _, ids = self.index.search(query.reshape(1, -1), k)
        return [self.triples[i] for i in ids[0] if i >= 0]


@dataclass
class TextRAGContext:
    """Per-run options of ``text_rag``."""

    top_k: int = 20
    max_answers: int = 10


class TextRAGState(ReasoningState, total=False):
    triples: list[Triple]


def _neighbourhood(
    mkg: Any, starts: list[str], hops: int, fanout: int, budget: int
) -> tuple[list[Triple], bool]:
    """Triples within ``hops`` of ``starts`` (both directions), ``fanout`` per entity, ``budget`` in all."""
    seen: dict[Triple, None] = {}
    frontier = list(dict.fromkeys(starts))
    visited = set(frontier)
    cut = False
    for _ in range(hops):
        if not frontier or len(seen) >= budget:
            break
        nbrs = mkg.neighbors_many(frontier, direction="both", limit=fanout)
        nxt: list[str] = []
        for e in frontier:
            tl = nbrs.get(e, [])
            cut = cut or bool(getattr(tl, "truncated", False))
            for t in tl:
                if len(seen) >= budget:
                    cut = True
                    break
                seen.setdefault(t, None)
                o = t.other(e)
                if o not in visited:
                    visited.add(o)
                    nxt.append(o)
        frontier = nxt
    return list(seen), cut


def _support_paths(starts: list[str], triples: list[Triple], targets: set[str], hops: int) -> list[Path]:
    """Paths of at most ``hops`` retrieved triples from a topic entity to an entity in ``targets``."""
    by_entity: dict[str, list[Triple]] = {}
    for t in triples:
        by_entity.setdefault(t.head, []).append(t)
        if t.tail != t.head:
            by_entity.setdefault(t.tail, []).append(t)
    out: list[Path] = []
    layer: list[tuple[str, str, list[Triple]]] = [(s, s, []) for s in starts]
    for _ in range(hops):
        nxt: list[tuple[str, str, list[Triple]]] = []
        for start, cur, walked in layer:
            for t in by_entity.get(cur, []):
                if t in walked:
                    continue
                o = t.other(cur)
                path = [*walked, t]
                if o in targets:
                    out.append(Path.from_triples(start, path))
                nxt.append((start, o, path))
        layer = nxt[:2000]
    return out


def create_text_rag_graph(
    kg: KnowledgeGraph,
    *,
    llm: Any = None,
    index: Any = None,
    encoder: Any = None,
    scope: Literal["neighborhood", "kg"] = "neighborhood",
    hops: int = 2,
    fanout_limit: int = 30,
    max_candidates: int = 300,
    index_dir: str | None = None,
    prompt: Any = None,
    checkpointer: Any = None,
) -> Any:
    """Text RAG baseline: dense (FAISS) retrieval of verbalised triples as the context.

    Triples are written as sentences (``"Splash directed by Ron Howard"``) and embedded with the shared
    MiniLM sentence encoder; the ``top_k`` nearest to the question go to the chat model. With
    ``scope="neighborhood"`` the candidates are the triples within ``hops`` of the topic entities
    (bounded by ``fanout_limit`` per entity and ``max_candidates`` in all; embeddings are cached per
    graph); with ``scope="kg"`` they are all the KG's triples, in a FAISS index built once and
    persisted (:class:`TripleTextIndex`). Supporting paths (retrieved triples chaining a topic entity
    to an answer) are verified against the KG.

    Args:
        kg: the knowledge graph.
        llm: a LangChain chat model (default: the embedded local model).
        index: an ``EntityIndex`` (built on first need when None).
        encoder: an ``Encoder`` (``encoder(texts) -> array``; default: the shared all-MiniLM-L6-v2,
            ``kg_agents.kg.encoder.get_sentence_encoder()``).
        scope: ``"neighborhood"`` (default) or ``"kg"``.
        hops: radius of the neighbourhood, and the longest supporting path.
        fanout_limit: at most this many triples per entity and hop.
        max_candidates: at most this many candidate triples per question (neighbourhood scope).
        index_dir: where the whole-KG index lives (default: the kg-agents cache).
        prompt: a prompt template overriding ``prompts/baselines/rag.txt``.
        checkpointer: a LangGraph checkpointer.

    Example:
        >>> g = create_text_rag_graph(open_kg("metaqa"))                       # doctest: +SKIP
        >>> out = g.invoke({"question": "who directed [Splash]"}, context={"top_k": 10})  # doctest: +SKIP
    """
    from kg_agents.errors import ConfigError

    if scope not in ("neighborhood", "kg"):
        raise ConfigError(f"text_rag scope must be 'neighborhood' or 'kg', got {scope!r}")
    if hops < 1 or fanout_limit < 1 or max_candidates < 1:
        raise ConfigError("text_rag hops, fanout_limit and max_candidates must be >= 1")
    model = default_llm(llm)
    mkg = MeteredKG(kg)
    template = as_prompt(prompt, "baselines", "rag")
    cache: dict[str, Any] = {}
    emb_cache: dict[str, Any] = {}

    def get_encoder() -> Any:
        if "encoder" not in cache:
            if encoder is not None:
                cache["encoder"] = encoder
            else:
                from kg_agents.kg.encoder import get_sentence_encoder

                cache["encoder"] = get_sentence_encoder()
        return cache["encoder"]

    def embed(texts: list[str]) -> Any:
        import numpy as np

        missing = [t for t in dict.fromkeys(texts) if t not in emb_cache]
        if missing:
            for t, v in zip(missing, _encode(get_encoder(), missing), strict=True):
                emb_cache[t] = v
            while len(emb_cache) > 200_000:  # bounded: drop the oldest entries
                emb_cache.pop(next(iter(emb_cache)))
        return np.stack([emb_cache[t] for t in texts]) if texts else np.zeros((0, 1), dtype="float32")

    @metered
    @guarded("retrieve")
    def retrieve(state: TextRAGState, runtime: Runtime[TextRAGContext]) -> dict[str, Any]:
        import faiss

        ctx = runtime.context or TextRAGContext()
        ents = state.get("topic_entities") or []
        q = _encode(get_encoder(), [state["question"]])[0]
        if scope == "kg":
            if "kg_index" not in cache:
                cache["kg_index"] = TripleTextIndex.open(mkg.inner, get_encoder(), index_dir)
            found: list[Triple] = cache["kg_index"].search(q, ctx.top_k)
            return {
                "triples": found,
                "evidence": [verbalize(mkg, t) for t in found],
                "trace": [{"node": "retrieve", "scope": scope, "retrieved": len(found)}],
            }
        candidates, cut = _neighbourhood(mkg, ents, hops, fanout_limit, max_candidates)
        texts = [verbalize(mkg, t) for t in candidates]
        triples: list[Triple] = []
        if candidates:
            vecs = embed(texts)
            flat = faiss.IndexFlatIP(vecs.shape[1])
            flat.add(vecs)
            _, ids = flat.search(q.reshape(1, -1), min(ctx.top_k, len(candidates)))
            triples = [candidates[i] for i in ids[0] if i >= 0]
        return {
            "triples": triples,
            "evidence": [verbalize(mkg, t) for t in triples],
            "trace": [
                {
                    "node": "retrieve",
                    "scope": scope,
                    "candidates": len(candidates),
                    "retrieved": len(triples),
                    "candidates_truncated": cut,
                }
            ],
        }

    @metered
    @guarded("answer")
    def answer(state: TextRAGState, runtime: Runtime[TextRAGContext]) -> dict[str, Any]:
        ctx = runtime.context or TextRAGContext()
        triples = state.get("triples") or []
        knowledge = "\n".join(verbalize(mkg, t) for t in triples) or "(none)"
        msg = invoke_llm(model, template.format_messages(question=state["question"], knowledge=knowledge))
        answers = parse_answers(str(msg.content))[: ctx.max_answers]
        starts = list(state.get("topic_entities") or [])
        ents = {e for t in triples for e in (t.head, t.tail)} - set(starts)
        targets = {e for e in ents if _named_in(mkg.label(e), answers)}
        paths = _support_paths(starts, triples, targets, hops)
        update = verified_paths_update(mkg, paths)
        update["answers"] = answers
        update["trace"] = [{"node": "answer", "raw": str(msg.content)}, *update["trace"]]
        if not answers:
            update["errors"] = no_answer_error("answer", msg.content)
        return update

    def after_link(state: TextRAGState) -> str:
        if scope == "kg" and (state.get("question") or "").strip():
            return "retrieve"
        return "retrieve" if state.get("topic_entities") else "end"

    g = StateGraph(
        TextRAGState,
        context_schema=TextRAGContext,
        input_schema=ReasoningInput,
        output_schema=ReasoningOutput,
    )
    g.add_node("link_entities", make_link_entities_node(mkg, index))
    g.add_node("retrieve", retrieve)
    g.add_node("answer", answer)
    g.add_edge(START, "link_entities")
    g.add_conditional_edges("link_entities", after_link, {"retrieve": "retrieve", "end": END})
    g.add_conditional_edges("retrieve", end_on_error("answer"), {"answer": "answer", "end": END})
    g.add_edge("answer", END)
    return g.compile(checkpointer=checkpointer, name="text_rag")
