"""GCR's graph nodes, as module-level functions over a :class:`GCRDeps` bound when the graph is built.

Each node takes ``(deps, state[, runtime])`` and returns a partial state update;
:func:`~kg_agents.methods.gcr.graph.create_gcr_graph` binds ``deps`` with :func:`functools.partial`.
The per-run options come from ``runtime.context`` laid over ``deps.defaults``
(:func:`~kg_agents.core.context.run_context`).

Example (the vote: hypotheses that name the end of a verified path, the rest dropped):
    >>> from types import SimpleNamespace
    >>> from kg_agents.kg import MemoryKG
    >>> from kg_agents.kg.base import Path, Triple
    >>> kg = MemoryKG([Triple("a", "r", "b"), Triple("a", "s", "c")])
    >>> defaults = SimpleNamespace(max_answers=2, whole_set=True)  # a stand-in for GCRContext
    >>> deps = SimpleNamespace(kg=kg, general=None, defaults=defaults)  # a stand-in for GCRDeps
    >>> decoded = [{"path": "a -> r -> b", "hypothesis": "b"}, {"path": "a -> s -> c", "hypothesis": "c"},
    ...            {"path": "a -> s -> c", "hypothesis": "z"}]
    >>> state = {"question": "q", "decoded": decoded, "topic_entities": ["a"],
    ...          "paths": [Path.from_text(d["path"]) for d in decoded[:2]]}
    >>> out = reason(deps, state, None)
    >>> out["answers"], out["trace"][0]["dropped"]
    (['b', 'c'], ['z'])
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from langchain_core.prompts import ChatPromptTemplate

from kg_agents.core.answers import parse_answers
from kg_agents.core.conjunction import complete_answers
from kg_agents.core.context import run_context
from kg_agents.core.decide import answer_candidates, ground_answers, rank, ranked_answers, topic_question
from kg_agents.core.hops import check_hops, question_hops
from kg_agents.core.metering import MeteredKG, invoke_llm, metered, record_usage
from kg_agents.core.nodes import verified_paths_update
from kg_agents.core.records import error_record, error_update, guarded
from kg_agents.errors import KGAgentsError, KGError
from kg_agents.kg.base import Path
from kg_agents.methods.gcr.conjunction import reason_conjunction
from kg_agents.methods.gcr.trie import TrieCache, parse_path_text
from kg_agents.untrusted import kg_block, kg_text

__all__ = [
    "GCRDeps",
    "after_decode",
    "after_link",
    "after_trie",
    "decode",
    "end_empty",
    "format_paths",
    "get_trie",
    "reason",
    "strip_path_lines",
    "verify",
    "vote",
]


@dataclass(frozen=True)
class GCRDeps:
    """What GCR's nodes use, fixed when the graph is built.

    Attributes:
        kg: the metered knowledge graph.
        decoder: the ``ConstrainedDecoder`` (the KG-specialised model).
        cache: the :class:`~kg_agents.methods.gcr.trie.TrieCache` the questions' tries come from.
        general: the general chat model of inductive reasoning; None votes over the hypotheses.
        decode_template: the decoding prompt (figure 9 or 11).
        reason_template: the reasoning prompt (figure 10).
        constrained: False runs the decoder without the trie (the faithfulness ablation).
        defaults: the factory's :class:`~kg_agents.methods.gcr.graph.GCRContext` (every field set).
        hop_classifier: what predicts a question's hop count for ``hops`` (None: the bundled one).
        auto_hops: what ``hops="auto"`` follows: True the classifier, ``"chain"`` the closest
            relation chain (the KG pack's route, see :func:`~kg_agents.core.hops.pack_hops`); None:
            where a ``hop_classifier`` is given.
        calibrate: the ranked route ranks each candidate by how much the question raises it (the
            reasoning prompt with the question's words taken out is the baseline).
        candidate_text: what the ranked route ranks for each candidate: its ``label``, or its first
            ``path``.
    """

    kg: MeteredKG
    decoder: Any
    cache: TrieCache
    general: Any
    decode_template: ChatPromptTemplate
    reason_template: ChatPromptTemplate
    constrained: bool
    defaults: Any
    hop_classifier: Any = None
    calibrate: bool = False
    candidate_text: str = "label"
    auto_hops: bool | str | None = None


# --------------------------------------------------------------------------- pure helpers
def vote(decoded: list[dict[str, Any]]) -> list[str]:
    """Hypothesis answers ranked by votes, case-insensitively merged; ties: the better beam first.

    A beam's vote weighs ``exp(score)`` relative to the best beam's (its probability share where the
    scores are log-probabilities, as ``"trie"`` path scores are), so a likely path outvotes two unlikely
    ones; beams without a score weigh 1 each (a count).

    Example:
        >>> vote([{"hypothesis": "B"}, {"hypothesis": "c"}, {"hypothesis": "C"}])
        ['c', 'B']
        >>> vote([{"hypothesis": "B", "score": -0.1}, {"hypothesis": "c", "score": -3.0},
        ...       {"hypothesis": "C", "score": -3.0}])
        ['B', 'c']
    """
    scores: list[float | None] = [
        float(x) if isinstance(x, int | float) and math.isfinite(x) else None
        for x in (d.get("score") for d in decoded)
    ]
    finite = [x for x in scores if x is not None]
    top = max(finite) if finite else 0.0
    weights: dict[str, float] = {}
    first: dict[str, tuple[int, str]] = {}
    for i, d in enumerate(decoded):
        x = scores[i]
        if finite and x is None:
            continue  # scored beams and one without a finite score: it carries no probability
        w = math.exp(x - top) if x is not None else 1.0
        for a in parse_answers(str(d.get("hypothesis") or "")):
            key = a.lower()
            weights[key] = weights.get(key, 0.0) + w
            first.setdefault(key, (i, a))
    order = sorted(weights, key=lambda k: (-weights[k], first[k][0]))
    return [first[k][1] for k in order]


def format_paths(decoded: list[dict[str, Any]]) -> str:
    """The figure-10 block: one reasoning path and its hypothesis answer per entry (KG text: rendered
    with :func:`~kg_agents.untrusted.kg_text`, in a ``<kg>`` block)."""
    lines = []
    for d in decoded:
        lines.append(kg_text(d["path"]))
        if d.get("hypothesis"):
            lines.append(f"# Answer: {kg_text(d['hypothesis'])}")
    return kg_block(lines) if lines else "(none)"


_PATH_LINE = re.compile(r"^\s*(?:<PATH>.*|.*\s->\s.*)$")


def strip_path_lines(text: str) -> str:
    """Drop lines that repeat a reasoning path (``a -> r -> b``) from the general model's answer.

    Example:
        >>> strip_path_lines("Splash -> directed_by -> Ron Howard\\nAnswer: Ron Howard")
        'Answer: Ron Howard'
    """
    return "\n".join(line for line in text.splitlines() if not _PATH_LINE.match(line))


# --------------------------------------------------------------------------- nodes
@metered
def get_trie(deps: GCRDeps, state: Mapping[str, Any], runtime: Any) -> dict[str, Any]:
    """The question's KG-Trie (from the cache, disk, or built now); ends the question when empty.

    Its depth L is ``max_hops`` (paths of 1..L hops), or the question's hop count where ``hops`` gives
    one (with ``"auto"``, predicted by the hop classifier where the KG pack's route says so, as on MetaQA):
    then it holds the paths of
    exactly that many hops. The decoder reads both from the state.

    Several topic entities (``conjunction``, on by default, with the trie on): one trie per topic entity,
    each as for one but with every path of 1 to the question's hop count, as a conjunction's chains may
    differ in length (:mod:`~kg_agents.methods.gcr.conjunction`); a topic entity without a path ends the
    question, as no answer can be reached from every one.
    """
    ents = state.get("topic_entities") or []
    ctx = run_context(runtime, deps.defaults)
    mode = check_hops(ctx.hops)  # a run's context may set it: a bad one is a ConfigError
    exact = question_hops(mode, deps.kg, state["question"], ents, deps.hop_classifier, auto=deps.auto_hops)
    hops = exact or ctx.max_hops
    if not deps.constrained:
        return {"trie_size": -1, "trie_hops": hops, "trace": [{"node": "get_trie", "constrained": False}]}
    topics = list(dict.fromkeys(ents))
    conjunction = bool(ctx.conjunction) and len(topics) > 1
    groups = [[t] for t in topics] if conjunction else [list(ents)]
    before = deps.cache.info()
    try:
        # with the question's hop count, only paths of that many hops: a decoded path cannot end sooner
        # a conjunction's chains may differ in length: each topic's trie holds paths of 1..hops
        shortest = hops if exact and not conjunction else 1
        tries = [deps.cache.get(g, hops, min_hops=shortest) for g in groups]
    except KGAgentsError as exc:
        failed = error_update("get_trie", exc, halted=isinstance(exc, KGError))
        return {"trie_size": 0, "answers": [], "paths": [], **failed}
    after = deps.cache.info()
    sizes = [len(trie) for trie in tries]
    update: dict[str, Any] = {
        "trie_size": min(sizes),
        "trie_hops": hops,
        "trie_exact": bool(exact) and not conjunction,
        "conjunction_route": conjunction,
        "trace": [
            {
                "node": "get_trie",
                "entities": list(ents),
                **({"paths_per_topic": dict(zip(topics, sizes, strict=True))} if conjunction else {}),
                "max_hops": hops,
                "hops": ctx.hops,
                "exact": bool(exact),
                "paths": sum(sizes),
                "fanout_truncated": [e for trie in tries for e in trie.stats.fanout_truncated],
                "path_limit_hit": any(trie.stats.path_limit_hit for trie in tries),
                "built": after["misses"] - before["misses"],
                "from_disk": after["disk"] - before["disk"],
                "memory_hits": after["hits"] - before["hits"],
            }
        ],
    }
    if min(sizes) == 0:
        length = f"exactly {hops}" if exact else f"<= {hops}"
        empty = next(g for g, n in zip(groups, sizes, strict=True) if n == 0)
        err = error_update("get_trie", f"no path of {length} hops from {empty}", type="NoPath")
        update.update(answers=[], paths=[], errors=err["errors"], trace=update["trace"] + err["trace"])
    return update


@metered
def decode(deps: GCRDeps, state: Mapping[str, Any], runtime: Any) -> dict[str, Any]:
    """K reasoning paths with hypothesis answers by KG-Trie-constrained beam search (one model call; on
    the conjunction route, K from each topic entity's trie, the prompt naming that topic entity)."""
    ctx = run_context(runtime, deps.defaults)
    ents = state.get("topic_entities") or []
    groups = [[t] for t in dict.fromkeys(ents)] if state.get("conjunction_route") else [list(ents)]
    decoded: list[dict[str, Any]] = []
    seconds = 0.0
    for group in groups:
        shown = "\n".join(kg_text(e) for e in group)
        messages = deps.decode_template.format_messages(question=state["question"], entities=shown)
        try:
            hops = state.get("trie_hops") or ctx.max_hops
            shortest = hops if state.get("trie_exact") else 1
            trie = deps.cache.get(group, hops, min_hops=shortest) if deps.constrained else None
            out = deps.decoder.generate(messages, trie, ctx.num_beams)
        except (KGAgentsError, ValueError) as exc:
            return {"decoded": [], "answers": [], "paths": [], **error_update("decode", exc)}
        stats = dict(getattr(deps.decoder, "last_stats", {}) or {})
        record_usage(
            llm_calls=1,
            input_tokens=int(stats.get("prompt_tokens", 0)),
            output_tokens=int(stats.get("output_tokens", 0)),
        )
        seconds += float(stats.get("seconds") or 0.0)
        decoded += [
            {
                "path": d.path_text,
                "hypothesis": d.continuation,
                "score": d.score,
                "in_trie": bool(d.meta.get("in_trie", False)),
                **({"topic": group[0]} if len(groups) > 1 else {}),
            }
            for d in out
        ]
    return {
        "decoded": decoded,
        "trace": [
            {
                "node": "decode",
                "constrained": deps.constrained,
                "num_beams": ctx.num_beams,
                "decoded": len(decoded),
                "topics": len(groups),
                "seconds": seconds,
            }
        ],
    }


@metered
def verify(deps: GCRDeps, state: Mapping[str, Any]) -> dict[str, Any]:
    """Every decoded path parsed back and checked against the KG (the node ``verify_paths``)."""
    parsed: list[Path] = []
    unparsable = 0
    for d in state.get("decoded") or []:
        try:
            parsed.append(parse_path_text(d["path"]))
        except ValueError:
            unparsable += 1
    update = verified_paths_update(deps.kg, parsed)
    tr = update["trace"][0]
    tr["paths_unparsable"] = unparsable
    tr["paths_dropped"] += unparsable
    tr["constrained"] = deps.constrained
    update["evidence"] = [p.to_text() for p in update["paths"]]
    return update


@metered
@guarded("reason")
def reason(deps: GCRDeps, state: Mapping[str, Any], runtime: Any) -> dict[str, Any]:
    """Graph inductive reasoning over the K paths: a vote, or the general model's choice.

    The candidates are the KG nodes ending the verified paths (topic entities excluded). The vote
    (``general_llm=None``) keeps the hypothesis answers that name a candidate, else the endpoints by
    how many paths reach them; the general model ranks the candidates (``decide="rank"``) or writes
    answers that are kept where they name one (``"generate"``). What names no candidate is dropped
    and traced; the K verified paths stay the returned paths.

    On the conjunction route, :func:`~kg_agents.methods.gcr.conjunction.reason_conjunction`: the
    entities where the walks along each topic's decoded relation paths meet, best first, and their
    paths, one from each topic entity.
    """
    ctx = run_context(runtime, deps.defaults)
    decoded = state.get("decoded") or []
    paths: list[Path] = list(state.get("paths") or [])
    topics = state.get("topic_entities") or []
    voted = vote(decoded)
    if state.get("conjunction_route"):
        messages = deps.reason_template.format_messages(
            question=state["question"], paths=format_paths(decoded)
        )
        return reason_conjunction(deps, state, ctx, voted, messages)
    candidates = answer_candidates(deps.kg.label, paths, exclude=topics)
    grounded, _, dropped = ground_answers(voted, candidates)
    # candidates in vote order: hypotheses that name one, then endpoints by the number of paths
    by_paths = sorted(candidates, key=lambda lab: -len(candidates[lab]))
    ordered = list(dict.fromkeys([*grounded, *by_paths]))
    trace: dict[str, Any] = {"node": "reason", "candidates": len(candidates), "votes": voted[:10]}
    errors: list[Any] = []
    if not candidates:
        answers: list[str] = []
        trace["mode"] = "vote" if deps.general is None else "general_llm"
        errors = [
            error_record("reason", "no decoded path verified, so no answer can be grounded", type="NoPath")
        ]
    elif deps.general is None:
        answers = (grounded or ordered[:1])[: ctx.max_answers]
        trace.update(mode="vote", dropped=dropped, fallback=None if grounded else "path_endpoints")
    else:
        messages = deps.reason_template.format_messages(
            question=state["question"], paths=format_paths(decoded)
        )
        trace.update(mode="general_llm", decide=ctx.decide)
        try:
            if ctx.decide == "rank":
                baseline = None
                if deps.calibrate:  # the same paths, the question's words taken out
                    baseline = deps.reason_template.format_messages(
                        question=topic_question(map(deps.kg.label, topics)), paths=format_paths(decoded)
                    )
                texts = ordered
                if deps.candidate_text == "path":  # each candidate as the first path reaching it
                    texts = [candidates[lab][0].to_text(deps.kg.label) for lab in ordered]
                ranking = rank(deps.general, messages, texts, role="answer", keys=ordered, baseline=baseline)
                picked = ranked_answers(ranking, max_answers=ctx.max_answers, ratio=ctx.answer_ratio)
                answers = [ordered[texts.index(t)] for t in picked]
                trace.update(ranking.as_trace())
            else:
                msg = invoke_llm(deps.general, messages)
                raw = str(msg.content)
                answers, _, gen_dropped = ground_answers(parse_answers(strip_path_lines(raw)), candidates)
                answers = answers[: ctx.max_answers]
                trace.update(raw=raw, dropped=gen_dropped)
        except KGAgentsError as exc:
            answers = (grounded or ordered[:1])[: ctx.max_answers]
            errors = error_update("reason", exc)["errors"]
            trace["fallback"] = "vote"
        if not answers and not errors:
            errors = [
                error_record(
                    "reason", "the model's answer names no candidate entity", type="UngroundedAnswer"
                )
            ]
    update: dict[str, Any] = {"answers": answers, "trace": [trace]}
    if answers and ctx.whole_set:  # the whole set of the best answer's chain
        done = complete_answers(deps.kg, answers, candidates, topics=topics, limit=ctx.max_answers)
        trace.update(done.as_trace(len(answers)))
        update.update(answers=done.answers, paths=[*paths, *done.paths])
    if errors:
        update["errors"] = errors
    return update


@metered
def end_empty(state: Mapping[str, Any]) -> dict[str, Any]:
    """The end of a question whose decoding gave no path (recorded unless ``decode`` already did)."""
    errs = state.get("errors") or []
    update: dict[str, Any] = {"answers": state.get("answers") or [], "paths": []}
    if not any(e["node"] == "decode" for e in errs):
        update.update(
            error_update("decode", "the decoder returned no complete reasoning path", type="NoPath")
        )
    return update


# --------------------------------------------------------------------------- routers
def after_link(state: Mapping[str, Any]) -> str:
    """``get_trie`` once the question has topic entities, else ``end``."""
    return "get_trie" if state.get("topic_entities") else "end"


def after_trie(state: Mapping[str, Any]) -> str:
    """``end`` when the trie is empty (or failed), else ``decode``."""
    return "end" if state.get("trie_size", 0) == 0 else "decode"


def after_decode(state: Mapping[str, Any]) -> str:
    """``verify_paths`` when the decoder returned paths, else ``end_empty``."""
    return "verify_paths" if state.get("decoded") else "end_empty"
