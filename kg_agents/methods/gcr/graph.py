"""GCR, graph-constrained reasoning (Luo et al.; seeds/000, sections 4.2-4.4), as a LangGraph graph.

Nodes: ``link_entities`` -> ``get_trie`` (the question's KG-Trie, from the cache or built on demand)
-> ``decode`` (K paths + hypothesis answers by KG-Trie-constrained beam search) -> ``verify_paths``
(every path parsed back and checked against the KG) -> ``reason`` (graph inductive reasoning: the
general chat model reads all K paths and hypotheses in one call, figure 10; or, with
``general_llm=None``, a vote over the hypotheses: the paper's "w/o general LLM" ablation).

``constrained=False`` runs the same beam search without the trie (the figure-5 ablation): the paths
the model writes are still parsed and verified; ``trace`` says how many were not in the KG.

Example:
    >>> from kg_agents import open_kg
    >>> from kg_agents.methods.gcr.graph import create_gcr_graph
    >>> graph = create_gcr_graph(open_kg("metaqa"))                                   # doctest: +SKIP
    >>> out = graph.invoke({"question": "who directed [Splash]"}, context={"num_beams": 5})  # doctest: +SKIP
    >>> out["answers"], [p.to_text() for p in out["paths"]]                          # doctest: +SKIP
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import Any

from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime

from kg_agents.core.answers import parse_answers
from kg_agents.core.context import run_context
from kg_agents.core.metering import MeteredKG, invoke_llm, metered, record_usage
from kg_agents.core.nodes import make_link_entities_node, verified_paths_update
from kg_agents.core.prompts import as_prompt
from kg_agents.core.records import error_record, error_update, no_answer_error
from kg_agents.core.state import ReasoningInput, ReasoningOutput, ReasoningState
from kg_agents.errors import ConfigError, KGAgentsError
from kg_agents.kg.base import KnowledgeGraph, Path
from kg_agents.methods.gcr.trie import TrieCache, parse_path_text

_DEFAULT: Any = object()
PROMPT_STYLES = ("zero_shot", "few_shot")


@dataclass
class GCRContext:
    """Per-run options of ``gcr``; a field left None keeps the factory's value.

    Attributes:
        num_beams: K, the paths (and hypothesis answers) decoded per question.
        max_hops: L for the KG-Trie.
        max_answers: at most this many final answers (default 10).
    """

    num_beams: int | None = None
    max_hops: int | None = None
    max_answers: int | None = None


class GCRState(ReasoningState, total=False):
    """GCR's state: the decoded paths (as dicts: path text, hypothesis, score, in_trie)."""

    decoded: list[dict[str, Any]]
    trie_size: int


def vote(decoded: list[dict[str, Any]]) -> list[str]:
    """Hypothesis answers ranked by votes (ties: the better beam first), case-insensitively merged."""
    counts: Counter[str] = Counter()
    first: dict[str, tuple[int, str]] = {}
    for i, d in enumerate(decoded):
        for a in parse_answers(str(d.get("hypothesis") or "")):
            key = a.lower()
            counts[key] += 1
            first.setdefault(key, (i, a))
    order = sorted(counts, key=lambda k: (-counts[k], first[k][0]))
    return [first[k][1] for k in order]


def format_paths(decoded: list[dict[str, Any]]) -> str:
    """The figure-10 block: one reasoning path and its hypothesis answer per entry."""
    lines = []
    for d in decoded:
        lines.append(f"{d['path']}")
        if d.get("hypothesis"):
            lines.append(f"# Answer: {d['hypothesis']}")
    return "\n".join(lines) or "(none)"


