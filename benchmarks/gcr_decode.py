"""Graph-constrained decoding with the local model: constraint overhead and seconds per question vs K.

1. Overhead: the KG-Trie LogitsProcessor's time as a share of the model's forward time inside the
   same constrained beam search, and the per-step time of plain (unconstrained) beam search with the
   same K and number of steps for comparison.
2. Seconds per question of ``LocalConstrainedDecoder.generate`` (paths + hypothesis answers) for
   K = 1, 3, 5, 10, 20 over a few MetaQA dev-train questions (the general model's call is not included).

The machine's load average is printed: figures taken on a shared machine are upper bounds.

Usage:
    HF_HUB_OFFLINE=1 PYTHONPATH=. python benchmarks/gcr_decode.py --questions 3 --beams 1 3 5 10 20
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

from kg_agents.eval.datasets import load_metaqa
from kg_agents.kg import open_kg
from kg_agents.llm.constrained import LocalConstrainedDecoder
from kg_agents.prompts import load_prompt
from kg_agents.trie import TrieCache


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--questions", type=int, default=3)
    ap.add_argument("--beams", type=int, nargs="+", default=[1, 3, 5, 10, 20])
    ap.add_argument("--overhead-beams", type=int, default=10)
    args = ap.parse_args(argv)
    import torch

    kg = open_kg("metaqa")
    dec = LocalConstrainedDecoder()
    cache = TrieCache(kg, dec.tokenizer, max_hops=2)
    template = load_prompt("gcr", "decode_zero_shot")
    qs = [q for h in (1, 2) for q in load_metaqa(h, "train", seed=1, limit=args.questions)][: args.questions]
    prompts = [(template.format_messages(question=q.question, entities="\n".join(q.topic_entities or [])),
                cache.get(q.topic_entities or [])) for q in qs]
    print(f"load average at start: {os.getloadavg()}; torch threads {torch.get_num_threads()}")

    # 1. overhead inside constrained beam search, and plain beam search per step
    proc_s, model_s, steps_n, plain_step = 0.0, 0.0, 0, []
    for msgs, trie in prompts:
        dec.generate(msgs, trie, args.overhead_beams, answer=False)
        st = dec.last_stats
        proc_s += st["processor_seconds"]
        model_s += st["seconds"] - st["processor_seconds"]
        steps_n += st["steps"]
        ids = dec.tokenizer(dec.render(msgs), add_special_tokens=False, return_tensors="pt")["input_ids"]
        t0 = time.perf_counter()
        with torch.inference_mode():
            dec.model.generate(input_ids=ids, attention_mask=torch.ones_like(ids),
                               num_beams=args.overhead_beams, num_return_sequences=args.overhead_beams,
                               do_sample=False, max_new_tokens=st["steps"], min_new_tokens=st["steps"],
                               pad_token_id=dec.tokenizer.eos_token_id, temperature=None, top_p=None,
                               top_k=None)
        plain_step.append((time.perf_counter() - t0) / max(st["steps"], 1))
    print(f"K={args.overhead_beams}: {steps_n} constrained steps; "
          f"processor {proc_s / steps_n * 1000:.2f} ms/step, "
          f"rest of the step (model forward + beam bookkeeping) {model_s / steps_n * 1000:.1f} ms/step, "
          f"overhead {proc_s / model_s * 100:.2f}%; "
          f"plain beam search {statistics.mean(plain_step) * 1000:.1f} ms/step")

    # 2. seconds per question vs K
    print(f"{'K':>3} {'s/question':>11} {'paths/question':>15}")
    for k in args.beams:
        secs, n_paths = [], []
        for msgs, trie in prompts:
            t0 = time.perf_counter()
            out = dec.generate(msgs, trie, k)
            secs.append(time.perf_counter() - t0)
            n_paths.append(len(out))
        print(f"{k:>3} {statistics.mean(secs):11.2f} {statistics.mean(n_paths):15.1f}")
    print(f"load average at end: {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
