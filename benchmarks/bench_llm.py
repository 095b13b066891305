"""Speed and memory of the model layer: the local SmolLM2 chat model and the vLLM CPU server.

Prints, per backend: start-up seconds, generation tokens/s (greedy, ``--tokens`` new tokens, median of
``--repeats``), and resident memory. Nothing is asserted; figures depend on the machine and its load.

Usage:
    HF_HUB_OFFLINE=1 PYTHONPATH=. python benchmarks/bench_llm.py [--tokens 64] [--repeats 3] [--no-vllm]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

PROMPT = "Write a long story about a cat who explores a city."


def bench_local(tokens: int, repeats: int) -> None:
    import psutil

    from kg_agents.llm import LocalChatModel

    rss0 = psutil.Process().memory_info().rss
    t0 = time.perf_counter()
    llm = LocalChatModel(max_tokens=tokens)
    llm.get_num_tokens("warm up")  # loads the weights
    load_s = time.perf_counter() - t0
    rates = []
    for _ in range(repeats):
        t = time.perf_counter()
        msg = llm.invoke(PROMPT)
        rates.append(msg.usage_metadata["output_tokens"] / (time.perf_counter() - t))
    t = time.perf_counter()
    n = sum(1 for c in llm.stream(PROMPT) if c.content)
    stream_rate = n / (time.perf_counter() - t)
    rss = psutil.Process().memory_info().rss
    print(
        f"local  load_s={load_s:.2f} tokens_per_s={statistics.median(rates):.1f} (runs: "
        f"{', '.join(f'{r:.1f}' for r in rates)}) stream_chunks_per_s={stream_rate:.1f} "
        f"rss_mb={rss / 2**20:.0f} (model part {(rss - rss0) / 2**20:.0f})"
    )


def bench_vllm(tokens: int, repeats: int) -> None:
    from kg_agents.llm.vllm_client import VLLMClient
    from kg_agents.llm.vllm_server import VLLMServer

    with VLLMServer(startup_timeout=600) as server, VLLMClient(server.base_url) as client:
        rss_idle = server.rss_bytes()
        rates = []
        for _ in range(repeats):
            t = time.perf_counter()
            out = client.completions(PROMPT, max_tokens=tokens, ignore_eos=True)
            rates.append(out["usage"]["completion_tokens"] / (time.perf_counter() - t))
        print(
            f"vllm   startup_s={server.startup_s:.1f} tokens_per_s={statistics.median(rates):.1f} (runs: "
            f"{', '.join(f'{r:.1f}' for r in rates)}) rss_mb_idle={rss_idle / 2**20:.0f} "
            f"rss_mb_after={server.rss_bytes() / 2**20:.0f} (all server processes)"
        )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--no-vllm", action="store_true")
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    print(f"cpus={os.cpu_count()} load_avg={os.getloadavg()[0]:.2f}")
    bench_local(args.tokens, args.repeats)
    if not args.no_vllm:
        bench_vllm(args.tokens, args.repeats)


if __name__ == "__main__":
    main()
