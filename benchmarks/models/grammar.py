"""Grammar libraries for the local model's tool calls: llguidance (used) vs xgrammar, on one CPU thread.

Figures, for the Graph-CoT toolkit's four tools as one call grammar (``{"tool_call": {"name": ...,
"arguments": ...}}`` with each tool's JSON schema) and the SmolLM2 tokenizer (49,152 tokens):

1. tokenizer setup, ms (once per process);
2. grammar compile, ms: the first one, and the median of 5 more (no compile cache); free strings carry the
   ``maxLength`` cap of ``MAX_STRING_CHARS`` as in the project (``--no-caps`` drops it);
3. token mask, ms per token: median, p95 and max over ``--repeats`` runs of a 33-token call;
4. with ``--generate``: the share of a real constrained generation (``LocalChatModel.bind_tools``, 4 prompts)
   spent in the grammar logits processor (mask + applying it to the logits), and ms per generated token,
   constrained and not.

xgrammar is measured when it imports (``pip install xgrammar``; it is not a project dependency: on Linux it
pulls ``triton``, a 286 MB wheel, and ``apache-tvm-ffi``). Run:
``OMP_NUM_THREADS=1 PYTHONPATH=. HF_HUB_OFFLINE=1 python benchmarks/models/grammar.py --generate``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from importlib.metadata import version
from typing import Any

from kg_agents.llm.local_model import load_local_tokenizer

CALL = json.dumps(
    {
        "tool_call": {
            "name": "NeighborCheck",
            "arguments": {"node": "Tom Hanks", "neighbor_type": "~starred_actors"},
        }
    }
)


def _schema() -> dict[str, Any]:
    from kg_agents.kg import MemoryKG
    from kg_agents.kg.testing import CONTRACT_TRIPLES
    from kg_agents.llm.tool_calling import ToolConstraint
    from kg_agents.tools import kg_toolkit

    c = ToolConstraint.from_options({"tools": kg_toolkit(MemoryKG(CONTRACT_TRIPLES)), "tool_choice": "any"})
    assert c is not None
    grammar = c.grammar()
    return json.loads(grammar.split("%json ", 1)[1])  # the JSON schema the Lark grammar embeds


def _uncapped(schema: Any) -> Any:
    """``schema`` without ``maxLength`` (the caps ``MAX_STRING_CHARS`` puts on free strings)."""
    if isinstance(schema, dict):
        return {k: _uncapped(v) for k, v in schema.items() if k != "maxLength"}
    if isinstance(schema, list):
        return [_uncapped(v) for v in schema]
    return schema


def _ms(xs: list[float]) -> str:
    xs = sorted(xs)
    return (
        f"median {1000 * statistics.median(xs):.3f}, p95 {1000 * xs[int(0.95 * (len(xs) - 1))]:.3f}, "
        f"max {1000 * xs[-1]:.3f}"
    )


def _timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    t = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t


def bench_llguidance(tok: Any, schema: dict[str, Any], ids: list[int], repeats: int) -> str:
    import llguidance
    import llguidance.hf

    ll, t_tok = _timed(lambda: llguidance.hf.from_tokenizer(tok))
    grammar = llguidance.LLMatcher.grammar_from_json_schema(schema)

    def compile_() -> Any:
        return llguidance.LLMatcher(ll, grammar)

    _, first = _timed(compile_)
    later = [_timed(compile_)[1] for _ in range(5)]
    masks: list[float] = []
    for _ in range(repeats):
        m = compile_()
        for i in ids:
            masks.append(_timed(m.compute_bitmask)[1])
            if not m.consume_token(i):
                raise RuntimeError(m.get_error())
        assert m.is_accepting()
    return (
        f"llguidance {version('llguidance')}: tokenizer {1000 * t_tok:.0f} ms; compile first "
        f"{1000 * first:.1f} ms, then median {1000 * statistics.median(later):.1f} ms; mask per token "
        f"({len(masks)} steps) {_ms(masks)} ms"
    )


def bench_xgrammar(tok: Any, schema: dict[str, Any], ids: list[int], repeats: int) -> str:
    try:
        import xgrammar as xgr
    except ImportError:
        return "xgrammar: not installed (pip install xgrammar to compare)"
    info, t_tok = _timed(lambda: xgr.TokenizerInfo.from_huggingface(tok, vocab_size=len(tok)))
    compiler = xgr.GrammarCompiler(info, max_threads=1, cache_enabled=False)
    text = json.dumps({k: v for k, v in schema.items() if k != "x-guidance"})

    def compile_() -> Any:
        return compiler.compile_json_schema(text, any_whitespace=False, separators=(", ", ": "))

    compiled, first = _timed(compile_)
    later = [_timed(compile_)[1] for _ in range(5)]
    bitmask = xgr.allocate_token_bitmask(1, info.vocab_size)
    masks: list[float] = []
    for _ in range(repeats):
        m = xgr.GrammarMatcher(compiled)
        for i in ids:
            masks.append(_timed(lambda m=m: m.fill_next_token_bitmask(bitmask))[1])
            if not m.accept_token(i):
                raise RuntimeError(f"xgrammar rejected token {i}")
    return (
        f"xgrammar {version('xgrammar')}: tokenizer {1000 * t_tok:.0f} ms; compile first "
        f"{1000 * first:.1f} ms, then median {1000 * statistics.median(later):.1f} ms; "
        f"mask per token ({len(masks)} steps) {_ms(masks)} ms"
    )


def bench_generation() -> str:
    """Share of constrained generation time spent in the grammar processor, real model."""
    from langchain_core.tools import tool

    from kg_agents.llm import LocalChatModel
    from kg_agents.llm.tool_calling import GrammarLogitsProcessor

    spent: list[float] = []
    original = GrammarLogitsProcessor.__call__

    def timed(self: GrammarLogitsProcessor, input_ids: Any, scores: Any) -> Any:
        out, dt = _timed(lambda: original(self, input_ids, scores))
        spent.append(dt)
        return out

    @tool
    def get_weather(location: str) -> str:
        """Get the weather at a location."""
        return "It's sunny."

    prompts = [
        "What is the weather in San Francisco, CA?",
        "What is the weather in Paris?",
        "Hello!",
        "Rome?",
    ]
    llm = LocalChatModel(max_tokens=64, batch_size=1)
    bound = llm.bind_tools([get_weather])
    GrammarLogitsProcessor.__call__ = timed  # type: ignore[method-assign]
    try:
        bound.invoke("warm-up")
        spent.clear()
        msgs, total = _timed(lambda: [bound.invoke(p) for p in prompts])
    finally:
        GrammarLogitsProcessor.__call__ = original  # type: ignore[method-assign]
    n = sum(m.usage_metadata["output_tokens"] for m in msgs if m.usage_metadata)
    plain, t_plain = _timed(lambda: [llm.invoke(p, max_tokens=16) for p in prompts])
    n_plain = sum(m.usage_metadata["output_tokens"] for m in plain if m.usage_metadata)
    return (
        f"generation: constrained {n} tokens in {total:.2f} s ({1000 * total / n:.1f} ms/token), grammar "
        f"processor {len(spent)} calls, {1000 * statistics.mean(spent):.3f} ms/call = "
        f"{100 * sum(spent) / total:.1f}% of the time; unconstrained {n_plain} tokens in {t_plain:.2f} s "
        f"({1000 * t_plain / n_plain:.1f} ms/token)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--repeats", type=int, default=20, help="runs of the 33-token call for mask timings")
    parser.add_argument("--generate", action="store_true", help="also time a real constrained generation")
    parser.add_argument("--no-caps", action="store_true", help="drop the maxLength caps on free strings")
    args = parser.parse_args()
    tok = load_local_tokenizer()
    schema = _uncapped(_schema()) if args.no_caps else _schema()
    ids = tok.encode(CALL, add_special_tokens=False)
    print(f"call: {len(ids)} tokens")
    print(bench_llguidance(tok, schema, ids, args.repeats))
    print(bench_xgrammar(tok, schema, ids, args.repeats))
    if args.generate:
        print(bench_generation())


if __name__ == "__main__":
    main()
