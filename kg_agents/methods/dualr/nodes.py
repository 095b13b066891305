"""The nodes of the ``dualr`` graph, each a module-level function over a :class:`DualRDeps`.

:func:`~kg_agents.methods.dualr.graph.create_dualr_graph` binds the dependencies when it builds the
graph (``functools.partial(explore, deps)``); a test can call any node alone with its own deps, a
state dict and a runtime whose ``context`` is None (the factory's values) or a :class:`DualRContext`
(``kg_agents.methods.dualr.graph``).

The pure helpers of the answer step live here too: :func:`format_option` (one reference answer of the
multiple-choice prompt) and :func:`parse_choice` (the option the LLM picked, or its free answer).
"""

from __future__ import annotations

import itertools
import re
import string
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import torch
from langchain_core.prompts import ChatPromptTemplate
from langgraph.runtime import Runtime

from kg_agents._compute import run_compute
from kg_agents.core.answers import parse_answers
from kg_agents.core.conjunction import answer_set, path_relations
from kg_agents.core.context import run_context
from kg_agents.core.decide import rank
from kg_agents.core.metering import invoke_llm, metered
from kg_agents.core.nodes import verified_paths_update
from kg_agents.core.records import error_record, error_update, guarded, no_answer_error
from kg_agents.errors import ConfigError, KGAgentsError
from kg_agents.kg.base import KnowledgeGraph, Path, verify_paths
from kg_agents.kg.encoder import Encoder
from kg_agents.kg.text import bracket_mentions
from kg_agents.methods.dualr.gnn.encoding import encoder_dim, get_text_encoder
from kg_agents.methods.dualr.gnn.explorer import DualRExplorer, ExplorationGraph, backtrack
from kg_agents.synth.phrase import humanise
from kg_agents.untrusted import kg_block, kg_text

__all__ = [
    "LABELS",
    "DualRDeps",
    "ExplorerSession",
    "backtrack_chains",
    "build_prompt",
    "determine_answer",
    "encode_question",
    "explore",
    "format_option",
    "parse_choice",
    "whole_answer_set",
]

#: Labels of the reference answers in the multiple-choice prompt (so at most 26 candidates).
LABELS = string.ascii_uppercase

AnswerWith = Literal["llm", "gnn"]


# --------------------------------------------------------------------------- pure helpers
def format_option(label: str, name: str, probability: float, facts: list[tuple[str, str, str]]) -> str:
    """One reference answer of the multiple-choice prompt (its own probability next to it); the name and
    the facts are KG text, rendered with :func:`~kg_agents.untrusted.kg_text`.

    Example:
        >>> format_option("A", "1989", 0.9964, [("Dad", "release_year", "1989")])
        'A. 1989 (correct probability: 0.996) {relevant facts: (Dad, release_year, 1989)}'
    """
    facts_text = ", ".join(f"({kg_text(h)}, {kg_text(r)}, {kg_text(t)})" for h, r, t in facts)
    name = kg_text(name)
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


# --------------------------------------------------------------------------- dependencies
class ExplorerSession:
    """The explorer with the text encoder and the exploration graph it runs on, each built on first need.

    One session serves every run of a graph: the exploration graph keeps the neighbours it fetched, and
    :attr:`lock` serialises explorations over it (``batch()`` runs nodes in threads).

    Args:
        model: the trained explorer.
        kg: the (metered) knowledge graph.
        encoder: the frozen text encoder (None: the one the checkpoint names, loaded on first need).
        fanout_limit: edges fetched per entity and expansion.
    """

    def __init__(
        self,
        model: DualRExplorer,
        kg: KnowledgeGraph,
        *,
        encoder: Encoder | None = None,
        fanout_limit: int = 1000,
    ) -> None:
        self.model = model
        self.kg = kg
        self.fanout_limit = fanout_limit
        self.lock = threading.Lock()
        self._given = encoder
        self._encoder: Encoder | None = None
        self._graph: ExplorationGraph | None = None
        self._texts: dict[str, np.ndarray] = {}

    def encoder(self) -> Encoder:
        """The text encoder, checked against the size the checkpoint expects.

        Raises:
            ConfigError: the encoder's vectors have another size.
        """
        if self._encoder is None:
            enc = self._given if self._given is not None else get_text_encoder(self.model.config.encoder)
            dim = encoder_dim(enc)
            if dim != self.model.config.encoder_dim:
                raise ConfigError(
                    f"encoder gives {dim}-d vectors, the checkpoint expects {self.model.config.encoder_dim}"
                )
            self._encoder = enc
        return self._encoder

    def encode_texts(self, texts: list[str]) -> np.ndarray:
        """Unit vectors of ``texts`` by :meth:`encoder`, each text encoded once per session."""
        new = [t for t in dict.fromkeys(texts) if t not in self._texts]
        if new:
            vecs = np.asarray(self.encoder()(new), np.float32)
            for t, v in zip(new, vecs, strict=True):
                self._texts[t] = v / (float(np.linalg.norm(v)) or 1.0)
        return np.stack([self._texts[t] for t in texts]) if texts else np.zeros((0, 1), np.float32)

    def graph(self) -> ExplorationGraph:
        """The exploration graph over :attr:`kg` (call it holding :attr:`lock`)."""
        if self._graph is None:
            self._graph = ExplorationGraph(self.kg, self.encoder(), fanout_limit=self.fanout_limit)
        return self._graph


