"""Dynamic batching of the local model: N MetaQA questions one at a time vs concurrently (``abatch``).

Prints seconds for each route, the speed-up, the batch sizes the batcher formed and whether every answer
equals its one-at-a-time answer. The machine's load average is printed: on a shared machine the figures
are upper bounds.

Usage:
    HF_HUB_OFFLINE=1 OMP_NUM_THREADS=1 PYTHONPATH=. python benchmarks/models/batching.py --n 16 --batch 16
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time

from kg_agents.eval.datasets import load_metaqa
from kg_agents.llm.chat import LocalChatModel


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=16, help="questions (MetaQA 1-hop dev-train)")
    ap.add_argument("--batch", type=int, default=16, help="LocalChatModel batch_size")
    ap.add_argument("--max-tokens", type=int, default=32)
    args = ap.parse_args(argv)
    qs = [q.question for q in load_metaqa(1, "train", seed=0, limit=args.n)]
    single = LocalChatModel(max_tokens=args.max_tokens, batch_size=1)
    batched = LocalChatModel(max_tokens=args.max_tokens, batch_size=args.batch)
    single.invoke("warm up")
    t0 = time.perf_counter()
    one = [single.invoke(q) for q in qs]
    t_one = time.perf_counter() - t0
    t0 = time.perf_counter()
    many = asyncio.run(batched.abatch(qs, config={"max_concurrency": args.n}))
    t_many = time.perf_counter() - t0
    same = sum(a.content == b.content for a, b in zip(one, many, strict=True))
    sizes = sorted({m.response_metadata["batch_size"] for m in many})
    print(f"load average {os.getloadavg()[0]:.2f}; {args.n} questions, {args.max_tokens} max tokens")
    print(
        f"one at a time: {t_one:.1f} s   abatch (batch_size={args.batch}): {t_many:.1f} s   "
        f"speed-up {t_one / t_many:.1f}x   batch sizes {sizes}   identical answers {same}/{args.n}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
