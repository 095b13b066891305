"""LLM calls of ``graph_agent`` by strategy, k, t and depth: measured runs vs the paper's table 5.

The graphs run for real over the small contract KG; the chat model is scripted (it never finishes a chain, so
every budget is spent), which makes the counts exact. Printed per configuration: measured step, merge and
evaluation calls, the table 5 generation count ``k (t**D - 1)/(t - 1)``, total calls, KG calls and wall time.

Usage:
    PYTHONPATH=. python benchmarks/graph_cot_calls.py --k 3 --t 2 --max-depth 4
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from typing import Any

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import PrivateAttr

from kg_agents.kg import MemoryKG
from kg_agents.kg.testing import CONTRACT_TRIPLES
from kg_agents.methods.graph_cot.graph import create_graph_agent_graph

_REPLIES = [
    ("Merged Chain:", "merge", "Thought: merged. Action: NeighborCheck[Splash, starred_actors]"),
    ("Choices:", "vote", "The best choice is 1"),
    ("Thought Chain:", "score", "0.5"),
    ("step budget is spent", "final", "Answer: Ron Howard"),
    ("Definition of the graph", "step", "Thought: look. Action: NeighborCheck[Splash, directed_by]"),
]


class _Scripted(BaseChatModel):
    _calls: Counter[str] = PrivateAttr(default_factory=Counter)

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        last = str(messages[-1].content)
        for key, kind, reply in _REPLIES:
            if key in last:
                self._calls[kind] += 1
                return ChatResult(generations=[ChatGeneration(message=AIMessage(content=reply))])
        raise RuntimeError("unexpected prompt")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--k", type=int, default=3)
    ap.add_argument("--t", type=int, default=2)
    ap.add_argument("--max-depth", type=int, default=4)
    args = ap.parse_args(argv)
    kg = MemoryKG(CONTRACT_TRIPLES)
    k, t = args.k, args.t
    print(f"graph_agent, k={k} t={t}; scripted model that never finishes")
    print(
        f"{'strategy':<9}{'eval':<7}{'D':>3}{'steps':>7}{'table5':>8}{'merges':>8}{'evals':>7}{'total':>7}"
        f"{'kg':>6}{'ms':>8}"
    )
    for strategy in ("cot", "tot", "got"):
        for evaluator in ("select", "score"):
            if strategy == "cot" and evaluator == "score":
                continue
            for depth in range(1, args.max_depth + 1):
                llm = _Scripted()
                g = create_graph_agent_graph(
                    kg,
                    llm=llm,
                    strategy=strategy,
                    evaluator=evaluator,
                    k=k,
                    t=t,
                    depth=depth,
                    max_steps=depth,
                )
                t0 = time.perf_counter()
                out = g.invoke({"question": "who directed [Splash]"})
                ms = 1000 * (time.perf_counter() - t0)
                c = llm._calls
                table5 = depth if strategy == "cot" else k * sum(t**i for i in range(depth))
                print(
                    f"{strategy:<9}{evaluator if strategy != 'cot' else '-':<7}{depth:>3}{c['step']:>7}"
                    f"{table5:>8}{c['merge']:>8}{c['vote'] + c['score']:>7}{out['usage']['llm_calls']:>7}"
                    f"{out['usage']['kg_calls']:>6}{ms:>8.0f}"
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())
