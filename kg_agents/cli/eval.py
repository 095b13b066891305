"""``kg-agents eval``: one run, a grid of runs (``--grid FILE``), or a comparison (``--compare``)."""

from __future__ import annotations

import argparse
import asyncio
import shlex
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kg_agents.errors import ConfigError

__all__ = ["add_eval_parser", "cmd_eval", "run_grid"]

#: Flags that a grid file sets for every run, so they do not go with ``--grid``.
_NOT_WITH_GRID = ("method", "dataset", "questions", "kg", "set", "limit", "compare")


def cmd_eval(args: argparse.Namespace) -> int:
    from kg_agents.eval import runner

    if args.grid:
        return run_grid(args)
    if args.compare:
        table, chart = runner.compare_runs(args.compare, args.chart)
        print(table)
        print(f"chart: {chart}")
        return 0
    if not args.method or not args.out:
        raise ConfigError("eval needs --method and --out (or --compare DIR ...)")
    if bool(args.dataset) == bool(args.questions):
        raise ConfigError("eval needs exactly one of --dataset NAME or --questions FILE")
    for flag, value in (
        ("--concurrency", args.concurrency),
        ("--max-endpoint-failures", args.max_endpoint_failures),
    ):
        if value < 1:
            raise ConfigError(f"{flag} must be >= 1, got {value}")
    from kg_agents.cli.commands import MethodSetup
    from kg_agents.eval.datasets import get_dataset

    setup = MethodSetup.from_args(args.method, args.set or [], args.model, args.max_tokens)
    if args.dataset:
        split = args.split or ("dev" if args.dataset == "webqsp-sample" else "validation")
        ds = get_dataset(args.dataset, split, seed=args.seed, limit=args.limit)
        if args.kg:
            ds.kg = args.kg
        dataset = args.dataset
    else:
        split = args.split or "dev"
        ds = runner.load_questions_file(
            args.questions, args.kg, split=split, seed=args.seed, limit=args.limit
        )
        dataset = Path(args.questions).name
    if not len(ds):
        raise ConfigError("no questions to evaluate")
    kg0 = ds.kg_for(ds[0])
    first = setup.build(kg0)  # builds the model and checks --set before any question runs
    context = setup.context(first)

    def build(kg: Any) -> Any:
        return first if kg is kg0 else setup.build(kg)

    kg_spec = ds.kg if isinstance(ds.kg, str) or ds.kg is None else getattr(ds.kg, "name", "kg")
    extra = "".join(f" {k}={v}" for k, v in setup.model_options.items())
    model = setup.model_spec and setup.model_spec + extra
    info = {
        "split": split,
        "seed": args.seed,
        "model": model,
        "model_used": setup.model_used(kg0),
        "pack": setup.pack_used(kg0),
        "options": sorted(args.set or []),
        "kg": kg_spec,
    }

    async def run() -> dict:
        # Sync graph nodes run in the loop's default executor (6 threads on 2 cores): give it one thread
        # per concurrent question, so C questions really are in flight (and their model calls batch).
        from concurrent.futures import ThreadPoolExecutor

        asyncio.get_running_loop().set_default_executor(
            ThreadPoolExecutor(max_workers=args.concurrency + 4, thread_name_prefix="kg-agents-eval")
        )
        return await runner.run_eval(
            ds.questions,
            args.out,
            method=args.method,
            dataset=dataset,
            build_graph=build,
            kg_for=ds.kg_for,
            concurrency=args.concurrency,
            context=context,
            run_info=info,
            progress=not args.no_progress,
            max_endpoint_failures=args.max_endpoint_failures,
            match=args.match,
        )

    summary = asyncio.run(run())
    print(runner.markdown_table([summary]))
    print(f"wrote {Path(args.out) / runner.SUMMARY}, {runner.PREDICTIONS}, {runner.REPORT}, {runner.CHART}")
    return 0