@dataclass(frozen=True)
class DualRDeps:
    """What the ``dualr`` nodes need, bound once when the graph is built.

    Args:
        kg: the (metered) knowledge graph.
        explorer: the explorer session (model, encoder, exploration graph).
        template: the answer prompt (placeholders ``question``, ``options``).
        defaults: the factory's full ``DualRContext``; a run's context is laid over it.
        answer_with: ``"llm"`` (one LLM call picks among the candidates) or ``"gnn"`` (the explorer's
            most probable candidates are the answers; no LLM).
        llm: the chat model (None when ``answer_with="gnn"``).
    """

    kg: Any
    explorer: ExplorerSession
    template: ChatPromptTemplate
    defaults: Any
    answer_with: AnswerWith = "llm"
    llm: Any = None


# --------------------------------------------------------------------------- nodes
@metered
@guarded("encode_question")
def encode_question(deps: DualRDeps, state: Mapping[str, Any]) -> dict[str, Any]:
    """The question's text encoding (the frozen encoder of the checkpoint).

    A question whose topic entities were linked rather than ``[bracketed]`` gets their mentions bracketed
    first, so a topic-masking encoder reads it as it reads MetaQA's marked questions.
    """
    topics = state.get("topic_entities") or []
    question = bracket_mentions(state["question"], [deps.kg.label(e) for e in topics])
    try:
        vec = deps.explorer.encoder()([question])[0]
    except KGAgentsError as exc:
        return {"answers": [], "paths": [], **error_update("encode_question", exc)}
    return {"question_encoding": [float(x) for x in vec]}


@metered
@guarded("explore")
def explore(deps: DualRDeps, state: Mapping[str, Any], runtime: Runtime[Any] | None = None) -> dict[str, Any]:
    """The GNN's exploration from the topic entities: the top-N candidates and the kept edges."""
    ctx = run_context(runtime, deps.defaults)
    session = deps.explorer
    try:
        q = torch.tensor([state["question_encoding"]], dtype=torch.float32)
        with session.lock, torch.no_grad():
            graph = session.graph()
            before_trunc = graph.truncated
            ex = run_compute(
                session.model.explore,
                q,
                [state.get("topic_entities") or []],
                graph,
                top_k=ctx.top_k,
                layers=ctx.layers,
            )
            top = ex.top_candidates(0, max(ctx.num_candidates, ctx.max_answers))
            pool = [{"entity": graph.id2ent[e], "probability": p} for e, p in top]
            cands = pool[: ctx.num_candidates]
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
    update: dict[str, Any] = {"candidates": cands, "pool": pool, "explored": explored, "trace": [trace]}
    if not cands:
        update.update(
            answers=[],
            paths=[],
            errors=[
                error_record("explore", "no candidate reached from the topic entities", type="NoCandidate")
            ],
        )
    return update


def _topic_chains(
    deps: DualRDeps, explored: list[Any], cands: list[dict[str, Any]], topics: list[str]
) -> dict[str, list[str]]:
    """Each candidate reached from every topic entity, with one verified chain from each (in the
    topics' order); a candidate missing one is left out."""
    out: dict[str, list[str]] = {}
    for c in cands:
        paths = [backtrack(explored, c["entity"], t) for t in topics]
        if all(len(p) for p in paths) and verify_paths(deps.kg, paths)[1] == 0:
            out[c["entity"]] = [p.to_text() for p in paths]
    return out


