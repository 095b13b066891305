"""``kg-agents synth KG --out DIR``: questions from a knowledge graph alone, written to a folder.

Examples::

    kg-agents synth pq-2h --out runs/synth-pq --n 500
    kg-agents synth my_graph.tsv --out runs/synth --n 2000 --hops 1,2 --kinds chain conjunction constraint
    kg-agents synth my_graph.ttl --out runs/synth --paraphrase --model local --examples my_questions.txt

It prints its progress on stderr, then a short summary: how many questions per split, kind and hop
count, the filters that left questions out, the seconds it took, and the files it wrote
(``train.jsonl``, ``validation.jsonl``, ``stats.json``, each written atomically at the end).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any, TextIO

from kg_agents.errors import ConfigError
from kg_agents.synth.shares import BALANCES

#: ``--balance``'s help, for ``kg-agents synth`` and ``kg-agents specialise``.
BALANCE_HELP = "share each hop count's chains by relation path (default) or by direction pattern, then path"

__all__ = ["add_synth_arguments", "parse_int_list", "summary_lines", "synth_command"]


def parse_int_list(text: str, what: str) -> list[int]:
    """``"1,2,3"`` as ``[1, 2, 3]``; ConfigError naming ``what`` otherwise."""
    try:
        values = [int(p) for p in text.split(",") if p.strip()]
    except ValueError as exc:
        raise ConfigError(f"{what} must be comma-separated integers, got {text!r}") from exc
    if not values:
        raise ConfigError(f"{what} must name at least one value, got {text!r}")
    return values


def add_synth_arguments(p: argparse.ArgumentParser) -> None:
    """The ``synth`` command's arguments."""
    p.add_argument("kg", metavar="KG", help="bundled name (pq-2h, metaqa, ...), triples file or SPARQL URL")
    p.add_argument("--out", required=True, metavar="DIR", help="the folder for train/validation.jsonl")
    p.add_argument("--n", type=int, default=1000, help="how many questions (default: 1000)")
    p.add_argument("--hops", default="1,2,3", help="the chains' hop counts, comma-separated (default: 1,2,3)")
    p.add_argument(
        "--kinds",
        nargs="+",
        default=["chain"],
        metavar="KIND",
        help="question kinds: chain, conjunction, constraint (space- or comma-separated; default: chain)",
    )
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--max-answers", type=int, default=20, help="most answers per question (default: 20)")
    p.add_argument(
        "--validation-fraction", type=float, default=0.2, help="share for validation (default: 0.2)"
    )
    p.add_argument(
        "--paraphrase",
        action="store_true",
        help="rewrite each relation path's question form with a chat model (one call per path)",
    )
    p.add_argument(
        "--model", default="local", help="the paraphrasing model: local (default) or openai:<model>"
    )
    p.add_argument(
        "--examples", metavar="FILE", help="a few of your questions (one a line, or JSONL) as style"
    )
    noise_help = "share of chains of 2+ hops that name one inner hop by a common word, not its relation (0-1)"
    p.add_argument("--relation-noise", type=float, default=0.0, metavar="SHARE", help=noise_help)
    p.add_argument("--balance", default="path", choices=BALANCES, help=BALANCE_HELP)


class _Progress:
    """Progress on a stream: one line per stage (redrawn in place on a terminal)."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.stage: str | None = None
        self.tty = bool(getattr(stream, "isatty", lambda: False)())

    def __call__(self, stage: str, done: int, total: int) -> None:
        line = f"synth: {stage} {done}/{total}"
        if self.tty:
            end = "\n" if done >= total else ""
            self.stream.write(("\n" if stage != self.stage and self.stage else "\r") + line + end)
        elif stage != self.stage or done >= total:
            self.stream.write(line + "\n")
        self.stream.flush()
        self.stage = stage


def summary_lines(stats: dict[str, Any], files: dict[str, Any]) -> list[str]:
    """The summary ``kg-agents synth`` prints from a run's stats and the files it wrote."""
    secs = stats.get("seconds", {})
    kinds = stats.get("per_kind", {})
    hops = ", ".join(f"{h} hop{'s' if h != '1' else ''} {c}" for h, c in stats.get("per_hop", {}).items())
    lines = [
        f"synthesised {stats['n']} questions from {stats.get('kg')} in {secs.get('total', 0.0):.1f} s: "
        f"{stats['train']} train, {stats['validation']} validation",
        f"  chains {kinds.get('chain', 0)} ({hops})"
        + (f"; conjunctions {kinds['conjunction']}" if "conjunction" in kinds else "")
        + (f"; constraints {kinds['constraint']}" if "constraint" in kinds else ""),
    ]
    paths = stats.get("relation_paths", {})
    lines.append(
        f"  relation paths: {paths.get('found', 0)} found by {paths.get('walks', 0)} walks, "
        f"{paths.get('rare', 0)} of them from fewer than {stats.get('settings', {}).get('min_topics', 2)} "
        f"topics left out; {len(stats.get('per_relation_path', {}))} used"
    )
    filtered = {k: v for k, v in stats.get("filters", {}).items() if v}
    lines.append("  left out: " + (", ".join(f"{k} {v}" for k, v in filtered.items()) or "none"))
    short = {k: v for k, v in stats.get("shortfall", {}).items() if v > 0}
    if short:
        lines.append(
            "  fewer than asked (the graph had no more that pass): "
            + ", ".join(f"{k} {v}" for k, v in short.items())
        )
    para = stats.get("paraphrase") or {}
    if para:
        lines.append(
            f"  paraphrase: {para.get('calls', 0)} model calls, {para.get('kept', 0)} forms kept for "
            f"{para.get('paths_paraphrased', 0)} relation paths, rejected {para.get('rejected', {})}"
        )
    lines.append("wrote " + ", ".join(str(files[k]) for k in ("train", "validation", "stats")))
    return lines


def synth_command(args: argparse.Namespace, *, stderr: TextIO | None = None) -> int:
    """Run ``kg-agents synth`` for parsed ``args``; return the exit status."""
    from kg_agents.kg import open_kg
    from kg_agents.synth.generate import synthesise
    from kg_agents.synth.phrase import read_examples
    from kg_agents.synth.questions import write_questions

    hops = parse_int_list(args.hops, "--hops")
    given = [args.kinds] if isinstance(args.kinds, str) else list(args.kinds)
    kinds = [k.strip() for text in given for k in text.split(",") if k.strip()]
    examples = read_examples(args.examples) if args.examples else None
    if args.examples and not args.paraphrase:
        raise ConfigError("--examples are style examples for --paraphrase; add --paraphrase")
    llm = None
    if args.paraphrase:
        from kg_agents.llm import resolve_chat_model

        llm = resolve_chat_model(args.model, check=args.model.startswith("openai:"), max_tokens=160)
    kg = open_kg(args.kg)
    result = synthesise(
        kg,
        n=args.n,
        hops=hops,
        kinds=kinds,
        seed=args.seed,
        max_answers=args.max_answers,
        llm=llm,
        paraphrase=args.paraphrase,
        examples=examples,
        relation_noise=args.relation_noise,
        balance=args.balance,
        validation_fraction=args.validation_fraction,
        progress=_Progress(stderr or sys.stderr),
    )
    files = write_questions(result, args.out)
    for line in summary_lines(result.stats, files):
        print(line)
    return 0