def run_grid(args: argparse.Namespace) -> int:
    """Every run of ``args.grid`` into ``args.out``: complete ones skipped, the others run (or resumed)
    by ``kg-agents eval`` in this process, one after the other; each finished one gets ``grid.json``."""
    import json
    import os

    from kg_agents import __version__
    from kg_agents.cli.commands import build_parser
    from kg_agents.eval.grid import hardware, load_grid, run_complete, source_commit
    from kg_agents.eval.report import GRID_RECORD
    from kg_agents.files import atomic_write

    given = [f"--{k.replace('_', '-')}" for k in _NOT_WITH_GRID if getattr(args, k, None)]
    if given:
        raise ConfigError(f"--grid takes its settings from the file; drop {', '.join(given)}")
    if not args.out:
        raise ConfigError("eval --grid needs --out DIR (the folder its runs go to)")
    grid = load_grid(args.grid)

    def shown(path: str) -> str:
        rel = os.path.relpath(path)
        return path if rel.startswith("..") else rel

    record = {"grid": shown(args.grid), "out": shown(args.out), "version": __version__}
    machine = {"hardware": hardware(), "commit": source_commit()}
    for i, run in enumerate(grid.runs, 1):
        folder = run.folder(args.out)
        argv = run.eval_argv(args.out) + (["--no-progress"] if args.no_progress else [])
        if run_complete(run, folder):
            print(f"[{i}/{len(grid.runs)}] {folder}: complete, skipped")
        else:
            print(f"[{i}/{len(grid.runs)}] kg-agents {shlex.join(argv)}", flush=True)
            cmd_eval(build_parser().parse_args(argv))
        if not (folder / GRID_RECORD).is_file():
            # the grid that first finds the run complete records itself (the run was made on this machine
            # or copied here: hardware and commit are this process's)
            data = {
                **record,
                **machine,
                "command": f"kg-agents eval --grid {record['grid']} --out {record['out']}",
            }
            atomic_write(folder / GRID_RECORD, json.dumps(data, indent=2, sort_keys=True) + "\n")
    print(f"{len(grid.runs)} runs in {args.out}; their tables: kg-agents report {args.out}")
    return 0


def add_eval_parser(
    add_parser: Callable[..., argparse.ArgumentParser],
    method_args: Callable[..., None],
) -> None:
    """The ``eval`` subcommand (``add_parser(name, help=...)`` adds a subparser; ``method_args`` adds
    ``--method``, ``--model``, ``--max-tokens`` and ``--set``)."""
    e = add_parser("eval", help="evaluate a method on a dataset, a --grid of runs, or --compare runs")
    method_args(e, default_method=None)
    e.add_argument("--dataset", help="metaqa-{1,2,3}hop, pathquestion-{pq,pql}-{2,3}h, webqsp-sample")
    e.add_argument("--kg", help="the KG for --questions (or to override the dataset's)")
    e.add_argument("--questions", help="a MetaQA-format or JSONL questions file")
    e.add_argument(
        "--split",
        default=None,
        choices=["dev", "train", "validation"],
        help="default: validation (the seeded 20%%); dev for webqsp-sample and --questions",
    )
    e.add_argument("--limit", type=int, default=None)
    e.add_argument("--seed", type=int, default=0)
    e.add_argument("--concurrency", type=int, default=1)
    e.add_argument(
        "--max-endpoint-failures",
        type=int,
        default=5,
        metavar="N",
        help="stop the run after N questions in a row whose KG endpoint failed (default: 5)",
    )
    e.add_argument("--out", help="the run directory (a rerun resumes it)")
    e.add_argument("--no-progress", action="store_true", help="no progress bar")
    e.add_argument(
        "--match",
        choices=("exact", "contains"),
        default="exact",
        help="answer matching: exact after normalisation (default), or contains (the papers' scripts)",
    )
    e.add_argument(
        "--grid",
        metavar="FILE",
        help="run every combination of a grid file (TOML or YAML) into --out, resumably (see docs/eval.md)",
    )
    e.add_argument("--compare", nargs="+", metavar="DIR", help="compare finished runs instead")
    e.add_argument("--chart", default="compare.png", help="chart file for --compare (default: compare.png)")
    e.set_defaults(func=cmd_eval)
