"""Real-model run of ``graph_agent`` and ``graph_explore`` (CoT / ToT / GoT) on MetaQA validation questions.

Prints, per (graph, strategy): Hits@1, F1, average LLM calls, input and output tokens, KG calls and seconds
per question, and the share of returned paths that are KG-verified. Questions come from the seeded 80/20
split of the MetaQA dev files (``kg_agents.eval.datasets.load_metaqa(..., split="validation")``).

Usage:
    HF_HUB_OFFLINE=1 PYTHONPATH=. python benchmarks/graph_cot_metaqa.py --hops 1 --limit 3 \\
        --configs agent:cot,agent:tot,agent:got,explore:cot,explore:tot,explore:got --json out.json

Metrics (per question, averaged): Hits@1 and F1 of ``kg_agents.eval.metrics.score_answers``, the same
answer normalisation as ``kg-agents eval``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--hops", type=int, default=1)
    ap.add_argument("--limit", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--configs", default="agent:cot,agent:tot,agent:got,explore:cot,explore:tot,explore:got")
    ap.add_argument("--k", type=int, default=2)
    ap.add_argument("--t", type=int, default=1)
    ap.add_argument("--depth", type=int, default=2)
    ap.add_argument("--agent-steps", type=int, default=4)
    ap.add_argument("--explore-steps", type=int, default=2)
    ap.add_argument("--evaluator", default="score")
    ap.add_argument("--max-tokens", type=int, default=48)
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)

    from kg_agents.eval.datasets import load_metaqa
    from kg_agents.eval.metrics import score_answers
    from kg_agents.kg import open_kg
    from kg_agents.llm import resolve_chat_model
    from kg_agents.methods.graph_cot.graph import create_graph_agent_graph, create_graph_explore_graph

    kg = open_kg("metaqa")
    llm = resolve_chat_model("local", max_tokens=args.max_tokens)
    questions = list(load_metaqa(args.hops, split="validation", seed=args.seed, limit=args.limit))
    rows: list[dict[str, Any]] = []
    print(
        f"MetaQA {args.hops}-hop validation, {len(questions)} questions, SmolLM2-135M-Instruct (local), "
        f"k={args.k} t={args.t} D={args.depth} evaluator={args.evaluator} max_tokens={args.max_tokens}"
    )
    for spec in args.configs.split(","):
        method, strategy = spec.split(":")
        common = dict(
            llm=llm, strategy=strategy, evaluator=args.evaluator, k=args.k, t=args.t, depth=args.depth
        )
        if method == "agent":
            graph = create_graph_agent_graph(kg, max_steps=args.agent_steps, **common)
        else:
            graph = create_graph_explore_graph(kg, max_steps=args.explore_steps, **common)
        acc: dict[str, float] = {
            k: 0.0
            for k in (
                "hits1",
                "f1",
                "llm_calls",
                "input_tokens",
                "output_tokens",
                "kg_calls",
                "seconds",
                "paths",
                "paths_dropped",
            )
        }
        for q in questions:
            t0 = time.perf_counter()
            out = graph.invoke({"question": q.question, "topic_entities": list(q.topic_entities)})
            secs = time.perf_counter() - t0
            pred = list(out.get("answers") or [])
            u = out.get("usage") or {}
            scores = score_answers(pred, list(q.answers))
            acc["hits1"] += scores["hits@1"]
            acc["f1"] += scores["f1"]
            for key in ("llm_calls", "input_tokens", "output_tokens", "kg_calls"):
                acc[key] += float(u.get(key, 0))
            acc["seconds"] += secs
            acc["paths"] += len(out.get("paths") or [])
            acc["paths_dropped"] += sum(
                int(t.get("paths_dropped", 0))
                for t in out.get("trace") or []
                if t.get("node") == "verify_paths"
            )
            print(
                f"  [{spec}] {q.question!r} gold={list(q.answers)[:3]} pred={pred[:3]} "
                f"calls={u.get('llm_calls')} {secs:.1f}s errors={out.get('errors')}",
                flush=True,
            )
        n = max(len(questions), 1)
        row = {"config": spec, "questions": len(questions), **{k: v / n for k, v in acc.items()}}
        rows.append(row)
        print(
            f"  => {spec}: " + ", ".join(f"{k}={v:.3f}" for k, v in row.items() if isinstance(v, float)),
            flush=True,
        )
    print(
        f"\n{'config':<14}{'Hits@1':>8}{'F1':>8}{'calls':>8}{'in_tok':>9}{'out_tok':>9}{'kg':>7}{'s/q':>8}"
        f"{'paths':>7}"
    )
    for r in rows:
        print(
            f"{r['config']:<14}{r['hits1']:>8.3f}{r['f1']:>8.3f}{r['llm_calls']:>8.1f}{r['input_tokens']:>9.0f}"
            f"{r['output_tokens']:>9.0f}{r['kg_calls']:>7.1f}{r['seconds']:>8.1f}{r['paths']:>7.1f}"
        )
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump({"args": vars(args), "rows": rows}, fh, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
