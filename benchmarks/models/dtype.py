"""Whole-method seconds per question, the embedded model in float32, bfloat16 and int8, paired per question.

The methods spend their time in the embedded model (SmolLM2-135M-Instruct through transformers), and a
generated token's time is mostly reading the weights (``greedy_gap.py``). This script measures what the
local model's ``dtype`` does to whole methods: each question runs once per dtype, back to back (the order
rotates from one question to the next), so all see the same machine load; each ratio column is float32
seconds over that dtype's (> 1: faster than float32). Answers are compared with float32's, and each run is
scored with the exact rule.

Each method is built once per dtype with ``LocalChatModel(dtype=...)`` (GCR's decoder follows its chat
model's dtype): one copy of the weights per dtype, as a user gets them. ``int8`` is float32 with every
linear layer's weights in int8 (PyTorch dynamic quantization).

Questions: the first ``--limit`` of the seeded dev-validation split of MetaQA ``--hops`` (dev files only).

    HF_HUB_OFFLINE=1 PYTHONPATH=. python benchmarks/models/dtype.py \
        --methods gcr:5 gcr:10 knowledge_navigator graph_agent --hops 1 --limit 10

A method is ``name`` or ``name:K`` (GCR's num_beams). Prints a markdown table.
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

from kg_agents.core.registry import create_graph
from kg_agents.eval.datasets import load_metaqa
from kg_agents.eval.metrics import score_answers
from kg_agents.llm import LocalChatModel

DTYPES = ("float32", "bfloat16", "int8")


def parse_method(spec: str) -> tuple[str, dict[str, Any], str]:
    name, _, k = spec.partition(":")
    options: dict[str, Any] = {}
    if k:
        options["num_beams"] = int(k)
    if name in ("graph_agent", "graph_explore"):
        options["strategy"] = "cot"
    return name, options, spec


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--methods", nargs="+", default=["gcr:5", "gcr:10", "knowledge_navigator", "graph_agent"])
    ap.add_argument("--hops", type=int, default=1)
    ap.add_argument("--limit", type=int, default=10)
    ap.add_argument("--max-tokens", type=int, default=48)
    ap.add_argument("--dtypes", nargs="+", default=list(DTYPES), choices=DTYPES)
    args = ap.parse_args()
    dtypes = list(dict.fromkeys(["float32", *args.dtypes]))  # float32 is the reference

    ds = load_metaqa(args.hops, "validation", limit=args.limit)
    kg = ds.default_kg()
    header = ["method", "hops", "n", *(f"s/question {d}" for d in dtypes)]
    header += [f"ratio {d}" for d in dtypes[1:]] + [f"Hits@1 {d}" for d in dtypes]
    header += [f"same answers {d}" for d in dtypes[1:]]
    rows = []
    for spec in args.methods:
        name, options, label = parse_method(spec)
        graphs = {
            d: create_graph(name, kg, llm=LocalChatModel(dtype=d, max_tokens=args.max_tokens), **options)
            for d in dtypes
        }
        for graph in graphs.values():  # warm-up
            graph.invoke({"question": ds[0].question, "topic_entities": list(ds[0].topic_entities)})
        secs: dict[str, list[float]] = {d: [] for d in dtypes}
        hits: dict[str, list[float]] = {d: [] for d in dtypes}
        same = dict.fromkeys(dtypes, 0)
        for i, q in enumerate(ds):
            answers = {}
            for dtype in dtypes[i % len(dtypes) :] + dtypes[: i % len(dtypes)]:
                t0 = time.perf_counter()
                out = graphs[dtype].invoke({"question": q.question, "topic_entities": list(q.topic_entities)})
                secs[dtype].append(time.perf_counter() - t0)
                answers[dtype] = list(out.get("answers") or [])
                hits[dtype].append(score_answers(answers[dtype], list(q.answers))["hits@1"])
            for d in dtypes:
                same[d] += answers[d] == answers["float32"]
        mean = {d: statistics.mean(secs[d]) for d in dtypes}
        cells = [label, str(args.hops), str(len(ds)), *(f"{mean[d]:.2f}" for d in dtypes)]
        cells += [f"{mean['float32'] / mean[d]:.2f}" for d in dtypes[1:]]
        cells += [f"{statistics.mean(hits[d]):.3f}" for d in dtypes]
        cells += [f"{same[d]}/{len(ds)}" for d in dtypes[1:]]
        rows.append("| " + " | ".join(cells) + " |")
        print(rows[-1], flush=True)
    print()
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    print("\n".join(rows))


if __name__ == "__main__":
    main()