def _relations(chains: dict[str, str], entity: str) -> tuple[str, ...]:
    """The relation path of ``entity``'s chain (empty without one)."""
    return tuple(path_relations(Path.from_text(chains[entity]))) if entity in chains else ()


def _turns_back(relation_path: str) -> bool:
    """Whether a relation path takes a step and then the same step back (``gender ~gender``): it
    reads as its relation twice without asking anything more."""
    steps = relation_path.split()
    return any(b == (a[1:] if a.startswith("~") else "~" + a) for a, b in itertools.pairwise(steps))


def path_words(path: Path) -> str:
    """A chain's relation path read as words, one relation after the other (``"spouse gender"``)."""
    return " ".join(humanise(h.relation).phrase for h in path.hops)


def match_paths(
    deps: DualRDeps, question: str, pool: list[dict[str, Any]], chains: dict[str, str]
) -> tuple[list[dict[str, Any]], dict[str, float]]:
    """The candidates ordered by relation path: the path whose relation names read closest to the
    question first, by the cosine of the frozen encoder's vectors of the question (its topic entities
    masked) and of the path's relation names read as words (:func:`path_words`). A path that steps
    back along the relation it came by goes after every other; ties (a path and its reverse read
    alike) go by the path's best probability, then by the path's text; within a path, candidates go
    by probability.

    A GNN trained on synthesised questions learnt the generic forms' wording; a person's wording
    ("X's other half's sex") it may read as a shorter chain than it is. Relation names read as words
    do not depend on the wording the GNN learnt; they favour the paths whose every relation the
    question names, and also longer paths whose extra relation merely shares the question's topic
    (docs/methods/dualr.md has the figures). Returns the ordered candidates and each relation path's
    similarity (its text, ``~`` marking a reverse step, -> cosine).
    """
    by_path: dict[str, list[dict[str, Any]]] = {}
    words: dict[str, str] = {}
    for c in pool:
        key = " ".join(_relations(chains, c["entity"]))
        by_path.setdefault(key, []).append(c)
        words.setdefault(key, path_words(Path.from_text(chains[c["entity"]])))
    if len(by_path) < 2:
        return pool, dict.fromkeys(by_path, 1.0)
    keys = sorted(by_path)
    vecs = deps.explorer.encode_texts([question, *(words[k] for k in keys)])
    sims = {k: float(v @ vecs[0]) for k, v in zip(keys, vecs[1:], strict=True)}
    order = sorted(keys, key=lambda k: (_turns_back(k), -round(sims[k], 6), -by_path[k][0]["probability"], k))
    return [c for k in order for c in by_path[k]], sims


