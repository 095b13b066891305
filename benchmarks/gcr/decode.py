"""Graph-constrained decoding with the local model: constraint overhead and seconds per question vs K.

1. Overhead: the KG-Trie LogitsProcessor's time as a share of the model's forward time inside the
   same constrained beam search, and the per-step time of plain (unconstrained) beam search with the
   same K and number of steps for comparison.
2. Seconds per question of ``LocalConstrainedDecoder.generate`` (paths + hypothesis answers) for
   K = 1, 3, 5, 10, 20 over a few MetaQA dev-train questions (the general model's call is not included).
3. With ``--vllm`` (starts a vLLM CPU server, ``VLLMServer``) or ``--vllm-url URL`` (a running one): seconds
   per question of ``VLLMConstrainedDecoder.generate`` on the same questions and tries for ``--vllm-beams``
   (default K = 5, 10), by route (``auto``: exact scoring for tries of <= ``score_limit`` paths, else the
   client-side beam search; ``beam``: always the beam search), next to the local decoder's figure, and
   whether the vLLM beam route returned the local decoder's paths. The server is warmed up first.

The machine's load average is printed: figures taken on a shared machine are upper bounds.

Usage:
    HF_HUB_OFFLINE=1 PYTHONPATH=. python benchmarks/gcr/decode.py --questions 3 --beams 1 3 5 10 20
    HF_HUB_OFFLINE=1 PYTHONPATH=. python benchmarks/gcr/decode.py --questions 3 --beams 5 10 --vllm
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from typing import Any

from kg_agents.core.prompts import load_prompt
from kg_agents.eval.datasets import load_metaqa
from kg_agents.kg import open_kg
from kg_agents.methods.gcr.local_decoder import LocalConstrainedDecoder
from kg_agents.methods.gcr.trie import TrieCache


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--questions", type=int, default=3)
    ap.add_argument("--beams", type=int, nargs="+", default=[1, 3, 5, 10, 20])
    ap.add_argument("--overhead-beams", type=int, default=10)
    ap.add_argument("--skip-overhead", action="store_true", help="skip part 1")
    ap.add_argument("--vllm", action="store_true", help="also time the vLLM decoder (starts a server)")
    ap.add_argument("--vllm-url", default=None, help="time the vLLM decoder against this running server")
    ap.add_argument("--vllm-beams", type=int, nargs="+", default=[5, 10])
    ap.add_argument("--vllm-routes", nargs="+", default=["auto", "beam"], choices=["auto", "exact", "beam"])
    args = ap.parse_args(argv)
    import torch

    kg = open_kg("metaqa")
    dec = LocalConstrainedDecoder()
    cache = TrieCache(kg, dec.tokenizer, max_hops=2)
    template = load_prompt("gcr", "decode_zero_shot")
    qs = [q for h in (1, 2) for q in load_metaqa(h, "train", seed=1, limit=args.questions)][: args.questions]
    prompts = [
        (
            template.format_messages(question=q.question, entities="\n".join(q.topic_entities or [])),
            cache.get(q.topic_entities or []),
        )
        for q in qs
    ]
    print(f"load average at start: {os.getloadavg()}; torch threads {torch.get_num_threads()}")

    print(
        "questions: "
        + "; ".join(f"{q.id} ({len(t)} trie paths)" for q, (_, t) in zip(qs, prompts, strict=True))
    )
    # 1. overhead inside constrained beam search, and plain beam search per step
    proc_s, model_s, steps_n, plain_step = 0.0, 0.0, 0, []
    for msgs, trie in [] if args.skip_overhead else prompts:
        dec.generate(msgs, trie, args.overhead_beams, answer=False)
        st = dec.last_stats
        proc_s += st["processor_seconds"]
        model_s += st["seconds"] - st["processor_seconds"]
        steps_n += st["steps"]
        ids = dec.tokenizer(dec.render(msgs), add_special_tokens=False, return_tensors="pt")["input_ids"]
        t0 = time.perf_counter()
        with torch.inference_mode():
            dec.model.generate(
                input_ids=ids,
                attention_mask=torch.ones_like(ids),
                num_beams=args.overhead_beams,
                num_return_sequences=args.overhead_beams,
                do_sample=False,
                max_new_tokens=st["steps"],
                min_new_tokens=st["steps"],
                pad_token_id=dec.tokenizer.eos_token_id,
                temperature=None,
                top_p=None,
                top_k=None,
            )
        plain_step.append((time.perf_counter() - t0) / max(st["steps"], 1))
    if steps_n:
        print(
            f"K={args.overhead_beams}: {steps_n} constrained steps; "
            f"processor {proc_s / steps_n * 1000:.2f} ms/step, "
            f"rest of the step (model forward + beam bookkeeping) {model_s / steps_n * 1000:.1f} ms/step, "
            f"overhead {proc_s / model_s * 100:.2f}%; "
            f"plain beam search {statistics.mean(plain_step) * 1000:.1f} ms/step"
        )

    # 2. seconds per question vs K
    print(f"{'K':>3} {'s/question':>11} {'paths/question':>15}")
    local_s: dict[int, float] = {}
    local_paths: dict[int, list[list[str]]] = {}
    for k in sorted(set(args.beams) | (set(args.vllm_beams) if args.vllm or args.vllm_url else set())):
        secs, n_paths, texts = [], [], []
        for msgs, trie in prompts:
            t0 = time.perf_counter()
            out = dec.generate(msgs, trie, k)
            secs.append(time.perf_counter() - t0)
            n_paths.append(len(out))
            texts.append([d.path_text for d in out])
        local_s[k], local_paths[k] = statistics.mean(secs), texts
        print(f"{k:>3} {statistics.mean(secs):11.2f} {statistics.mean(n_paths):15.1f}")
    if args.vllm or args.vllm_url:
        time_vllm(args, dec, prompts, local_s, local_paths)
    print(f"load average at end: {os.getloadavg()}")
    return 0


def time_vllm(
    args: argparse.Namespace,
    local: LocalConstrainedDecoder,
    prompts: list[tuple[Any, Any]],
    local_s: dict[int, float],
    local_paths: dict[int, list[list[str]]],
) -> None:
    """Part 3: the vLLM decoder on the same questions and tries."""
    import contextlib

    from kg_agents.llm.vllm_server import VLLMServer
    from kg_agents.methods.gcr.vllm_decoder import VLLMConstrainedDecoder

    with contextlib.ExitStack() as stack:
        url = args.vllm_url
        if url is None:
            server = stack.enter_context(VLLMServer(startup_timeout=400))
            url = server.base_url
            print(f"vLLM server started in {server.startup_s:.0f} s at {url}")
        vdec = VLLMConstrainedDecoder(url, tokenizer=local.tokenizer)
        stack.callback(vdec.close)
        t0 = time.perf_counter()
        for msgs, trie in prompts:  # warm-up: first requests of a fresh server are slow
            vdec.generate(msgs, trie, 2, route="beam", answer=False)
        print(
            f"vLLM warm-up ({len(prompts)} questions, K=2): {time.perf_counter() - t0:.1f} s; "
            f"load average {os.getloadavg()}"
        )
        print(
            f"{'K':>3} {'route':>6} {'vLLM s/q':>9} {'local s/q':>10} {'routes used':>14} "
            f"{'requests/q':>11} {'same paths as local':>20}"
        )
        for k in args.vllm_beams:
            for route in args.vllm_routes:
                secs, used, reqs, same = [], [], [], 0
                for (msgs, trie), ref in zip(prompts, local_paths[k], strict=True):
                    t0 = time.perf_counter()
                    out = vdec.generate(msgs, trie, k, route=route)
                    secs.append(time.perf_counter() - t0)
                    used.append(vdec.last_stats["route"])
                    reqs.append(vdec.last_stats["requests"])
                    same += [d.path_text for d in out] == ref
                    assert all(d.path_text in trie.texts for d in out)
                print(
                    f"{k:>3} {route:>6} {statistics.mean(secs):9.2f} {local_s[k]:10.2f} "
                    f"{','.join(sorted(set(used))):>14} {statistics.mean(reqs):11.1f} "
                    f"{same:>16d}/{len(prompts)}"
                )


if __name__ == "__main__":
    sys.exit(main())
