"""The baselines' graph nodes, as module-level functions over a dependencies object bound at build time.

- ``llm_only``: :func:`llm_only_answer` over :class:`LLMOnlyDeps`;
- ``graph_rag``: :func:`graph_rag_retrieve`, :func:`graph_rag_answer` over :class:`GraphRAGDeps`;
- ``text_rag``: :func:`text_rag_retrieve`, :func:`text_rag_answer` (and the router
  :func:`text_rag_after_link`) over :class:`TextRAGDeps`.

Each node takes ``(deps, state, runtime)`` and returns a partial state update; the factories in
:mod:`kg_agents.methods.baselines.graph` bind ``deps`` with :func:`functools.partial`. Per-run options
come from ``runtime.context`` laid over ``deps.defaults`` (:func:`~kg_agents.core.context.run_context`).
Nodes that call the KG or the model are ``guarded``: a failed KG call ends the question.

Example:
    >>> after_link({"topic_entities": ["Splash"]}), after_link({"topic_entities": []})
    ('retrieve', 'end')
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from langchain_core.prompts import ChatPromptTemplate

from kg_agents.core.answers import parse_answers
from kg_agents.core.conjunction import from_every_topic
from kg_agents.core.context import run_context
from kg_agents.core.decide import answer_candidates, ground_answers, rank, ranked_answers, topic_question
from kg_agents.core.hops import check_hops, question_hops
from kg_agents.core.metering import MeteredKG, invoke_llm, metered
from kg_agents.core.nodes import verified_paths_update
from kg_agents.core.records import error_record, error_update, guarded, no_answer_error
from kg_agents.core.support import support_paths
from kg_agents.kg.base import Path, Triple
from kg_agents.methods.baselines.retrieval import (
    TripleEmbeddings,
    interleave,
    topic_neighbourhoods,
    verbalize,
)
from kg_agents.untrusted import kg_block, kg_text

__all__ = [
    "NO_MEETING",
    "GraphRAGDeps",
    "LLMOnlyDeps",
    "TextRAGDeps",
    "after_link",
    "answer_distance",
    "answer_from_paths",
    "graph_rag_answer",
    "graph_rag_retrieve",
    "hub_links",
    "llm_only_answer",
    "nearest_meeting",
    "text_rag_after_link",
    "text_rag_answer",
    "text_rag_retrieve",
]


#: The message of a question with several topic entities none of whose candidates all of them reach.
NO_MEETING = "no retrieved entity is reached from every topic entity"


def after_link(state: Mapping[str, Any]) -> str:
    """``retrieve`` once the question has topic entities, else ``end``."""
    return "retrieve" if state.get("topic_entities") else "end"


# --------------------------------------------------------------------------- llm_only
@dataclass(frozen=True)
class LLMOnlyDeps:
    """What ``llm_only``'s node uses: the chat model, the prompt, the factory's context."""

    model: Any
    template: ChatPromptTemplate
    defaults: Any


@metered
@guarded("answer")
def llm_only_answer(deps: LLMOnlyDeps, state: Mapping[str, Any], runtime: Any) -> dict[str, Any]:
    """The question alone to the chat model; its answers parsed."""
    question = (state.get("question") or "").strip()
    if not question:
        return {"answers": [], "paths": [], **error_update("answer", "empty question", type="EmptyQuestion")}
    msg = invoke_llm(deps.model, deps.template.format_messages(question=question))
    ctx = run_context(runtime, deps.defaults)
    answers = parse_answers(str(msg.content))[: ctx.max_answers]
    update = {"answers": answers, "paths": [], "trace": [{"node": "answer", "raw": str(msg.content)}]}
    return update | ({} if answers else {"errors": no_answer_error("answer", msg.content)})


# --------------------------------------------------------------------------- graph_rag
@dataclass(frozen=True)
class GraphRAGDeps:
    """What ``graph_rag``'s nodes use.

    Attributes:
        kg: the metered knowledge graph.
        model: the chat model.
        template: the RAG prompt.
        fanout_limit: at most this many triples per topic entity.
        defaults: the factory's :class:`~kg_agents.methods.baselines.graph.GraphRAGContext`.
        candidate_text: how a ranked candidate reads: its ``label`` or the facts of its ``path``.
        calibrate: ranked route: score each candidate by how much the question raises it.
        hop_classifier: predicts the answer's distance for ``answer_hops`` (None: the bundled one).
        auto_hops: what ``answer_hops="auto"`` follows: True the classifier, ``"chain"`` the closest
            relation chain (the KG pack's route, see :func:`~kg_agents.core.hops.pack_hops`); None:
            where a ``hop_classifier`` is given.
        max_hops: the widest neighbourhood an answer distance may read.
        hop_fanout: at most this many triples per entity in a neighbourhood of two hops or more.
        max_neighbourhood: at most this many triples read for a neighbourhood of two hops or more.
    """

    kg: MeteredKG
    model: Any
    template: ChatPromptTemplate
    fanout_limit: int
    defaults: Any
    candidate_text: Literal["label", "path"] = "label"
    calibrate: bool = False
    hop_classifier: Any = None
    auto_hops: bool | str | None = None
    max_hops: int = 2
    hop_fanout: int = 30
    max_neighbourhood: int = 300


def answer_distance(
    deps: GraphRAGDeps | TextRAGDeps, state: Mapping[str, Any], ctx: Any, widest: int
) -> tuple[int | None, dict[str, Any]]:
    """How many hops from the topic entities a run's answers lie, on the ranked route (None: any), and
    what to trace of it.

    ``ctx.answer_hops``: an integer as it is, ``"predict"`` from the hop classifier, ``"auto"`` from it
    where the KG pack's route says so (or wherever a ``hop_classifier`` is given), ``"none"`` never
    (:func:`~kg_agents.core.hops.question_hops`); the papers' route (``decide="generate"``) never. A
    distance beyond ``widest``, the farthest the method reads, is traced and not followed.
    """
    mode = "none" if ctx.answer_hops is None else check_hops(ctx.answer_hops, "answer_hops")
    if ctx.decide != "rank":
        return None, {"answer_hops": None}
    topics = state.get("topic_entities") or []
    hops = question_hops(mode, deps.kg, state["question"], topics, deps.hop_classifier, auto=deps.auto_hops)
    if hops is not None and hops > widest:
        return None, {"answer_hops": None, "predicted_hops": hops, "beyond": widest}
    return hops, {"answer_hops": hops}


def at_distance(paths: list[Path], hops: int | None) -> tuple[list[Path], bool]:
    """The ``paths`` of exactly ``hops`` triples, or all of them where there are none (or no ``hops``).

    Returns:
        ``(paths, filtered)``: the paths kept, and whether the distance removed any.
    """
    if hops is None:
        return paths, False
    kept = [p for p in paths if len(p.triples) == hops]
    if not kept or len(kept) == len(paths):
        return paths, False
    return kept, True


def nearest_meeting(met: dict[str, list[Path]]) -> tuple[dict[str, list[Path]], int | None]:
    """The candidates of ``met`` (one path from each topic entity) whose paths have the fewest hops in
    all, and that number (None when there are none).

    Example:
        >>> near = Path.from_text("A -> r -> X"), Path.from_text("B -> s -> X")
        >>> far = Path.from_text("A -> r -> X -> g -> G"), Path.from_text("B -> s -> Y -> g -> G")
        >>> got, n = nearest_meeting({"G": list(far), "X": list(near)})
        >>> list(got), n
        (['X'], 2)
    """
    if not met:
        return {}, None
    size = {a: sum(len(p.hops) for p in ps) for a, ps in met.items()}
    least = min(size.values())
    return {a: ps for a, ps in met.items() if size[a] == least}, least


def hub_links(
    kg: Any, lists: Mapping[str, list[Triple]], hubs: list[str], fanout: int
) -> dict[str, list[Triple]]:
    """For each topic entity in ``hubs`` (whose neighbours were cut at the fan-out: a genre, a language),
    the triples that link it to the neighbours of the other topic entities (one read of their
    neighbourhoods): a conjunction's answers are among those, wherever the hub's cut fell.

    Example:
        >>> from kg_agents.kg import MemoryKG
        >>> kg = MemoryKG([("A", "genre", "Western"), ("B", "genre", "Western"), ("B", "by", "Mann")])
        >>> hub_links(kg, {"Western": [], "Mann": [Triple("B", "by", "Mann")]}, ["Western"], 10)
        {'Western': [Triple(head='B', relation='genre', tail='Western')]}
    """
    skip = set(lists)
    others = list(
        dict.fromkeys(
            t.other(e) for e, ts in lists.items() if e not in hubs for t in ts if t.other(e) not in skip
        )
    )
    if not others:
        return {}
    back = kg.neighbors_many(others, direction="both", limit=fanout)
    return {h: [t for o in others for t in back.get(o, []) if t.other(o) == h] for h in hubs}


@metered
@guarded("retrieve")
def graph_rag_retrieve(deps: GraphRAGDeps, state: Mapping[str, Any], runtime: Any) -> dict[str, Any]:
    """The 1-hop neighbourhood (both directions) of the topic entities, at most ``max_triples``.

    With an answer distance ``h`` of two or more (:func:`answer_distance`), the neighbourhood out to
    ``h`` hops (``hop_fanout`` per entity, ``max_neighbourhood`` triples in all) instead; the prompt
    shows its first ``max_triples``, and the answer step picks among the entities ``h`` hops away.

    Several topic entities: each has its own neighbourhood, with its share of ``max_neighbourhood``,
    and the triples are taken from each in turn, so the cut at ``max_triples`` keeps some of every one.
    At 1 hop, a topic entity whose neighbours the fan-out cut (a hub: a genre, a language) gets first
    the triples linking it to the other topic entities' neighbours (:func:`hub_links`).
    """
    ctx = run_context(runtime, deps.defaults)
    ents = list(dict.fromkeys(state.get("topic_entities") or []))
    hops, noted = answer_distance(deps, state, ctx, deps.max_hops)
    update: dict[str, Any] = {"answer_hops": hops}
    if hops is not None and hops >= 2:
        per_topic, cut = topic_neighbourhoods(deps.kg, ents, hops, deps.hop_fanout, deps.max_neighbourhood)
        found = interleave(per_topic)
        return update | {
            "neighbourhood": found,
            "triples": found[: ctx.max_triples],
            "evidence": [t.to_text() for t in found[: ctx.max_triples]],
            "trace": [
                {
                    "node": "retrieve",
                    **noted,
                    "triples": len(found),
                    "neighbourhood_truncated": cut,
                    "context_truncated": len(found) > ctx.max_triples,
                }
            ],
        }
    nbrs = deps.kg.neighbors_many(ents, direction="both", limit=deps.fanout_limit)
    truncated = [e for e, tl in nbrs.items() if tl.truncated]
    lists = {e: list(nbrs.get(e, [])) for e in ents}
    linked = 0
    if ctx.conjunction and len(ents) > 1 and truncated and len(truncated) < len(ents):
        links = hub_links(deps.kg, lists, truncated, deps.fanout_limit)
        linked = sum(len(x) for x in links.values())
        lists = {e: list(dict.fromkeys([*links.get(e, []), *ts])) for e, ts in lists.items()}
    triples: list[Triple] = interleave(lists.values())
    cut = len(triples) > ctx.max_triples
    triples = triples[: ctx.max_triples]
    if linked:
        noted = {**noted, "hub_links": linked}
    return update | {
        "triples": triples,
        "evidence": [t.to_text() for t in triples],
        "trace": [
            {
                "node": "retrieve",
                **noted,
                "triples": len(triples),
                "fanout_truncated": truncated,
                "context_truncated": cut,
            }
        ],
    }


def rag_messages(deps: GraphRAGDeps | TextRAGDeps, state: Mapping[str, Any], triples: list[Triple]) -> Any:
    """The RAG prompt with ``triples`` verbalised as its knowledge (KG text, in a ``<kg>`` block)."""
    knowledge = kg_block(kg_text(verbalize(deps.kg, t)) for t in triples) if triples else "(none)"
    return deps.template.format_messages(question=state["question"], knowledge=knowledge)


def answer_from_paths(
    deps: GraphRAGDeps | TextRAGDeps, state: Mapping[str, Any], paths: list[Path], ctx: Any
) -> dict[str, Any]:
    """The answer step of both RAG baselines: the model picks among the KG nodes that end ``paths``.

    ``decide="rank"`` ranks the candidates as replies (``Answer: <label>``, or with
    ``candidate_text="path"`` ``Answer: <the facts of its path>``; ``"auto"``: the label where every
    candidate lies at one distance from the topic entities, else the path) and keeps the best
    and those within ``answer_ratio`` of its probability; ``decide="generate"`` lets the model write
    its answer and keeps the candidates it names (the rest is dropped and traced). Either way every
    answer ends a returned, verified path. With an answer distance (``state["answer_hops"]``) only the
    candidates that far from a topic entity are offered, where there are any.

    Several topic entities (``conjunction``, on by default): the candidates are the entities the
    retrieved triples connect to every topic entity by the fewest hops in all (:func:`nearest_meeting`:
    the films two actors share, not the genres their films share), and every one of them is an answer,
    best first (cut at ``max_answers``), with its path from each topic entity; when none is reached from
    all of them, there is no answer (a ``NoMeeting`` error). The answer distance does not apply (a
    conjunction's chains may differ in length). ``conjunction`` off: any topic entity's neighbour is one.
    """
    kg = deps.kg
    triples = state.get("triples") or []
    topics = list(dict.fromkeys(state.get("topic_entities") or []))
    conjunction = bool(ctx.conjunction) and len(topics) > 1
    hops = None if conjunction else state.get("answer_hops")
    paths, filtered = at_distance(paths, hops)
    candidates = answer_candidates(kg.label, paths, exclude=topics)
    trace: dict[str, Any] = {"node": "answer", "decide": ctx.decide, "candidates": len(candidates)}
    if conjunction:  # only the entities reached from every topic entity, one path from each
        candidates, hops_in_all = nearest_meeting(from_every_topic(candidates, topics))
        trace.update(conjunction=True, met=len(candidates), met_hops=hops_in_all)
        if not candidates and paths:
            return {
                "answers": [],
                "paths": [],
                "trace": [trace],
                "errors": [error_record("answer", NO_MEETING, type="NoMeeting")],
            }
    if hops is not None:
        trace.update(answer_hops=hops, kept_at_distance=filtered)
    text_mode = deps.candidate_text
    if text_mode == "auto":  # a bare label misleads only among candidates at several distances
        distances = {min(len(p.triples) for p in ps) for ps in candidates.values()}
        text_mode = "label" if len(distances) <= 1 else "path"
    if not candidates:
        return {
            "answers": [],
            "paths": [],
            "trace": [trace],
            "errors": [error_record("answer", "no candidate entity was retrieved", type="NoCandidate")],
        }
    messages = rag_messages(deps, state, triples)
    if ctx.decide == "rank":
        labels = list(candidates)
        texts = labels
        trace["candidate_text"] = text_mode
        if text_mode == "path":  # each candidate as the facts that lead to it
            texts = [", ".join(verbalize(kg, t) for t in candidates[lab][0].triples) for lab in labels]
            texts = [
                t if texts.count(t) == 1 else f"{t} ({lab})" for t, lab in zip(texts, labels, strict=True)
            ]
        baseline = None
        if deps.calibrate:  # the same prompt with the question's words taken out: only its topic entities
            baseline = rag_messages(
                deps, {**state, "question": topic_question(map(kg.label, topics))}, triples
            )
        ranking = rank(
            deps.model, messages, texts, prefix="Answer: ", role="answer", keys=labels, baseline=baseline
        )
        picked = ranked_answers(ranking, max_answers=ctx.max_answers, ratio=ctx.answer_ratio)
        if conjunction and ranking.matched:  # the whole set where the topics meet, best first
            picked = [ranking.options[i] for i in ranking.order()][: ctx.max_answers]
        answers = [labels[texts.index(t)] for t in picked]
        trace.update(ranking.as_trace())
    else:
        msg = invoke_llm(deps.model, messages)
        texts = parse_answers(str(msg.content))
        answers, _, dropped = ground_answers(texts, candidates)
        answers = answers[: ctx.max_answers]
        trace.update(raw=str(msg.content), dropped=dropped)
    update = verified_paths_update(kg, [p for a in answers for p in candidates[a]])
    update["answers"] = answers
    update["trace"] = [trace, *update["trace"]]
    if not answers:
        update["errors"] = [
            error_record("answer", "the model's answer names no retrieved entity", type="UngroundedAnswer")
        ]
    return update


@metered
@guarded("answer")
def graph_rag_answer(deps: GraphRAGDeps, state: Mapping[str, Any], runtime: Any) -> dict[str, Any]:
    """The model picks among the 1-hop neighbours of the topic entities, or with an answer distance ``h``
    among the entities ``h`` hops away in the retrieved neighbourhood (see :func:`answer_from_paths`)."""
    starts = list(dict.fromkeys(state.get("topic_entities") or []))
    hops = state.get("answer_hops")
    if hops is not None and hops >= 2:
        found = state.get("neighbourhood") or []
        ends = {e for t in found for e in (t.head, t.tail)} - set(starts)
        paths = support_paths(starts, found, ends, max_hops=hops, shortest=True)
    else:
        paths = [
            Path.from_triples(start, [t])
            for t in state.get("triples") or []
            for start in starts
            if start in (t.head, t.tail) and t.other(start) not in starts
        ]
    return answer_from_paths(deps, state, paths, run_context(runtime, deps.defaults))


# --------------------------------------------------------------------------- text_rag
@dataclass(frozen=True)
class TextRAGDeps:
    """What ``text_rag``'s nodes use.

    Attributes:
        kg: the metered knowledge graph.
        model: the chat model.
        template: the RAG prompt.
        embeddings: the graph's encoder, embedding cache and whole-KG index.
        scope: ``"neighborhood"`` or ``"kg"``.
        hops: radius of the neighbourhood, and the longest supporting path.
        fanout_limit: at most this many triples per entity and hop.
        max_candidates: at most this many candidate triples per question (neighbourhood scope).
        defaults: the factory's :class:`~kg_agents.methods.baselines.graph.TextRAGContext`.
        candidate_text: how a ranked candidate reads: its ``label``, the facts of its ``path``, or
            ``auto``: the label where every candidate lies at one distance, else the path.
        calibrate: ranked route: score each candidate by how much the question raises it.
        hop_classifier: predicts the answer's distance for ``answer_hops`` (None: the bundled one).
        auto_hops: what ``answer_hops="auto"`` follows: True the classifier, ``"chain"`` the closest
            relation chain (the KG pack's route, see :func:`~kg_agents.core.hops.pack_hops`); None:
            where a ``hop_classifier`` is given.
    """

    kg: MeteredKG
    model: Any
    template: ChatPromptTemplate
    embeddings: TripleEmbeddings
    scope: Literal["neighborhood", "kg"]
    hops: int
    fanout_limit: int
    max_candidates: int
    defaults: Any
    candidate_text: Literal["auto", "label", "path"] = "auto"
    calibrate: bool = False
    hop_classifier: Any = None
    auto_hops: bool | str | None = None


def text_rag_after_link(deps: TextRAGDeps, state: Mapping[str, Any]) -> str:
    """``retrieve`` with topic entities, or with any question in the whole-KG scope; else ``end``."""
    if deps.scope == "kg" and (state.get("question") or "").strip():
        return "retrieve"
    return after_link(state)


@metered
@guarded("retrieve")
def text_rag_retrieve(deps: TextRAGDeps, state: Mapping[str, Any], runtime: Any) -> dict[str, Any]:
    """The ``top_k`` triples nearest to the question: among the neighbourhood, or the whole KG.

    An answer distance (:func:`answer_distance`) within ``hops`` is kept for the answer step. Several
    topic entities (neighbourhood scope): each has its own neighbourhood (its share of
    ``max_candidates``) and its share of the ``top_k`` nearest triples, taken from each in turn.
    """
    import faiss

    ctx = run_context(runtime, deps.defaults)
    kg = deps.kg
    ents = state.get("topic_entities") or []
    q = deps.embeddings.encode([state["question"]])[0]
    hops, noted = answer_distance(deps, state, ctx, deps.hops)
    if deps.scope == "kg":
        found = deps.embeddings.kg_index(kg.inner).search(q, ctx.top_k)
        return {
            "answer_hops": hops,
            "triples": found,
            "evidence": [verbalize(kg, t) for t in found],
            "trace": [{"node": "retrieve", "scope": deps.scope, **noted, "retrieved": len(found)}],
        }
    per_topic, cut = topic_neighbourhoods(kg, ents, deps.hops, deps.fanout_limit, deps.max_candidates)
    candidates = interleave(per_topic)
    triples: list[Triple] = []
    if candidates:
        vecs = deps.embeddings.embed([verbalize(kg, t) for t in candidates])
        row = {t: i for i, t in enumerate(candidates)}
        share = -(-ctx.top_k // len(per_topic))  # each topic's nearest, ceil(top_k / topics) of them
        nearest = []
        for own in per_topic:
            if not own:
                continue
            flat = faiss.IndexFlatIP(vecs.shape[1])
            flat.add(vecs[[row[t] for t in own]])
            _, ids = flat.search(q.reshape(1, -1), min(share, len(own)))
            nearest.append([own[i] for i in ids[0] if i >= 0])
        triples = interleave(nearest)[: ctx.top_k]
    return {
        "answer_hops": hops,
        "triples": triples,
        "evidence": [verbalize(kg, t) for t in triples],
        "trace": [
            {
                "node": "retrieve",
                "scope": deps.scope,
                **noted,
                "candidates": len(candidates),
                "retrieved": len(triples),
                "candidates_truncated": cut,
            }
        ],
    }


@metered
@guarded("answer")
def text_rag_answer(deps: TextRAGDeps, state: Mapping[str, Any], runtime: Any) -> dict[str, Any]:
    """The model picks among the entities the retrieved triples connect to a topic entity (within
    ``hops``; with no topic entity, among the ends of the retrieved triples; see
    :func:`answer_from_paths`)."""
    triples = state.get("triples") or []
    starts = list(state.get("topic_entities") or [])
    ents = {e for t in triples for e in (t.head, t.tail)} - set(starts)
    if starts:
        paths = support_paths(starts, triples, ents, max_hops=deps.hops, shortest=True)
    else:  # whole-KG scope, no topic entity: each retrieved triple is a path to either of its ends
        paths = [Path.from_triples(s, [t]) for t in triples for s in (t.head, t.tail)]
    return answer_from_paths(deps, state, paths, run_context(runtime, deps.defaults))