@metered
@guarded("backtrack")
def backtrack_chains(
    deps: DualRDeps, state: Mapping[str, Any], runtime: Runtime[Any] | None = None
) -> dict[str, Any]:
    """Algorithm 2: each candidate's reasoning chain, kept only when every hop is a KG triple; the
    candidates without one are dropped (traced as ``no_chain``).

    With several topic entities (a conjunction), each candidate's chain is backtracked from every topic
    entity: the candidates reached from all of them, each with a verified chain from each, are the
    options (``topic_chains``): the ``num_candidates`` most probable of the ``max_answers`` most
    probable candidates, those whose chains are shortest together first, then by probability; when none
    is, the question falls back to the candidates' own chains (traced as
    ``conjunction_met: false``)."""
    ctx = run_context(runtime, deps.defaults)
    explored = state.get("explored") or []
    topics = [t for t in dict.fromkeys(state.get("topic_entities") or []) if deps.kg.has_entity(t)]
    every_cand = {c["entity"]: c for c in [*(state.get("candidates") or []), *(state.get("pool") or [])]}
    chains = {e: backtrack(explored, e) for e in every_cand}
    checked = verified_paths_update(deps.kg, [p for p in chains.values() if len(p)], node="backtrack")
    ok = {p.to_text() for p in checked["paths"]}
    kept = {e: p.to_text() for e, p in chains.items() if len(p) and p.to_text() in ok}
    # a candidate without a verified chain (a topic entity reached back, a chain that failed to verify)
    # cannot be a grounded answer: it leaves the options
    cands = [c for c in state.get("candidates") or [] if c["entity"] in kept]
    pool = [c for c in state.get("pool") or [] if c["entity"] in kept]
    dropped = [c["entity"] for c in state.get("candidates") or [] if c["entity"] not in kept]
    info: dict[str, Any] = {"node": "backtrack", "chains": {c["entity"]: kept[c["entity"]] for c in cands}}
    info["no_chain"] = dropped
    if ctx.path_match and len(topics) <= 1 and pool:
        question = bracket_mentions(state["question"], [deps.kg.label(t) for t in topics])
        pool, sims = match_paths(deps, question, pool, kept)
        best = " ".join(_relations(kept, pool[0]["entity"]))
        cands = pool[: ctx.num_candidates]
        info["chains"] = {c["entity"]: kept[c["entity"]] for c in cands}
        info["path_match"] = {"best": best, "paths": {w: round(v, 4) for w, v in sims.items()}}
    every: dict[str, list[str]] = {}
    if len(topics) > 1:
        every = _topic_chains(
            deps, explored, list({c["entity"]: c for c in [*cands, *pool]}.values()), topics
        )
        info["conjunction_met"] = any(c["entity"] in every for c in pool)
        info["not_every_topic"] = [c["entity"] for c in cands if c["entity"] not in every]
        if info["conjunction_met"]:
            # where the topics' chains meet soonest first (the explorer learnt chains from one topic
            # entity: a far meeting through tags or years is rarely what a conjunction asks), then by
            # probability
            pool = sorted(
                (c for c in pool if c["entity"] in every),
                key=lambda c: (sum(len(Path.from_text(t)) for t in every[c["entity"]]), -c["probability"]),
            )
            cands = pool[: ctx.num_candidates]
        else:
            every = {}
    trace = [info, *checked["trace"]]
    update: dict[str, Any] = {
        "chains": kept,
        "topic_chains": every,
        "candidates": cands,
        "pool": pool,
        "evidence": sorted({t for c in cands for t in every.get(c["entity"]) or [kept[c["entity"]]]}),
        "trace": trace,
    }
    if not cands:
        update.update(
            answers=[],
            paths=[],
            errors=[error_record("backtrack", "no candidate has a verified reasoning chain", type="NoPath")],
        )
    return update


@metered
@guarded("build_prompt")
def build_prompt(deps: DualRDeps, state: Mapping[str, Any]) -> dict[str, Any]:
    """The knowledge-enhanced options: each candidate's label, probability and chain facts."""
    chains = state.get("chains") or {}
    every = state.get("topic_chains") or {}
    lines = []
    for label, c in zip(LABELS, state.get("candidates") or [], strict=False):
        texts = every.get(c["entity"]) or ([chains[c["entity"]]] if c["entity"] in chains else [])
        facts = [
            (deps.kg.label(t.head), t.relation, deps.kg.label(t.tail))
            for text in texts
            for t in Path.from_text(text).triples
        ]
        lines.append(format_option(label, deps.kg.label(c["entity"]), c["probability"], facts))
    return {"options": kg_block(lines)}


