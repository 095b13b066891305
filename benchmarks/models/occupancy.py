"""How full the embedded model's batches are, and where its time goes, in a concurrent eval.

For each setting of the compute thread (``--compute-thread on off``: ``KG_AGENTS_COMPUTE_THREAD``), one
fresh process runs ``kg-agents eval`` in-process for one method and hop count on the seeded dev-validation
questions (``--split validation --seed 0``, the first ``--limit``), ``--concurrency`` at a time, after one
untimed dev-train question (loading). It counts, while the timed run lasts:

- ``generate calls`` and ``requests``: the generation batcher's batches and the calls they held
  (``mean batch`` = requests / generate calls: the batches' occupancy), and the seconds spent in them;
- ``scoring calls``: option rankings on the local model, the prompt tokens they read and their seconds.

Prints one markdown table, a row per setting. The two settings' rows are measured in the same run.

    HF_HUB_OFFLINE=1 PYTHONPATH=. python benchmarks/models/occupancy.py --method knowledge_navigator \\
        --hops 1 --limit 20 --concurrency 16
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
import threading
import time
from pathlib import Path
from typing import Any


def worker(args: argparse.Namespace) -> None:
    """One setting (from the environment): the timed eval with its counters, one JSON line on stdout."""
    import kg_agents.llm.batching as batching
    import kg_agents.llm.ranking as ranking
    from kg_agents.cli.commands import main as cli

    counts: dict[str, float] = {}
    guard = threading.Lock()

    def add(**kw: float) -> None:
        with guard:
            for k, v in kw.items():
                counts[k] = counts.get(k, 0) + v

    run_batch = batching.GenerationBatcher._run
    score_local = ranking.score_local

    def timed_run(self: Any, requests: list[Any]) -> Any:
        t0 = time.perf_counter()
        out = run_batch(self, requests)
        add(generate_calls=1, requests=len(requests), generate_s=time.perf_counter() - t0)
        return out

    def timed_score(*a: Any, **kw: Any) -> Any:
        t0 = time.perf_counter()
        out = score_local(*a, **kw)
        add(scoring_calls=1, scoring_tokens=out[1], scoring_s=time.perf_counter() - t0)
        return out

    batching.GenerationBatcher._run = timed_run  # type: ignore[method-assign]
    ranking.score_local = timed_score
    work = Path(tempfile.mkdtemp(prefix="occupancy-", dir=args.work))

    def eval_args(split: str, limit: int, concurrency: int, out: Path) -> list[str]:
        return [
            "eval", "--method", args.method, "--dataset", f"metaqa-{args.hops}hop", "--split", split,
            "--seed", str(args.seed), "--limit", str(limit), "--concurrency", str(concurrency),
            "--out", str(out), "--no-progress",
        ]  # fmt: skip

    with contextlib.redirect_stdout(io.StringIO()):
        if cli(eval_args("train", 1, 1, work / "warm-up")):
            raise SystemExit("the warm-up question failed")
        counts.clear()
        t0 = time.perf_counter()
        rc = cli(eval_args(args.split, args.limit, args.concurrency, work / "timed"))
        wall = time.perf_counter() - t0
    if rc:
        raise SystemExit("kg-agents eval failed")
    summary = json.loads((work / "timed" / "summary.json").read_text(encoding="utf-8"))
    print(json.dumps({"wall": wall, "n": summary["n"], "hits@1": summary["hits@1"], **counts}))


def table(rows: list[tuple[str, dict[str, Any]]]) -> str:
    header = (
        "| compute thread | n | wall s | q/s | generate calls | requests | mean batch | s generating | "
        "scoring calls | tokens a scoring | s scoring | Hits@1 |"
    )
    lines = [header, "|" + "---|" * (header.count("|") - 1)]
    for name, r in rows:
        gen, req, sc = r.get("generate_calls", 0), r.get("requests", 0), r.get("scoring_calls", 0)
        cells = [name, str(r["n"]), f"{r['wall']:.1f}", f"{r['n'] / r['wall']:.3f}", f"{gen:.0f}"]
        cells += [f"{req:.0f}", f"{req / gen if gen else 0:.1f}", f"{r.get('generate_s', 0):.1f}"]
        cells += [f"{sc:.0f}", f"{r.get('scoring_tokens', 0) / sc if sc else 0:.0f}"]
        cells += [f"{r.get('scoring_s', 0):.1f}", f"{r['hits@1']:.3f}"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--method", default="knowledge_navigator")
    ap.add_argument("--hops", type=int, default=1, choices=[1, 2, 3])
    ap.add_argument("--limit", type=int, default=20)
    ap.add_argument("--concurrency", type=int, default=16)
    ap.add_argument("--split", default="validation")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--compute-thread", nargs="+", default=["on", "off"], choices=["on", "off"])
    ap.add_argument("--work", default=None, help="folder for the runs (default: a temporary one)")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        worker(args)
        return
    rows = []
    for setting in args.compute_thread:
        argv = [sys.executable, __file__, "--worker", "--method", args.method, "--hops", str(args.hops)]
        argv += ["--limit", str(args.limit), "--concurrency", str(args.concurrency), "--split", args.split]
        argv += ["--seed", str(args.seed)] + (["--work", args.work] if args.work else [])
        env = {**os.environ, "KG_AGENTS_COMPUTE_THREAD": "1" if setting == "on" else "0"}
        env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
        out = subprocess.run(argv, env=env, check=True, stdout=subprocess.PIPE, text=True).stdout
        rows.append((setting, json.loads(out.strip().splitlines()[-1])))
        print(f"[{setting}] {rows[-1][1]['wall']:.1f} s", file=sys.stderr, flush=True)
    print(table(rows))


if __name__ == "__main__":
    main()