def create_gcr_graph(
    kg: KnowledgeGraph,
    *,
    llm: Any = None,
    general_llm: Any = _DEFAULT,
    decoder: Any = None,
    adapter: str | None = None,
    index: Any = None,
    num_beams: int = 10,
    max_hops: int = 2,
    constrained: bool = True,
    prompt_style: str = "zero_shot",
    fanout_limit: int | None = 500,
    max_paths: int | None = 20_000,
    trie_cache: TrieCache | None = None,
    trie_dir: str | None = None,
    cache_size: int = 1024,
    decode_prompt: Any = None,
    reason_prompt: Any = None,
    checkpointer: Any = None,
) -> Any:
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
            eq. 8): ``"bundled"`` or a directory from ``kg-agents train gcr``; None: the zero-shot
            local model. Only with ``decoder`` None or ``"local"``.
        index: an ``EntityIndex`` for linking (built on first need when None).
        num_beams: default K (per run: ``context={"num_beams": ...}``).
        max_hops: default L of the KG-Trie.
        constrained: False runs the decoder without the trie (faithfulness ablation).
        prompt_style: ``zero_shot`` (figure 9) or ``few_shot`` (figure 11) decoding prompt.
        fanout_limit, max_paths: KG-Trie construction bounds per entity (hits are in ``trace``).
        trie_cache: a shared :class:`~kg_agents.methods.gcr.trie.TrieCache` (else one is made for this graph).
        trie_dir: an offline trie directory (``kg-agents build-tries``) the cache reads first.
        cache_size: entities kept in the in-memory LRU of the graph's own cache.
        decode_prompt, reason_prompt: templates overriding ``prompts/gcr/*.txt``.
        checkpointer: a LangGraph checkpointer.

    Raises:
        ConfigError: an unknown ``prompt_style``, ``adapter`` with a decoder other than the local one,
            no adapter at ``adapter``, or a decoder whose tokenizer differs from the cache's.

    Example:
        >>> graph = create_gcr_graph(kg, general_llm=None, num_beams=5)                # doctest: +SKIP
        >>> tuned = create_gcr_graph(kg, adapter="bundled")  # fine-tuned path generator  # doctest: +SKIP
        >>> graph.invoke({"question": "who directed Splash", "topic_entities": ["Splash"]})  # doctest: +SKIP
    """
    if prompt_style not in PROMPT_STYLES:
        raise ConfigError(f"prompt_style must be one of {PROMPT_STYLES}, got {prompt_style!r}")
    if num_beams < 1 or max_hops < 1:
        raise ConfigError(f"num_beams and max_hops must be >= 1, got {num_beams}, {max_hops}")
    mkg = MeteredKG(kg)
    if adapter is not None:
        if decoder not in (None, "local"):
            raise ConfigError(
                "adapter= applies to the local decoder only; with decoder= a vLLM server or "
                "your own decoder, merge the adapter into the model it runs instead"
            )
        from kg_agents.methods.gcr.adapter import load_gcr_decoder

        decoder = load_gcr_decoder(adapter)
    if isinstance(decoder, str):
        from kg_agents.methods.gcr.decoding import resolve_decoder

        decoder = resolve_decoder(decoder)
    if decoder is None:
        from kg_agents.methods.gcr.local_decoder import LocalConstrainedDecoder

        decoder = LocalConstrainedDecoder()
    from kg_agents.core.models import default_llm

    if general_llm is _DEFAULT:
        general = default_llm(llm)  # a model, a spec such as "local" / "openai:M", or None: the local model
    else:
        general = None if general_llm is None else default_llm(general_llm)
    tokenizer = getattr(decoder, "tokenizer", None)
    if trie_cache is None:
        if tokenizer is None:
            raise ConfigError("the decoder has no .tokenizer; pass trie_cache= built with its tokenizer")
        trie_cache = TrieCache(
            mkg,
            tokenizer,
            max_hops=max_hops,
            fanout_limit=fanout_limit,
            max_paths=max_paths,
            capacity=cache_size,
            directory=trie_dir,
        )
    cache = trie_cache
    decode_template = as_prompt(decode_prompt, "gcr", f"decode_{prompt_style}")
    reason_template = as_prompt(reason_prompt, "gcr", "reason")

    defaults = GCRContext(num_beams=num_beams, max_hops=max_hops, max_answers=10)

    def ctx_of(runtime: Runtime[GCRContext]) -> GCRContext:
        return run_context(runtime, defaults)

    def hops_of(ctx: GCRContext) -> int:
        return ctx.max_hops if ctx.max_hops is not None else max_hops

    @metered
    def get_trie(state: GCRState, runtime: Runtime[GCRContext]) -> dict[str, Any]:
        ents = state.get("topic_entities") or []
        if not constrained:
            return {"trie_size": -1, "trace": [{"node": "get_trie", "constrained": False}]}
        hops = hops_of(ctx_of(runtime))
        before = cache.info()
        try:
            trie = cache.get(ents, hops)
        except KGAgentsError as exc:
            return {"trie_size": 0, "answers": [], "paths": [], **error_update("get_trie", exc)}
        after = cache.info()
        st = trie.stats
        update: dict[str, Any] = {
            "trie_size": len(trie),
            "trace": [
                {
                    "node": "get_trie",
                    "entities": list(ents),
                    "max_hops": hops,
                    "paths": len(trie),
                    "fanout_truncated": list(st.fanout_truncated),
                    "path_limit_hit": st.path_limit_hit,
                    "built": after["misses"] - before["misses"],
                    "from_disk": after["disk"] - before["disk"],
                    "memory_hits": after["hits"] - before["hits"],
                }
            ],
        }
        if len(trie) == 0:
            err = error_update("get_trie", f"no path of <= {hops} hops from {list(ents)}")
            update.update(answers=[], paths=[], errors=err["errors"], trace=update["trace"] + err["trace"])
        return update

    @metered
    def decode(state: GCRState, runtime: Runtime[GCRContext]) -> dict[str, Any]:
        ctx = ctx_of(runtime)
        ents = state.get("topic_entities") or []
        messages = decode_template.format_messages(question=state["question"], entities="\n".join(ents))
        try:
            trie = cache.get(ents, hops_of(ctx)) if constrained else None
            out = decoder.generate(messages, trie, ctx.num_beams)
        except (KGAgentsError, ValueError) as exc:
            return {"decoded": [], "answers": [], "paths": [], **error_update("decode", exc)}
        stats = dict(getattr(decoder, "last_stats", {}) or {})
        record_usage(
            llm_calls=1,
            input_tokens=int(stats.get("prompt_tokens", 0)),
            output_tokens=int(stats.get("output_tokens", 0)),
        )
        decoded = [
            {
                "path": d.path_text,
                "hypothesis": d.continuation,
                "score": d.score,
                "in_trie": bool(d.meta.get("in_trie", False)),
            }
            for d in out
        ]
        return {
            "decoded": decoded,
            "trace": [
                {
                    "node": "decode",
                    "constrained": constrained,
                    "num_beams": ctx.num_beams,
                    "decoded": len(decoded),
                    "seconds": stats.get("seconds"),
                }
            ],
        }

    @metered
    def verify(state: GCRState) -> dict[str, Any]:
        parsed: list[Path] = []
        unparsable = 0
        for d in state.get("decoded") or []:
            try:
                parsed.append(parse_path_text(d["path"]))
            except ValueError:
                unparsable += 1
        update = verified_paths_update(mkg, parsed)
        tr = update["trace"][0]
        tr["paths_unparsable"] = unparsable
        tr["paths_dropped"] += unparsable
        tr["constrained"] = constrained
        update["evidence"] = [p.to_text() for p in update["paths"]]
        return update

    @metered
    def reason(state: GCRState, runtime: Runtime[GCRContext]) -> dict[str, Any]:
        ctx = ctx_of(runtime)
        decoded = state.get("decoded") or []
        if general is None:
            answers = vote(decoded)[: ctx.max_answers]
            update: dict[str, Any] = {
                "answers": answers,
                "trace": [{"node": "reason", "mode": "vote", "answers": answers}],
            }
            if not answers:
                update["errors"] = [
                    error_record("reason", "the decoded paths carry no answer to vote on", type="NoAnswer")
                ]
            return update
        messages = reason_template.format_messages(question=state["question"], paths=format_paths(decoded))
        try:
            msg = invoke_llm(general, messages)
        except KGAgentsError as exc:
            return {"answers": vote(decoded)[: ctx.max_answers], **error_update("reason", exc)}
        raw = str(msg.content)
        answers = parse_answers(_strip_path_lines(raw))[: ctx.max_answers]
        update = {"answers": answers, "trace": [{"node": "reason", "mode": "general_llm", "raw": raw}]}
        if not answers:
            update["errors"] = no_answer_error("reason", raw)
        return update

    def after_link(state: GCRState) -> str:
        return "get_trie" if state.get("topic_entities") else "end"

    def after_trie(state: GCRState) -> str:
        return "end" if state.get("trie_size", 0) == 0 else "decode"

    def after_decode(state: GCRState) -> str:
        return "verify_paths" if state.get("decoded") else "end_empty"

    @metered
    def end_empty(state: GCRState) -> dict[str, Any]:
        errs = state.get("errors") or []
        update: dict[str, Any] = {"answers": state.get("answers") or [], "paths": []}
        if not any(e["node"] == "decode" for e in errs):
            update.update(error_update("decode", "the decoder returned no complete reasoning path"))
        return update

    g = StateGraph(
        GCRState, context_schema=GCRContext, input_schema=ReasoningInput, output_schema=ReasoningOutput
    )
    g.add_node("link_entities", make_link_entities_node(mkg, index))
    g.add_node("get_trie", get_trie)
    g.add_node("decode", decode)
    g.add_node("end_empty", end_empty)
    g.add_node("verify_paths", verify)
    g.add_node("reason", reason)
    g.add_edge(START, "link_entities")
    g.add_conditional_edges("link_entities", after_link, {"get_trie": "get_trie", "end": END})
    g.add_conditional_edges("get_trie", after_trie, {"decode": "decode", "end": END})
    g.add_conditional_edges(
        "decode", after_decode, {"verify_paths": "verify_paths", "end_empty": "end_empty"}
    )
    g.add_edge("end_empty", END)
    g.add_edge("verify_paths", "reason")
    g.add_edge("reason", END)
    return g.compile(checkpointer=checkpointer, name="gcr")


_PATH_LINE = re.compile(r"^\s*(?:<PATH>.*|.*\s->\s.*)$")


def _strip_path_lines(text: str) -> str:
    """Drop lines that repeat a reasoning path (``a -> r -> b``) from the general model's answer."""
    return "\n".join(line for line in text.splitlines() if not _PATH_LINE.match(line))