@metered
@guarded("determine_answer")
def determine_answer(
    deps: DualRDeps, state: Mapping[str, Any], runtime: Runtime[Any] | None = None
) -> dict[str, Any]:
    """The answer: one LLM call over the options, or (``answer_with="gnn"``) the GNN's best candidates."""
    ctx = run_context(runtime, deps.defaults)
    cands = state.get("candidates") or []
    chains = state.get("chains") or {}
    trace: dict[str, Any] = {"node": "determine_answer"}
    if deps.answer_with == "gnn":
        best = cands[0]["probability"]
        if ctx.path_match and not state.get("topic_chains"):  # the best-matching path's candidates
            first = _relations(chains, cands[0]["entity"])
            cands = [c for c in cands if _relations(chains, c["entity"]) == first]
        chosen = [c["entity"] for c in cands if c["probability"] >= ctx.answer_ratio * best]
        if state.get("topic_chains"):  # a conjunction: the soonest meeting (its whole set follows)
            chosen = chosen[:1]
        answers = [deps.kg.label(e) for e in chosen]
        trace["mode"] = "gnn_only"
    else:
        messages = deps.template.format_messages(
            question=state["question"], options=state.get("options") or ""
        )
        names = [deps.kg.label(c["entity"]) for c in cands][: len(LABELS)]
        idx: int | None
        if ctx.decide == "rank":
            # the letter after "Answer: " is the choice: score the letters, as multiple choice is scored
            # (whole replies "A. <name>" would favour the shortest names)
            ranking = rank(
                deps.llm,
                messages,
                list(LABELS[: len(names)]),
                prefix="Answer: ",
                complete=False,
                role="answer",
                keys=names,
            )
            idx = ranking.order()[0] if ranking.matched else None
            if ranking.raw is not None:  # a text-only model's reply: read as the paper's route reads it
                idx = parse_choice(ranking.raw, names)[0]
            trace.update(mode="llm", decide="rank", **ranking.as_trace())
            trace["probabilities"] = [round(p, 4) for p in ranking.probabilities()]
        else:
            msg = invoke_llm(deps.llm, messages)
            raw = str(msg.content)
            idx, free = parse_choice(raw, names)
            trace.update(mode="llm", decide="generate", raw=raw, dropped=free if idx is None else [])
        # free text naming no candidate is dropped: every answer is a candidate the explorer reached
        chosen = [cands[idx]["entity"]] if idx is not None else []
        answers = [names[idx]] if idx is not None else []
        trace["choice"] = None if idx is None else LABELS[idx]
    every = state.get("topic_chains") or {}
    own = [Path.from_text(t) for e in chosen if e in chains for t in every.get(e) or [chains[e]]]
    if chosen and ctx.whole_set:
        answers, own = whole_answer_set(deps, ctx, state, chosen, trace)
    update = verified_paths_update(deps.kg, own)
    update["answers"] = answers
    update["trace"] = [trace, *update["trace"]]
    if not answers:
        update["errors"] = no_answer_error("determine_answer", trace.get("raw", ""))
    return update


def whole_answer_set(
    deps: DualRDeps, ctx: Any, state: Mapping[str, Any], chosen: list[str], trace: dict[str, Any]
) -> tuple[list[str], list[Path]]:
    """The whole answer set, at most ``max_answers``, the chosen answers first.

    One topic entity: then every other explored candidate (of the ``max_answers`` most probable) whose
    probability is at least ``set_ratio`` times the best candidate's, by probability, each with its
    verified chain. A conjunction (chains from every topic entity): every entity where the walks along
    the chosen answers' chains meet (:func:`~kg_agents.core.conjunction.answer_set`; each topic entity
    walks the relation paths of its own chains), each with one verified path from each topic entity.
    Returns ``(answer labels, their paths)``; the set's size and cut go in ``trace["whole_set"]``."""
    chains = state.get("chains") or {}
    every = state.get("topic_chains") or {}
    pool = state.get("pool") or []
    if every:
        walks: dict[str, list[list[str]]] = {}
        for e in chosen:
            for text in every[e]:
                path = Path.from_text(text)
                walks.setdefault(str(path.start), []).append(path_relations(path))
        order = [*chosen, *(c["entity"] for c in pool)]
        got = answer_set(deps.kg, walks, limit=deps.explorer.fanout_limit, first=order)
        support = {e: [Path.from_text(t) for t in every[e]] for e in chosen} | got.support
        answers = list(dict.fromkeys([*chosen, *got.answers]))
    else:
        if ctx.path_match:
            # the ends of the chosen answers' relation paths, every one the exploration kept
            rels = {_relations(chains, e) for e in chosen if e in chains}
            more = [
                c["entity"] for c in pool if c["entity"] in chains and _relations(chains, c["entity"]) in rels
            ]
        else:
            best = max((c["probability"] for c in pool), default=0.0)
            more = [
                c["entity"] for c in pool if c["probability"] >= ctx.set_ratio * best and c["probability"] > 0
            ]
        answers = [e for e in dict.fromkeys([*chosen, *more]) if e in chains]
        support = {e: [Path.from_text(chains[e])] for e in answers}
    kept = answers[: ctx.max_answers]
    trace["whole_set"] = {"answers": len(answers), "cut": len(answers) > len(kept)}
    return [deps.kg.label(e) for e in kept], [p for e in kept for p in support[e]]
