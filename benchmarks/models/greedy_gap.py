"""What one greedy token of the embedded model costs, and what that time is made of.

A 48-token greedy call of SmolLM2-135M-Instruct takes seconds on this CPU where its arithmetic is a few
milliseconds a token. This script splits the time of one generated token (batch 1, after a prompt of
``--prompt-tokens``), each figure the median of ``--repeats``:

- ``generate``: ``model.generate`` (greedy, ``--new-tokens`` tokens), per token;
- ``forward loop``: the same tokens by a plain loop of ``model(next_token, past_key_values=...)``, per token;
- ``matmul floor``: the model's weight matrix products for one token (every linear layer and the output
  projection, the same shapes, batch 1), timed alone: the arithmetic a token needs;
- ``operator calls``: the PyTorch operator calls one forward step makes (``torch.profiler`` events,
  nested calls included), and the time per call that the gap between the forward loop and the floor
  works out to.

One row per dtype of the local model (``--dtypes``: float32, bfloat16, int8 = linear weights in int8 by
dynamic quantization), each its own copy of the weights (``load_local_model(dtype=...)``). Prints a
markdown table.

    HF_HUB_OFFLINE=1 PYTHONPATH=. python benchmarks/models/greedy_gap.py
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

from kg_agents.llm.local_model import load_local_model


def timed(fn: Any, repeats: int) -> float:
    out = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return statistics.median(out)


def main() -> None:
    import torch

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--prompt-tokens", type=int, default=150)
    ap.add_argument("--new-tokens", type=int, default=48)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--dtypes", nargs="+", default=["float32", "bfloat16", "int8"])
    args = ap.parse_args()

    model, tok = load_local_model(dtype="float32")
    text = " the film" * (args.prompt_tokens // 2)
    ids = tok(text, return_tensors="pt")["input_ids"][:, : args.prompt_tokens]
    n = args.new_tokens
    shapes = [(m.in_features, m.out_features) for m in model.modules() if isinstance(m, torch.nn.Linear)]
    flops = sum(2 * i * o for i, o in shapes)
    print(f"threads {torch.get_num_threads()}, {len(shapes)} linear layers, {flops / 1e6:.0f} MFLOP a token")
    dynamic = torch.ao.nn.quantized.dynamic.Linear
    rows = []
    for dtype_name in args.dtypes:
        model, _ = load_local_model(dtype=dtype_name)
        dtype = torch.bfloat16 if dtype_name == "bfloat16" else torch.float32  # int8: float32 activations
        linears = [m for m in model.modules() if isinstance(m, (torch.nn.Linear, dynamic))]
        with torch.inference_mode():

            def gen(model: Any = model) -> None:
                model.generate(
                    ids,
                    attention_mask=torch.ones_like(ids),
                    max_new_tokens=n,
                    min_new_tokens=n,
                    do_sample=False,
                    pad_token_id=tok.eos_token_id,
                )

            def loop(model: Any = model) -> None:
                out = model(ids, use_cache=True)
                past = out.past_key_values
                nxt = out.logits[:, -1:].argmax(-1)
                for _ in range(n - 1):
                    out = model(nxt, past_key_values=past, use_cache=True)
                    past = out.past_key_values
                    nxt = out.logits[:, -1:].argmax(-1)

            def prompt_only(model: Any = model) -> None:
                model(ids, use_cache=True)

            xs = [torch.randn(1, m.in_features, dtype=dtype) for m in linears]

            def floor(xs: list[Any] = xs, linears: list[Any] = linears) -> None:
                for m, x in zip(linears, xs, strict=True):
                    m(x)

            gen(), loop(), floor()  # warm-up
            t_prompt = timed(prompt_only, args.repeats)
            t_gen = (timed(gen, args.repeats) - t_prompt) / n
            t_loop = (timed(loop, args.repeats) - t_prompt) / (n - 1)
            t_floor = timed(floor, args.repeats * 4)
            out = model(ids, use_cache=True)
            past, nxt = out.past_key_values, out.logits[:, -1:].argmax(-1)
            with torch.profiler.profile() as prof:
                model(nxt, past_key_values=past, use_cache=True)
            ops = sum(e.count for e in prof.key_averages() if not e.key.startswith("["))
        rows.append(
            f"| {dtype_name} | {t_gen * 1e3:.1f} | {t_loop * 1e3:.1f} | {t_floor * 1e3:.1f} "
            f"| {flops / t_floor / 1e9:.1f} | {ops} | {(t_loop - t_floor) / ops * 1e6:.1f} "
            f"| {t_gen * 48:.2f} |"
        )
        print(rows[-1], flush=True)
    print()
    print(
        "| dtype | generate, ms/token | forward loop, ms/token | matmul floor, ms/token | floor GFLOP/s "
        "| operator calls a step | µs per call beyond the floor | 48 tokens by generate, s |"
    )
    print("|---|---|---|---|---|---|---|---|")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
