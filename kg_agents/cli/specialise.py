"""``kg-agents specialise KG --out DIR``: the command line of :mod:`kg_agents.specialise`."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kg_agents.errors import ConfigError
from kg_agents.specialise import BUDGETS, PACK_METHODS, STAGES, Budget, budget_with, specialise
from kg_agents.synth.cli import BALANCE_HELP
from kg_agents.synth.shares import BALANCES

__all__ = ["add_specialise_parser", "cmd_specialise"]


def add_specialise_parser(add_parser: Callable[..., Any]) -> None:
    """``kg-agents specialise KG --out DIR``: the parser, given the CLI's ``add_parser``."""
    s = add_parser(
        "specialise", help="build a KG pack for a graph from the graph alone (every method trained)"
    )
    s.add_argument("kg", help="bundled name or triples file (TSV, s|r|o, N-Triples, Turtle)")
    s.add_argument("--out", required=True, metavar="DIR", help="the pack folder (a rerun resumes it)")
    s.add_argument(
        "--budget", default="default", choices=list(BUDGETS), help="how much to do (default: default)"
    )
    s.add_argument(
        "--stages",
        default=None,
        help=f"comma-separated: {', '.join(STAGES)}, or train (the four trainers); default: all",
    )
    s.add_argument("--hops", default="1,2,3", help="hop counts synthesised and learnt (default: 1,2,3)")
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--device", default="cpu", choices=("cpu", "cuda"), help="where the trainers run")
    s.add_argument(
        "--paraphrase", action="store_true", help="rephrase each relation path's form with --model"
    )
    s.add_argument("--model", default=None, help="the paraphrasing chat model (default: the embedded one)")
    s.add_argument("--examples", metavar="FILE", help="a few real questions as style examples (optional)")
    noise_help = "share of synthesised chains of 2+ hops that name one inner hop by a common word (0-1)"
    s.add_argument("--relation-noise", type=float, default=0.0, metavar="SHARE", help=noise_help)
    s.add_argument("--balance", default="path", choices=BALANCES, help=BALANCE_HELP)
    s.add_argument(
        "--questions",
        metavar="FILE",
        help="your own questions to evaluate the pack on, each method also with no pack (optional)",
    )
    s.add_argument("--methods", default=",".join(PACK_METHODS), help="methods the evaluate stage runs")
    s.add_argument(
        "--eval-questions",
        type=int,
        default=None,
        metavar="N",
        help="questions a method in the evaluate stage, of each set (default: the budget's)",
    )
    s.add_argument("--no-register", action="store_true", help="do not register the pack for pack=auto")
    s.add_argument("--json", action="store_true", help="print the manifest as JSON at the end")
    s.set_defaults(func=cmd_specialise)


def cmd_specialise(args: Any) -> int:
    try:
        hops = [int(h) for h in str(args.hops).split(",") if h.strip()]
    except ValueError as exc:
        raise ConfigError(f"--hops must be comma-separated integers, got {args.hops!r}") from exc
    budget: str | Budget = args.budget
    if args.eval_questions is not None:
        if args.eval_questions < 1:
            raise ConfigError(f"--eval-questions must be at least 1, got {args.eval_questions}")
        budget = budget_with(args.budget, eval_questions=args.eval_questions)
    data = specialise(
        args.kg,
        args.out,
        budget=budget,
        stages=args.stages,
        seed=args.seed,
        hops=hops,
        device=args.device,
        paraphrase=args.paraphrase,
        model=args.model,
        examples=args.examples,
        questions=args.questions,
        methods=[m.strip() for m in args.methods.split(",") if m.strip()],
        relation_noise=args.relation_noise,
        balance=args.balance,
        register=not args.no_register,
    )
    if args.json:
        print(json.dumps(data, indent=1, sort_keys=True, default=str))
    else:
        print(f"wrote {Path(args.out) / 'pack.json'}")
    return 0
