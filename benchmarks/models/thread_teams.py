"""What one greedy token costs once other threads have run tensor kernels (PyTorch's OpenMP teams).

Each Python thread that starts a parallel PyTorch kernel gets an OpenMP team of its own. This script
times a greedy generation of ``--new-tokens`` tokens after a ``--prompt-tokens`` prompt through the
generation batcher (batch 1, the default dtype), in a fresh process per row, after:

- ``fresh``: nothing else;
- ``main thread kernel``: one parallel kernel (a GELU over a 6400 x 384 tensor) on the main thread;
- ``ended thread kernel``: the same kernel on a thread that then ended;
- ``routed kernel``: the same kernel through :func:`kg_agents._compute.run_compute`.

each with the compute thread on (``KG_AGENTS_COMPUTE_THREAD=1``, the default: the batcher's generate runs
on it) and off (it runs on the batcher's own thread). Prints ms a token, the median of ``--repeats``.

    HF_HUB_OFFLINE=1 PYTHONPATH=. python benchmarks/models/thread_teams.py
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
import time

CASES = ("fresh", "main thread kernel", "ended thread kernel", "routed kernel")


def worker(case: str, prompt_tokens: int, new_tokens: int, repeats: int) -> float:
    import torch

    from kg_agents._compute import run_compute
    from kg_agents.llm.batching import BatchRequest, GenerationBatcher
    from kg_agents.llm.chat import generation_lock
    from kg_agents.llm.local_model import load_local_model

    model, tok = load_local_model()
    ids = tok(" the film" * prompt_tokens, return_tensors="pt")["input_ids"][0, :prompt_tokens].tolist()
    batcher = GenerationBatcher(model, tok, generation_lock(), max_batch=1)

    def kernel() -> None:
        torch.nn.functional.gelu(torch.randn(6400, 384)).sum()

    if case == "main thread kernel":
        kernel()
    elif case == "ended thread kernel":
        t = threading.Thread(target=kernel)
        t.start()
        t.join()
    elif case == "routed kernel":
        run_compute(kernel)
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = batcher.submit(BatchRequest(ids, new_tokens)).result()
        times.append((time.perf_counter() - t0) / max(len(out.token_ids), 1))
    return statistics.median(times) * 1000


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--prompt-tokens", type=int, default=160)
    ap.add_argument("--new-tokens", type=int, default=80)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--worker", choices=CASES, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        print(json.dumps(worker(args.worker, args.prompt_tokens, args.new_tokens, args.repeats)))
        return
    rows = []
    for case in CASES:
        cells = []
        for on in ("1", "0"):
            argv = [sys.executable, __file__, "--worker", case, "--repeats", str(args.repeats)]
            argv += ["--prompt-tokens", str(args.prompt_tokens), "--new-tokens", str(args.new_tokens)]
            env = {**os.environ, "KG_AGENTS_COMPUTE_THREAD": on, "HF_HUB_OFFLINE": "1"}
            out = subprocess.run(argv, env=env, check=True, stdout=subprocess.PIPE, text=True).stdout
            cells.append(f"{json.loads(out.strip().splitlines()[-1]):.1f}")
        rows.append(f"| {case} | {cells[0]} | {cells[1]} |")
    print("| before the generation | ms a token, compute thread on | off |")
    print("|---|---|---|")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
