"""Throughput of whole methods in each dtype of the embedded model, through the real eval runner.

For each dtype, one process (``KG_AGENTS_DTYPE`` set, so every model it makes runs in that dtype: the chat
models, the methods' specialist adapters, gcr's path decoder) runs ``kg-agents eval`` in-process for every
method and hop count on the same seeded dev-validation questions (``--split validation --seed 0``, the first
``--limit``), ``--concurrency`` questions at a time. Before each timed run, one dev-train question of the same
method and hops runs untimed (loading and merging the models, building indexes), so the timed run measures
answering. Prints one markdown table, a row per method x hops x dtype:

- ``q/s``: questions answered per second (n / the eval command's wall time, which includes building the
  graph from models already loaded and writing the run's report, well under a second);
- ``s/question``: the mean seconds one question took from start to end (``avg_seconds``; with
  concurrency, several run at once);
- ``Hits@1`` (exact match) and, on the bfloat16 rows, ``bf16 - f32``: its difference from float32's;
- ``max RSS``: the most memory the dtype's process held (all its methods' models together).

The full run (hours on 2 CPU cores):

    HF_HUB_OFFLINE=1 PYTHONPATH=. python benchmarks/models/throughput.py \\
        --methods knowledge_navigator graph_explore graph_agent gcr dualr --hops 1 2 3 \\
        --limit 200 --concurrency 16 --dtypes float32 bfloat16 --split validation --seed 0

A quick check that it works (minutes):

    HF_HUB_OFFLINE=1 PYTHONPATH=. python benchmarks/models/throughput.py \\
        --methods knowledge_navigator graph_agent --hops 1 --limit 3 --concurrency 16
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

DTYPES = ("float32", "bfloat16", "int8")


def eval_args(method: str, hops: int, split: str, seed: int, limit: int, concurrency: int, out: Path) -> list:
    return [
        "eval",
        "--method",
        method,
        "--dataset",
        f"metaqa-{hops}hop",
        "--split",
        split,
        "--seed",
        str(seed),
        "--limit",
        str(limit),
        "--concurrency",
        str(concurrency),
        "--out",
        str(out),
        "--no-progress",
    ]


def worker(args: argparse.Namespace) -> None:
    """One dtype (from ``$KG_AGENTS_DTYPE``): every method and hop count, one JSON line each."""
    from kg_agents.cli.commands import main as cli
    from kg_agents.llm.local_model import load_local_model, resolve_dtype

    dtype = resolve_dtype()
    model, _ = load_local_model()  # the dtype the process's models load in, checked
    print(f"[{dtype}] the embedded model loads as {model.dtype}", file=sys.stderr, flush=True)
    work = Path(tempfile.mkdtemp(prefix=f"throughput-{dtype}-", dir=args.work))
    with open(args.results, "a", encoding="utf-8") as results:
        for method in args.methods:
            for hops in args.hops:
                runs = work / f"{method}-{hops}hop"
                quiet = io.StringIO()
                with contextlib.redirect_stdout(quiet):  # the eval command's table: ours is printed later
                    warm = cli(eval_args(method, hops, "train", args.seed, 1, 1, runs / "warm-up"))
                    t0 = time.perf_counter()
                    rc = cli(
                        eval_args(
                            method, hops, args.split, args.seed, args.limit, args.concurrency, runs / "timed"
                        )
                    )
                    wall = time.perf_counter() - t0
                if warm or rc:
                    raise SystemExit(f"kg-agents eval failed for {method} at {hops} hops in {dtype}")
                summary = json.loads((runs / "timed" / "summary.json").read_text(encoding="utf-8"))
                row = {"method": method, "hops": hops, "dtype": dtype, "wall": wall, **summary}
                results.write(json.dumps(row) + "\n")
                results.flush()
                print(
                    f"[{dtype}] {method} {hops}-hop: n={summary['n']} {wall:.1f} s "
                    f"Hits@1 {summary['hits@1']:.3f}",
                    file=sys.stderr,
                    flush=True,
                )


def run_dtype(dtype: str, args: argparse.Namespace, results: Path) -> int:
    """Run the worker for ``dtype`` in its own process; return that process's max RSS in bytes."""
    argv = [sys.executable, __file__, "--worker", "--results", str(results), "--work", str(args.work)]
    argv += ["--methods", *args.methods, "--hops", *map(str, args.hops), "--limit", str(args.limit)]
    argv += ["--concurrency", str(args.concurrency), "--split", args.split, "--seed", str(args.seed)]
    env = {**os.environ, "KG_AGENTS_DTYPE": dtype, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    proc = subprocess.Popen(argv, env=env)
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode:
        raise SystemExit(f"the {dtype} process failed (exit status {proc.returncode})")
    return int(usage.ru_maxrss) * 1024  # kilobytes on Linux


def table(rows: list[dict[str, Any]], rss: dict[str, int]) -> str:
    header = "| method | hops | dtype | n | q/s | s/question | Hits@1 | bf16 - f32 | errors | max RSS (MiB) |"
    lines = [header, "|" + "---|" * (header.count("|") - 1)]
    f32 = {(r["method"], r["hops"]): r["hits@1"] for r in rows if r["dtype"] == "float32"}
    for r in rows:
        ref = f32.get((r["method"], r["hops"]))
        delta = f"{r['hits@1'] - ref:+.3f}" if r["dtype"] == "bfloat16" and ref is not None else "-"
        lines.append(
            f"| {r['method']} | {r['hops']} | {r['dtype']} | {r['n']} | {r['n'] / r['wall']:.3f} | "
            f"{r['avg_seconds']:.1f} | {r['hits@1']:.3f} | {delta} | {r['errors']} | "
            f"{rss[r['dtype']] / 2**20:.0f} |"
        )
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument(
        "--methods",
        nargs="+",
        default=["knowledge_navigator", "graph_explore", "graph_agent", "gcr", "dualr"],
    )
    ap.add_argument("--hops", type=int, nargs="+", default=[1, 2, 3], choices=[1, 2, 3])
    ap.add_argument("--limit", type=int, default=20)
    ap.add_argument("--concurrency", type=int, default=16)
    ap.add_argument("--dtypes", nargs="+", default=["float32", "bfloat16"], choices=DTYPES)
    ap.add_argument("--split", default="validation", choices=["validation", "train", "dev"])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--work", type=Path, default=None, help="where the runs go (default: a temporary folder)")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--results", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        worker(args)
        return
    args.work = args.work or Path(tempfile.mkdtemp(prefix="throughput-"))
    args.work.mkdir(parents=True, exist_ok=True)
    results = args.work / f"results-{os.getpid()}.jsonl"
    rss = {dtype: run_dtype(dtype, args, results) for dtype in dict.fromkeys(args.dtypes)}
    rows = [json.loads(line) for line in results.read_text(encoding="utf-8").splitlines()]
    rows.sort(key=lambda r: (args.methods.index(r["method"]), r["hops"], args.dtypes.index(r["dtype"])))
    print(table(rows, rss))
    print(f"\nruns in {args.work}", file=sys.stderr)


if __name__ == "__main__":
    main()
