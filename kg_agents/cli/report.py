"""``kg-agents report DIR...``: the tables of many runs (markdown, and a chart), by dataset.

Examples::

    kg-agents report runs/grid                       # the page on stdout
    kg-agents report docs/results/runs --out docs/results.md --chart docs/results/chart.png
    kg-agents report docs/results/runs --out docs/results.md --chart docs/results/chart.png --check

``--check`` writes nothing: it exits 1 when ``--out`` differs from what the report would write.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from collections.abc import Callable
from pathlib import Path

from kg_agents.errors import ConfigError

__all__ = ["add_report_parser", "cmd_report", "report_command"]


def report_command(dirs: list[str], out: str | None, chart: str | None) -> str:
    """The command line that writes this page (named in its header; ``--check`` left out)."""
    argv = ["report", *dirs]
    if out:
        argv += ["--out", out]
    if chart:
        argv += ["--chart", chart]
    return "kg-agents " + shlex.join(argv)


def cmd_report(args: argparse.Namespace) -> int:
    from kg_agents.eval.report import draw_report_chart, find_runs, render_page
    from kg_agents.files import atomic_write

    if args.check and not args.out:
        raise ConfigError("report --check needs --out FILE (the page to check)")
    runs = find_runs(args.dirs)
    chart_link = None
    if args.chart:
        base = Path(args.out).parent if args.out else Path.cwd()
        chart_link = Path(os.path.relpath(args.chart, base)).as_posix()
    page = render_page(runs, command=report_command(args.dirs, args.out, args.chart), chart=chart_link)
    if args.check:
        out = Path(args.out)
        current = out.read_text(encoding="utf-8") if out.is_file() else None
        if current == page:
            print(f"{out} is up to date ({len(runs)} runs)")
            return 0
        print(
            f"{out} differs from what the report writes; run: "
            f"{report_command(args.dirs, args.out, args.chart)}",
            file=sys.stderr,
        )
        return 1
    if args.out:
        atomic_write(args.out, page)
        print(f"wrote {args.out} ({len(runs)} runs)")
    else:
        sys.stdout.write(page)
    if args.chart:
        draw_report_chart(runs, args.chart)
        print(f"chart: {args.chart}", file=sys.stderr if not args.out else sys.stdout)
    return 0


def add_report_parser(add_parser: Callable[..., argparse.ArgumentParser]) -> None:
    """The ``report`` subcommand (``add_parser(name, help=...)`` adds a subparser)."""
    r = add_parser("report", help="tables of many runs by dataset (markdown and a chart)")
    r.add_argument("dirs", nargs="+", metavar="DIR", help="run folders, or folders holding them")
    r.add_argument("--out", metavar="FILE.md", help="write the page here (default: print it)")
    r.add_argument("--chart", metavar="FILE.png", help="also draw Hits@1 of every row here")
    r.add_argument(
        "--check", action="store_true", help="write nothing; exit 1 when --out differs from the page"
    )
    r.set_defaults(func=cmd_report)
