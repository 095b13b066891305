"""Baseline figures on MetaQA: llm_only, graph_rag and text_rag with the local model, per hop.

Runs ``kg-agents eval`` for each (method, hop) on the seeded validation split into ``OUT/<method>-<hop>hop``
(resumable: rerun with a larger ``--limit`` to extend a sample) and prints one comparison table.

Usage:
    HF_HUB_OFFLINE=1 PYTHONPATH=. nice -n 10 python benchmarks/baselines_metaqa.py --limit 50 \\
        --max-tokens 48 --concurrency 16 --out runs/baselines
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from kg_agents.cli import main as cli_main
from kg_agents.eval.runner import compare_runs

METHODS = ("llm_only", "graph_rag", "text_rag")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--limit", type=int, default=50, help="questions per hop (default 50)")
    p.add_argument("--hops", default="1,2,3")
    p.add_argument("--methods", default=",".join(METHODS))
    p.add_argument("--max-tokens", type=int, default=48)
    p.add_argument("--model", default="local")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--concurrency", type=int, default=1, help="questions in flight (model calls batch)")
    p.add_argument("--out", default="runs/baselines")
    args = p.parse_args(argv)
    dirs = []
    for hop in args.hops.split(","):
        for method in args.methods.split(","):
            out = Path(args.out) / f"{method}-{hop}hop"
            t0 = time.perf_counter()
            rc = cli_main(
                [
                    "eval",
                    "--method",
                    method,
                    "--dataset",
                    f"metaqa-{hop}hop",
                    "--split",
                    "validation",
                    "--seed",
                    str(args.seed),
                    "--limit",
                    str(args.limit),
                    "--model",
                    args.model,
                    "--max-tokens",
                    str(args.max_tokens),
                    "--concurrency",
                    str(args.concurrency),
                    "--no-progress",
                    "--out",
                    str(out),
                ]
            )
            if rc != 0:
                return rc
            print(
                f"{method} {hop}-hop: {time.perf_counter() - t0:.1f} s wall for this call "
                f"(concurrency {args.concurrency}; questions already in {out} are skipped)",
                flush=True,
            )
            dirs.append(out)
    table, chart = compare_runs(dirs, Path(args.out) / "compare.png")
    print(table)
    print(f"chart: {chart}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
