"""Option ranking calls per second on the embedded model, with and without the prompt prefix cache.

The calls are knowledge_navigator's ranked relation choice as it runs on MetaQA: the method's own chat model
(the embedded model with its bundled specialist adapter, ``default_llm``), its ``select_relations_rank``
prompt and its options (``rank_options_text``) for the topic entity of each of the first ``--limit``
questions of the seeded dev-validation split of MetaQA ``--hops``, gone through ``--rounds`` times. Each
call runs on two copies of that model, ``prefix_cache=True`` and ``prefix_cache=False``, back to back (the
order alternating from one call to the next), so both see the same machine load; the cached one keeps its
cache from call to call, as a method's model does. ``max |diff|`` is the largest difference between the
two copies' scores of an option.

    HF_HUB_OFFLINE=1 PYTHONPATH=. python benchmarks/models/prefix_cache.py \
        --limit 20 --rounds 3 --dtypes float32 bfloat16

Prints a markdown table, one row per dtype.
"""

from __future__ import annotations

import argparse
import statistics
import time

from kg_agents.core.models import default_llm
from kg_agents.core.prompts import prompt_templates
from kg_agents.eval.datasets import load_metaqa
from kg_agents.llm import LocalChatModel
from kg_agents.llm.ranking import rank_options
from kg_agents.methods.knowledge_navigator.nodes import rank_options_text


def calls(hops: int, limit: int) -> list[tuple[list, list[str]]]:
    """One ranking call per question: the prompt's messages and the topic entity's relations as options."""
    ds = load_metaqa(hops, "validation", limit=limit)
    kg = ds.default_kg()
    template = prompt_templates("knowledge_navigator", ["select_relations_rank"], None)[
        "select_relations_rank"
    ]
    out = []
    for q in ds:
        topic = q.topic_entities[0]
        rels = [(r, d) for d in ("out", "in") for r in sorted(kg.relations(topic, d))]
        if len(rels) < 2:
            continue
        name = kg.label(topic)
        out.append(
            (template.format_messages(question=q.question, entity=name), rank_options_text(rels, name))
        )
    return out


def measure(dtype: str, work: list[tuple[list, list[str]]], kg, rounds: int) -> list[str]:
    models = {
        on: default_llm(LocalChatModel(dtype=dtype, prefix_cache=on), kg=kg, method="knowledge_navigator")
        for on in (True, False)
    }
    cache = models[True].prompt_cache()
    cache.clear()
    for llm in models.values():  # warm-up: loads the weights
        rank_options(llm, *work[0])
    hits, reused = cache.hits, cache.reused_tokens
    secs = {True: 0.0, False: 0.0}
    diff = 0.0
    for i, (msgs, options) in enumerate(work * rounds):
        scores = {}
        for on in (True, False) if i % 2 else (False, True):
            t0 = time.perf_counter()
            scores[on] = rank_options(models[on], msgs, options).scores
            secs[on] += time.perf_counter() - t0
        diff = max(diff, *(abs(a - b) for a, b in zip(scores[True], scores[False], strict=True)))
    n = len(work) * rounds
    tokens = statistics.mean(rank_options(models[False], m, o).input_tokens for m, o in work[:5])
    return [
        dtype,
        str(n),
        f"{statistics.mean(len(o) for _, o in work):.1f}",
        f"{tokens:.0f}",
        f"{(cache.reused_tokens - reused) / max(cache.hits - hits, 1):.0f}",
        f"{n / secs[False]:.2f}",
        f"{n / secs[True]:.2f}",
        f"{secs[False] / secs[True]:.2f}",
        f"{diff:.2g}",
    ]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--hops", type=int, default=1)
    ap.add_argument("--limit", type=int, default=20)
    ap.add_argument("--dtypes", nargs="+", default=["float32"], choices=["float32", "bfloat16", "int8"])
    ap.add_argument("--rounds", type=int, default=3, help="times each call is made (default: 3)")
    args = ap.parse_args()
    work = calls(args.hops, args.limit)
    kg = load_metaqa(args.hops, "validation", limit=1).default_kg()
    header = [
        "dtype",
        "calls",
        "options a call",
        "tokens read a call (prompt + options)",
        "prompt tokens reused a hit",
        "calls/s without",
        "calls/s with",
        "speed-up",
        "max |diff|",
    ]
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for dtype in args.dtypes:
        print("| " + " | ".join(measure(dtype, work, kg, args.rounds)) + " |", flush=True)


if __name__ == "__main__":
    main()
